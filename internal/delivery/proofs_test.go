package delivery

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/internal/auth"
)

func TestProofIDs(t *testing.T) {
	now := h0()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	t.Run("bounded", func(t *testing.T) {
		p := newProofIDs(3)
		for _, id := range []string{"a", "b", "c", "d"} {
			if !p.first(id, now, at(time.Minute)) {
				t.Fatalf("%s refused", id)
			}
		}
		if p.order.Len() != 3 {
			t.Errorf("%d ids kept, want 3", p.order.Len())
		}
		if p.first("d", now, at(time.Minute)) {
			t.Error("d accepted twice")
		}
		if !p.first("d", at(time.Minute), at(2*time.Minute)) {
			t.Error("d refused at its time")
		}
	})
	t.Run("past their time", func(t *testing.T) {
		// Ids come in about the order of their times, not exactly: one
		// past its time behind a later one is found by its lookup, and
		// recorded again once.
		p := newProofIDs(10)
		p.first("a", now, at(10*time.Second))
		p.first("b", now, at(time.Second))
		if !p.first("b", at(2*time.Second), at(20*time.Second)) {
			t.Fatal("b refused past its time")
		}
		if !p.first("c", at(11*time.Second), at(30*time.Second)) {
			t.Fatal("c refused")
		}
		if p.first("b", at(12*time.Second), at(30*time.Second)) {
			t.Error("b accepted again before its new time")
		}
		if p.order.Len() != 2 || len(p.byID) != 2 {
			t.Errorf("%d ids in order, %d by id; want 2 and 2", p.order.Len(), len(p.byID))
		}
	})
}

// replica is a second service on a harness's stores, as another
// replica behind the harness's URL: its own server and memory, the
// harness's base URL (the public URL proofs name) and nonce key.
type replica struct {
	svc *Service
	srv *httptest.Server
}

func (h *harness) replica(o Options, shared bool) *replica {
	h.t.Helper()
	ring, err := auth.Open("", auth.Options{Issuer: h.srv.URL, Algorithm: auth.EdDSA, Now: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	o.Now = h.clock.Now
	svc, err := New(Deps{Store: h.st, Runs: h.runs, Keys: ring, BaseURL: h.srv.URL, SharedStore: shared}, &o)
	if err != nil {
		h.t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, rt := range svc.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	srv := httptest.NewServer(mux)
	h.t.Cleanup(srv.Close)
	return &replica{svc: svc, srv: srv}
}

// TestProofReplayAcrossReplicas: on a shared store a proof one replica
// accepted is refused by another as a replay is by the first, and a
// replay within one replica costs no write.
func TestProofReplayAcrossReplicas(t *testing.T) {
	o := Options{NonceKey: []byte("a nonce key both replicas derive")}
	h := newHarnessWith(t, &o, func(d *Deps) { d.SharedStore = true })
	b := h.replica(o, true)
	a := h.agent(h.inst, true)
	path := delivery.TriggerersPath(h.inst.ID)
	send := func(base, proof string) answer {
		t.Helper()
		return h.doAt(base, "GET", path, nil, map[string]string{"Authorization": "DPoP " + a.token, dpop.Header: proof})
	}
	newProof := func() string {
		t.Helper()
		p, err := a.key.Proof(dpop.Claims{Method: "GET", URL: h.srv.URL + path, AccessToken: a.token, Nonce: h.svc.Nonce(),
			IssuedAt: h.clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := h.st.proofWrites()
	p := newProof()
	if ans := send(h.srv.URL, p); ans.status != http.StatusOK {
		t.Fatalf("first use: %d %s", ans.status, ans.body)
	}
	replayed := send(h.srv.URL, p)
	if n := h.st.proofWrites() - before; n != 1 {
		t.Errorf("%d proof writes for a use and its replay here, want 1", n)
	}
	elsewhere := send(b.srv.URL, p)
	want, got := replayed.problem(t), elsewhere.problem(t)
	if replayed.status != http.StatusUnauthorized || want.Code != delivery.CodeUnauthenticated || want.Reason != delivery.InvalidDPoPProof {
		t.Errorf("replay here: %d %+v", replayed.status, want)
	}
	if elsewhere.status != replayed.status || !bytes.Equal(elsewhere.body, replayed.body) ||
		elsewhere.header.Get("WWW-Authenticate") != replayed.header.Get("WWW-Authenticate") {
		t.Errorf("replay on the other replica: %d %+v (%q), want %d %+v (%q)", elsewhere.status, got,
			elsewhere.header.Get("WWW-Authenticate"), replayed.status, want, replayed.header.Get("WWW-Authenticate"))
	}
	// The other replica takes the first's nonces and its own new proofs.
	if ans := send(b.srv.URL, newProof()); ans.status != http.StatusOK {
		t.Errorf("a new proof on the other replica: %d %s", ans.status, ans.body)
	}
}

// TestProofsInMemoryOnly: a store no other process serves from records
// no proof, and the memory still refuses a replay.
func TestProofsInMemoryOnly(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, true)
	path := delivery.TriggerersPath(h.inst.ID)
	for i := range 3 {
		if ans := a.call("GET", path, nil, "", ""); ans.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, ans.status, ans.body)
		}
	}
	p, err := a.key.Proof(dpop.Claims{Method: "GET", URL: h.srv.URL + path, AccessToken: a.token, Nonce: h.svc.Nonce(), IssuedAt: h.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"Authorization": "DPoP " + a.token, dpop.Header: p}
	if ans := h.do("GET", path, nil, headers); ans.status != http.StatusOK {
		t.Fatalf("first use: %d", ans.status)
	}
	if ans := h.do("GET", path, nil, headers); ans.status != http.StatusUnauthorized || ans.problem(t).Reason != delivery.InvalidDPoPProof {
		t.Errorf("replay: %d %s", ans.status, ans.body)
	}
	if n := h.st.proofWrites(); n != 0 {
		t.Errorf("%d proofs recorded in the store", n)
	}
}

// TestSharedProofsPruned: Run drops the shared store's proofs once they
// are too old to be accepted, every ProofWindow, in bounded batches.
func TestSharedProofsPruned(t *testing.T) {
	// A short window, on the harness's clock of whole seconds, which
	// moves only when told: the pruning ticks come often.
	const window = 10 * time.Millisecond
	h := newHarnessWith(t, &Options{ProofWindow: window}, func(d *Deps) { d.SharedStore = true })
	a := h.agent(h.inst, true)
	path := delivery.TriggerersPath(h.inst.ID)
	const requests = 3
	for i := range requests {
		if ans := a.call("GET", path, nil, "", ""); ans.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, ans.status, ans.body)
		}
	}
	// More than a batch of others, past their time too.
	ctx := context.Background()
	for i := range pruneBatch + 5 {
		if _, err := h.st.RecordProof(ctx, []byte("other-"+strconv.Itoa(i)), h.clock.Now(), h.clock.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(window + time.Second)
	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	want := int64(pruneBatch + 5 + requests)
	for h.st.pruned() < want {
		select {
		case <-h.st.prunedProofs:
		case <-deadline.Done():
			t.Fatalf("%d proofs pruned, want %d", h.st.pruned(), want)
		}
	}
	if n := h.st.pruned(); n != want {
		t.Errorf("%d proofs pruned, want %d", n, want)
	}
}
