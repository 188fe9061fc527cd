package delivery_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/postgres"
)

// TestProofReplayAcrossPostgresReplicas: two replicas on one PostgreSQL
// database behind one public URL, with one nonce key as replicas sharing
// the sealing key have. A proof one accepted is refused by the other as
// a replay is by the first: 401 unauthenticated, reason
// invalid_dpop_proof. Skipped without NOVAOS_TEST_POSTGRES_URL.
func TestProofReplayAcrossPostgresReplicas(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	open := func() *store.Stores {
		db, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Stores()
	}
	// The public URL is the first replica's server, which a balancer
	// would be.
	public := httptest.NewUnstartedServer(nil)
	base := "http://" + public.Listener.Addr().String()
	serve := func(srv *httptest.Server, st *store.Stores) {
		t.Helper()
		ring, err := auth.Open("", auth.Options{Issuer: base, Algorithm: auth.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := deliverysvc.Mount(st, deliverysvc.Deps{Keys: ring, AdminToken: secret.New(benchAdmin), BaseURL: base},
			&deliverysvc.Options{NonceKey: []byte("the key every replica derives from the sealing key")})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		for _, rt := range svc.Routes() {
			mux.Handle(rt.Pattern, rt.Handler)
		}
		srv.Config.Handler = mux
		srv.Start()
		t.Cleanup(srv.Close)
	}
	stA, stB := open(), open()
	if !stA.Shared {
		t.Fatal("a PostgreSQL store is not shared")
	}
	second := httptest.NewUnstartedServer(nil)
	serve(public, stA)
	serve(second, stB)

	inst, err := stA.Gateway.CreateInstance(ctx, gateway.Instance{ID: a2a.NewID(), TenantID: "bench", Name: "replicated",
		Delivery: gateway.DeliveryPull}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	token := createAgentToken(t, base, inst.ID, key)
	path := delivery.TriggerersPath(inst.ID)
	type answer struct {
		status int
		auth   string
		body   []byte
	}
	send := func(server, proof string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", server+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "DPoP "+token)
		req.Header.Set(dpop.Header, proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body}
	}
	var nonce string
	newProof := func() string {
		t.Helper()
		p, err := key.Proof(dpop.Claims{Method: "GET", URL: base + path, AccessToken: token, Nonce: nonce, IssuedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A proof without a nonce is answered with the one to use.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+delivery.DiscoveryPath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if nonce = resp.Header.Get(dpop.NonceHeader); nonce == "" {
		t.Fatal("no DPoP-Nonce")
	}

	p := newProof()
	if a := send(base, p); a.status != http.StatusOK {
		t.Fatalf("first use: %d %s", a.status, a.body)
	}
	replayed := send(base, p)
	if replayed.status != http.StatusUnauthorized || !bytes.Contains(replayed.body, []byte(`"code":"unauthenticated"`)) ||
		!bytes.Contains(replayed.body, []byte(`"reason":"invalid_dpop_proof"`)) {
		t.Fatalf("replay on the same replica: %d %s", replayed.status, replayed.body)
	}
	if a := send(second.URL, p); a.status != replayed.status || !bytes.Equal(a.body, replayed.body) || a.auth != replayed.auth {
		t.Errorf("replay on the other replica: %d %s (%q), want %d %s (%q)", a.status, a.body, a.auth, replayed.status, replayed.body, replayed.auth)
	}
	// A proof the second replica accepted first is refused by the first,
	// whose memory never saw it.
	q := newProof()
	if a := send(second.URL, q); a.status != http.StatusOK {
		t.Fatalf("a new proof on the other replica: %d %s", a.status, a.body)
	}
	if a := send(base, q); a.status != replayed.status || !bytes.Equal(a.body, replayed.body) || a.auth != replayed.auth {
		t.Errorf("its replay on the first: %d %s (%q), want %d %s (%q)", a.status, a.body, a.auth, replayed.status, replayed.body, replayed.auth)
	}
}
