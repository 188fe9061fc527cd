package delivery

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/jwk"
)

func TestDiscoveryAndKeys(t *testing.T) {
	h := newHarness(t, nil)
	a := h.do("GET", delivery.DiscoveryPath, nil, nil)
	d := decodeAs[delivery.Discovery](t, a)
	if d.InstanceID == "" || d.Issuer != h.srv.URL || d.JWKSURI != h.srv.URL+delivery.JWKSPath ||
		d.Gateway.URL != h.srv.URL+delivery.GatewayPath || len(d.Gateway.ProtocolVersions) != 1 {
		t.Errorf("discovery = %+v", d)
	}
	if a.header.Get(dpop.NonceHeader) == "" {
		t.Error("no DPoP-Nonce on the discovery answer")
	}
	k := h.do("GET", delivery.JWKSPath, nil, nil)
	if got := k.header.Get("Cache-Control"); got != "public, max-age=300" {
		t.Errorf("Cache-Control = %q", got)
	}
	set, err := jwk.ParseKeySet(k.body)
	if err != nil || set.Len() != 1 || set.Keys()[0].Algorithm() != jwk.EdDSA {
		t.Fatalf("key set %s: %v", k.body, err)
	}
	var raw struct {
		Keys []map[string]string `json:"keys"`
	}
	_ = json.Unmarshal(k.body, &raw)
	if raw.Keys[0]["kty"] != "OKP" || raw.Keys[0]["crv"] != "Ed25519" || raw.Keys[0]["kid"] == "" {
		t.Errorf("key = %v", raw.Keys[0])
	}
}

func TestCreateToken(t *testing.T) {
	h := newHarness(t, nil)
	push := h.inst
	push.ID, push.Name, push.Delivery = "push-1", "pusher", "push"
	if _, err := h.runs.CreateInstance(t.Context(), push, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	admin := map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant}
	tests := []struct {
		name    string
		agent   string
		body    any
		headers map[string]string
		status  int
		code    string
	}{
		{"issued", h.inst.ID, delivery.TokenCreate{}, admin, http.StatusCreated, ""},
		{"bound", h.inst.ID, delivery.TokenCreate{DPoPJKT: strings.Repeat("a", 43)}, admin, http.StatusCreated, ""},
		{"bad thumbprint", h.inst.ID, delivery.TokenCreate{DPoPJKT: "short"}, admin, http.StatusBadRequest, delivery.CodeValidationFailed},
		{"no credentials", h.inst.ID, delivery.TokenCreate{}, map[string]string{"Authorization": "Bearer wrong", "X-Tenant-ID": testTenant}, http.StatusUnauthorized, delivery.CodeUnauthenticated},
		{"no tenant", h.inst.ID, delivery.TokenCreate{}, map[string]string{"Authorization": "Bearer " + testAdmin}, http.StatusBadRequest, delivery.CodeValidationFailed},
		{"another tenant", h.inst.ID, delivery.TokenCreate{}, map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": "other"}, http.StatusNotFound, delivery.CodeNotFound},
		{"push instance", push.ID, delivery.TokenCreate{}, admin, http.StatusNotFound, delivery.CodeNotFound},
		{"unknown instance", "nope", delivery.TokenCreate{}, admin, http.StatusNotFound, delivery.CodeNotFound},
		{"malformed", h.inst.ID, []byte(`{"dpop_jkt":`), admin, http.StatusBadRequest, delivery.CodeValidationFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := h.do("POST", delivery.TokensPath(tc.agent), tc.body, tc.headers)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
			}
			if tc.code != "" {
				if p := a.problem(t); p.Code != tc.code {
					t.Errorf("code %q, want %q", p.Code, tc.code)
				}
				return
			}
			g := decodeAs[delivery.TokenGrant](t, a)
			if !strings.HasPrefix(g.Token, APITokenPrefix) || g.AgentID != tc.agent || g.ID == "" {
				t.Errorf("grant = %v", g)
			}
			if strings.Contains(g.String(), g.Token) {
				t.Error("the grant prints its token")
			}
		})
	}
}

func TestAgentAuthentication(t *testing.T) {
	h := newHarness(t, nil)
	bound := h.agent(h.inst, true)
	unbound := h.agent(h.inst, false)
	path := delivery.TriggerersPath(h.inst.ID)
	url := h.srv.URL + path
	proof := func(k *dpop.Key, c dpop.Claims) string {
		t.Helper()
		if c.Method == "" {
			c.Method = "GET"
		}
		if c.URL == "" {
			c.URL = url
		}
		if c.AccessToken == "" {
			c.AccessToken = bound.token
		}
		if c.IssuedAt.IsZero() {
			c.IssuedAt = h.clock.Now()
		}
		p, err := k.Proof(c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	nonce := h.svc.Nonce()
	otherKey, _ := dpop.GenerateKey()
	replayed := proof(bound.key, dpop.Claims{Nonce: nonce})
	if a := h.do("GET", path, nil, map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: replayed}); a.status != http.StatusOK {
		t.Fatalf("first use of a proof: %d %s", a.status, a.body)
	}
	tests := []struct {
		name    string
		headers map[string]string
		status  int
		code    string
		reason  string // of a refused proof with a good token
	}{
		{"no credentials", nil, http.StatusUnauthorized, delivery.CodeUnauthenticated, ""},
		{"unknown token", map[string]string{"Authorization": "Bearer nvat_unknown"}, http.StatusUnauthorized, delivery.CodeUnauthenticated, ""},
		{"unbound as bearer", map[string]string{"Authorization": "Bearer " + unbound.token}, http.StatusOK, "", ""},
		{"bound as bearer", map[string]string{"Authorization": "Bearer " + bound.token}, http.StatusUnauthorized, delivery.CodeUnauthenticated, ""},
		{"bound without proof", map[string]string{"Authorization": "DPoP " + bound.token}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"proof without nonce", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{})}, http.StatusUnauthorized, delivery.CodeUseDPoPNonce, ""},
		{"proof with a forged nonce", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{Nonce: "AAAA"})}, http.StatusUnauthorized, delivery.CodeUseDPoPNonce, ""},
		{"good proof", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{Nonce: nonce})}, http.StatusOK, "", ""},
		{"replayed proof", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: replayed}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"proof of another key", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(otherKey, dpop.Claims{Nonce: nonce})}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"proof of another method", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{Method: "POST", Nonce: nonce})}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"proof of another URL", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{URL: h.srv.URL + "/elsewhere", Nonce: nonce})}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"proof of another token", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{AccessToken: "other", Nonce: nonce})}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
		{"stale proof", map[string]string{"Authorization": "DPoP " + bound.token, dpop.Header: proof(bound.key, dpop.Claims{Nonce: nonce, IssuedAt: h.clock.Now().Add(-10 * DefaultProofWindow)})}, http.StatusUnauthorized, delivery.CodeUnauthenticated, delivery.InvalidDPoPProof},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := h.do("GET", path, nil, tc.headers)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
			}
			if a.header.Get(dpop.NonceHeader) == "" {
				t.Error("no DPoP-Nonce")
			}
			if tc.code == "" {
				if got := decodeAs[delivery.AgentTriggerers](t, a); got.PermissionVersion != h.inst.Version || len(got.Subjects) != 1 || got.Subjects[0] != "*" {
					t.Errorf("triggerers = %+v", got)
				}
				return
			}
			if p := a.problem(t); p.Code != tc.code || p.Reason != tc.reason {
				t.Errorf("code %q (%q), want %q (%q) (%s)", p.Code, p.Reason, tc.code, tc.reason, p.Detail)
			}
			if proofErr := strings.Contains(a.header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`); proofErr != (tc.reason != "") {
				t.Errorf("WWW-Authenticate = %q", a.header.Get("WWW-Authenticate"))
			}
			if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "DPoP") {
				t.Errorf("WWW-Authenticate = %q", a.header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("another agent's path", func(t *testing.T) {
		a := unbound.call("GET", delivery.TriggerersPath(h.other.ID), nil, "", "")
		if a.status != http.StatusNotFound {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
	})
	t.Run("nonce retry", func(t *testing.T) {
		fresh := h.agent(h.inst, true) // knows no nonce: the first try is refused, the retry passes
		if a := fresh.call("GET", path, nil, "", ""); a.status != http.StatusOK {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		a := h.agent(h.inst, false)
		rec, err := h.st.FindAPIToken(t.Context(), tokenHash(a.token))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.st.RevokeAPIToken(t.Context(), rec.AgentID, rec.ID, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if ans := a.call("GET", path, nil, "", ""); ans.status != http.StatusUnauthorized {
			t.Fatalf("status %d", ans.status)
		}
	})
}

// TestCreateTokenRepeated: a repeated Idempotency-Key leaves one working
// token, and the answer kept for it holds none.
func TestCreateTokenRepeated(t *testing.T) {
	h := newHarness(t, nil)
	key := newKey()
	headers := map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant, delivery.IdempotencyKeyHeader: key}
	create := func(body any) answer { return h.do("POST", delivery.TokensPath(h.inst.ID), body, headers) }
	first := decodeAs[delivery.TokenGrant](t, create(delivery.TokenCreate{Name: "laptop"}))
	again := decodeAs[delivery.TokenGrant](t, create(delivery.TokenCreate{Name: "laptop"}))
	if first.Token == "" || again.Token == "" || first.Token == again.Token || first.ID == again.ID {
		t.Fatalf("first %v, again %v", first, again)
	}
	path := delivery.TriggerersPath(h.inst.ID)
	if a := h.do("GET", path, nil, map[string]string{"Authorization": "Bearer " + first.Token}); a.status != http.StatusUnauthorized {
		t.Errorf("the first token still works: %d", a.status)
	}
	if a := h.do("GET", path, nil, map[string]string{"Authorization": "Bearer " + again.Token}); a.status != http.StatusOK {
		t.Errorf("the second token: %d", a.status)
	}
	for _, r := range h.st.requests {
		if strings.Contains(string(r.Body), APITokenPrefix) {
			t.Error("a token is kept in an idempotency record")
		}
	}
	if a := create(delivery.TokenCreate{Name: "other"}); a.status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d", a.status)
	}
	bad := map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant, delivery.IdempotencyKeyHeader: newKey()}
	if a := h.do("POST", delivery.TokensPath("nope"), delivery.TokenCreate{}, bad); a.status != http.StatusNotFound {
		t.Fatalf("unknown agent: %d", a.status)
	}
	if len(h.st.requests) != 1 {
		t.Errorf("%d keys kept; a refused request keeps none", len(h.st.requests))
	}
}

func TestAgentNoLongerPulls(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	inst := h.inst
	inst.Delivery = gateway.DeliveryPush
	if _, err := h.runs.UpdateInstance(t.Context(), inst, inst.Version, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	ans := a.call("GET", delivery.TriggerersPath(h.inst.ID), nil, "", "")
	if ans.status != http.StatusForbidden || ans.problem(t).Code != delivery.CodeForbidden {
		t.Fatalf("status %d %s", ans.status, ans.body)
	}
}

// TestStoreFailure: a store's failure is a 500 that names a correlation
// id and nothing of the failure.
func TestStoreFailure(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	h.st.mu.Lock()
	h.st.failHead = errors.New("disk on fire at /var/lib/novaos")
	h.st.mu.Unlock()
	ans := a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "alpha"), nil, "", "")
	p := ans.problem(t)
	if ans.status != http.StatusInternalServerError || p.Code != delivery.CodeInternal || p.CorrelationID == "" ||
		strings.Contains(string(ans.body), "fire") {
		t.Fatalf("status %d %s", ans.status, ans.body)
	}
}

// TestRewindConsumer: an operator sets a consumer back and its events
// come again; an agent, another tenant, an unknown consumer or a seq
// beyond the stream are refused.
func TestRewindConsumer(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.poll("main") // opens the consumer
	for range 3 {
		h.trigger(h.inst, "hello")
	}
	page := a.poll("main")
	if len(page.Events) != 3 {
		t.Fatalf("%d events", len(page.Events))
	}
	if ans := a.ack("main", page.Events[2].Seq); ans.status != http.StatusOK {
		t.Fatalf("ack: %d", ans.status)
	}
	admin := map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant}
	rewind := func(agentID, consumer string, seq int64, headers map[string]string) answer {
		return h.do("POST", delivery.ConsumerRewindPath(agentID, consumer), delivery.ConsumerRewind{AckedSeq: seq}, headers)
	}
	for _, tc := range []struct {
		name     string
		agent    string
		consumer string
		seq      int64
		headers  map[string]string
		status   int
	}{
		{"an agent's own token", h.inst.ID, "main", 0, map[string]string{"Authorization": "Bearer " + a.token}, http.StatusUnauthorized},
		{"another tenant", h.inst.ID, "main", 0, map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": "other"}, http.StatusNotFound},
		{"an unknown consumer", h.inst.ID, "nobody", 0, admin, http.StatusNotFound},
		{"an unknown agent", "nope", "main", 0, admin, http.StatusNotFound},
		{"beyond the stream", h.inst.ID, "main", page.Events[2].Seq + 1, admin, http.StatusBadRequest},
		{"negative", h.inst.ID, "main", -1, admin, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ans := rewind(tc.agent, tc.consumer, tc.seq, tc.headers); ans.status != tc.status {
				t.Fatalf("status %d, want %d: %s", ans.status, tc.status, ans.body)
			}
		})
	}
	ans := rewind(h.inst.ID, "main", page.Events[0].Seq, admin)
	st := decodeAs[delivery.ConsumerState](t, ans)
	if st.AckedSeq != page.Events[0].Seq || st.HeadSeq != page.Events[2].Seq {
		t.Fatalf("state after the rewind %+v", st)
	}
	again := a.poll("main")
	if len(again.Events) != 2 || again.Events[0].ID != page.Events[1].ID || again.Events[0].InvocationToken == page.Events[1].InvocationToken {
		t.Fatalf("after the rewind %d events; want the last two again, with fresh tokens", len(again.Events))
	}
}
