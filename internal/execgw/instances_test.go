package execgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store"
)

// testSealer is a real sealer on a key file in the test's directory.
func testSealer(t *testing.T) *sealkey.Sealer {
	s, err := sealkey.Open(filepath.Join(t.TempDir(), "seal.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newURLEnv is newEnv with stores, a registry and a sealer, for agents
// by URL and secrets.
func newURLEnv(t *testing.T) (*env, registry.Store) {
	t.Helper()
	reg := registrysvc.NewMemoryStore()
	st := gateway.NewMemoryStore()
	e := &env{t: t, store: st, tokens: &fakeTokens{}}
	e.svc = execgw.Mount(&store.Stores{Gateway: st, Registry: reg},
		execgw.Deps{Tokens: e.tokens, Sealer: testSealer(t), BaseURL: "http://gateway.test"},
		&execgw.Options{URLPolicy: &registry.Policy{AllowLoopback: true}})
	e.serve()
	return e, reg
}

func TestInstances(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	id := e.install("echo-1", "echo", map[string]any{"scopes": []string{"memory:read:*"}, "custom_headers": []string{"x-user-jwt"}})
	var p struct {
		Type   string
		Errors []struct{ Field string }
	}
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		typ    string
	}{
		{"duplicate name", map[string]any{"name": "echo-1", "hosted": "echo"}, 409, gateway.ProblemInstanceExists},
		{"bad name", map[string]any{"name": "Echo One", "hosted": "echo"}, 400, gateway.ProblemInvalidRequest},
		{"no agent", map[string]any{"name": "x"}, 400, gateway.ProblemInvalidRequest},
		{"two agents", map[string]any{"name": "x", "hosted": "echo", "url": "https://example.com"}, 400, gateway.ProblemInvalidRequest},
		{"unknown hosted agent", map[string]any{"name": "x", "hosted": "nope"}, 400, gateway.ProblemInvalidRequest},
		{"bad scope", map[string]any{"name": "x", "hosted": "echo", "scopes": []string{"a b"}}, 400, gateway.ProblemInvalidRequest},
		{"secrets without a sealer", map[string]any{"name": "x", "hosted": "echo", "secrets": map[string]string{"k": "v"}}, 400, gateway.ProblemInvalidRequest},
	} {
		if st := e.do("POST", gateway.InstancesPath, userTok, c.body, &p); st != c.status || p.Type != c.typ {
			t.Errorf("%s: %d %s, want %d %s", c.name, st, p.Type, c.status, c.typ)
		}
	}
	var got gateway.Instance
	if st := e.do("GET", gateway.InstancesPath+"/"+id, userTok, nil, &got); st != 200 || got.Name != "echo-1" || got.TenantID != "acme" || got.Version != 1 {
		t.Fatalf("get: %d %+v", st, got)
	}
	if st := e.do("GET", gateway.InstancesPath+"/"+id, otherTok, nil, nil); st != 404 {
		t.Fatalf("another tenant's instance: %d", st)
	}
	if st := e.do("PATCH", gateway.InstancesPath+"/"+id, userTok, map[string]any{"published": true, "memory": true}, &got); st != 200 || !got.Published || !got.Memory || got.Version != 2 || got.Scopes[0] != "memory:read:*" {
		t.Fatalf("patch: %d %+v", st, got)
	}
	// The published card is public; an unpublished one is not found.
	var card a2a.AgentCard
	if st := e.do("GET", execgw.CardPath("acme", id), "", nil, &card); st != 200 || card.Name != "echo" {
		t.Fatalf("published card: %d %+v", st, card)
	}
	e.do("PATCH", gateway.InstancesPath+"/"+id, userTok, map[string]any{"published": false}, nil)
	if st := e.do("GET", execgw.CardPath("acme", id), "", nil, nil); st != 404 {
		t.Fatalf("unpublished card: %d", st)
	}
	var list struct {
		Instances  []gateway.Instance
		NextCursor string `json:"next_cursor"`
	}
	e.install("echo-2", "echo", nil)
	if st := e.do("GET", gateway.InstancesPath+"?limit=1", userTok, nil, &list); st != 200 || len(list.Instances) != 1 || list.NextCursor != "echo-1" {
		t.Fatalf("list: %d %+v", st, list)
	}
	if st := e.do("GET", gateway.InstancesPath+"?after=echo-1", userTok, nil, &list); st != 200 || len(list.Instances) != 1 || list.Instances[0].Name != "echo-2" {
		t.Fatalf("list after: %d %+v", st, list)
	}
	if st := e.do("GET", gateway.InstancesPath, "t|acme|alice|runs:*", nil, nil); st != 403 {
		t.Fatalf("list without the scope: %d", st)
	}
	if st := e.do("DELETE", gateway.InstancesPath+"/"+id, userTok, nil, nil); st != 204 {
		t.Fatalf("delete: %d", st)
	}
	if st := e.do("GET", gateway.InstancesPath+"/"+id, userTok, nil, &p); st != 404 || p.Type != gateway.ProblemInstanceNotFound {
		t.Fatalf("deleted: %d %s", st, p.Type)
	}
	if st := e.do("PUT", gateway.InstancesPath+"/"+id, userTok, map[string]any{}, nil); st != 405 {
		t.Fatalf("PUT: %d", st)
	}
}

// An agent installed by URL is registered, its secrets are sealed at rest
// and delivered sealed to its recipient key, and a service account's
// custom headers reach it when the instance allows them.
func TestInstanceByURL(t *testing.T) {
	key, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		secret, header string
		pc             agent.PlatformContext
	}
	got := make(chan seen, 1)
	a := agent.New("billing", "1.0.0", &agent.Options{KeyRing: usercontext.StaticKeyRing(key)})
	a.MustRegister(agent.Skill{ID: "bill", Handler: func(c *agent.Context) (agent.Result, error) {
		s, err := c.GetSecret("api_key")
		if err != nil {
			return agent.Result{}, err
		}
		got <- seen{secret: s.Reveal(), header: c.CustomHeaders()["x-user-jwt"], pc: c.Platform()}
		return agent.Result{Output: "billed"}, nil
	}})
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	e, reg := newURLEnv(t)
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "billing", "url": srv.URL,
		"secrets": map[string]string{"api_key": "sk-live-123"}, "custom_headers": []string{"x-user-jwt"}}, &inst); st != 201 {
		t.Fatalf("install: %d", st)
	}
	raw, _ := json.Marshal(inst)
	if strings.Contains(string(raw), "sk-live-123") || len(inst.SecretNames) != 1 || inst.SecretNames[0] != "api_key" || inst.AgentID == "" {
		t.Fatalf("instance %s", raw)
	}
	stored, _ := e.store.GetInstance(context.Background(), "acme", inst.ID)
	if strings.Contains(string(stored.SealedSecrets), "sk-live-123") {
		t.Fatal("the secret is stored in the clear")
	}
	rec, err := reg.Get(context.Background(), inst.AgentID)
	if err != nil || rec.URL != srv.URL {
		t.Fatalf("registry record %+v, %v", rec, err)
	}
	// The agent's owner publishes its recipient key in the registry.
	pub, _ := key.PublicJWK()
	rec.RecipientKeys = []json.RawMessage{pub}
	if err := reg.Update(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	run := e.execute(serviceTok, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "bill it",
		CustomHeaders: map[string]string{"X-User-JWT": "jwt-1", "Authorization": "Bearer forged", "x-other": "dropped"}})
	r := e.waitStatus(run, gateway.StatusCompleted)
	s := <-got
	if s.secret != "sk-live-123" || s.header != "jwt-1" || s.pc.RunID != run || r.Output != "billed" {
		t.Fatalf("the agent saw %+v; run %+v", s, r)
	}
	e.tokens.mu.Lock()
	algs := slices.Clone(e.tokens.algs)
	e.tokens.mu.Unlock()
	if len(algs) != 1 || algs[0] != "" {
		t.Fatalf("an agent by URL got tokens of %q, want the server's algorithm", algs)
	}
	stRun, _ := e.store.GetRun(context.Background(), "", run)
	if stRun.AgentID != inst.AgentID {
		t.Fatalf("the run names agent %q, the instance %q", stRun.AgentID, inst.AgentID)
	}
	if strings.Contains(string(stRun.CustomHeaders), "jwt-1") {
		t.Fatal("custom headers are stored in the clear")
	}
}

func TestSignedCard(t *testing.T) {
	signer, err := jwk.GenerateKey("ES256")
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New("signed", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "s", Handler: func(*agent.Context) (agent.Result, error) { return agent.Result{Output: "ok"}, nil }})
	var tamper bool
	srv := httptest.NewServer(nil)
	defer srv.Close()
	inner := a.Handler(srv.URL, nil)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case execgw.CardKeysPath:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(jwk.NewKeySet(signer.Public()))
		case a2a.WellKnownCardPath:
			card, err := cardsig.Sign(a.CardAt(srv.URL), signer, nil)
			if err != nil {
				t.Error(err)
			}
			if tamper {
				card.Description = "changed after signing"
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(card)
		default:
			inner.ServeHTTP(w, r)
		}
	})
	e, _ := newURLEnv(t)
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "signed", "url": srv.URL}, nil); st != 201 {
		t.Fatalf("a card whose signature verifies: %d", st)
	}
	tamper = true
	var p struct{ Detail string }
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "tampered", "url": srv.URL + "/"}, &p); st != 422 {
		t.Fatalf("a tampered card: %d %s", st, p.Detail)
	}
}

// Each limit of an instance holds exactly: a value at it is taken, one
// past it refused with the field named.
func TestInstanceLimits(t *testing.T) {
	e, _ := newURLEnv(t)
	inst, err := e.store.CreateInstance(context.Background(), gateway.Instance{ID: "i-1", TenantID: "acme", Name: "limits", Hosted: "echo"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	list := func(n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	config := func(size int) map[string]any { // marshals to size bytes
		return map[string]any{"k": strings.Repeat("v", size-len(`{"k":""}`))}
	}
	secrets := func(n, size int) map[string]any {
		out := map[string]any{}
		for i := range n {
			out["s"+strconv.Itoa(i)] = strings.Repeat("v", size)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		patch map[string]any
		field string // "": taken
	}{
		{"config of 64 KiB", map[string]any{"config": config(64 << 10)}, ""},
		{"config past 64 KiB", map[string]any{"config": config(64<<10 + 1)}, "config"},
		{"64 scopes", map[string]any{"scopes": list(64, func(i int) string { return "s:" + strconv.Itoa(i) })}, ""},
		{"65 scopes", map[string]any{"scopes": list(65, func(i int) string { return "s:" + strconv.Itoa(i) })}, "scopes"},
		{"32 header names", map[string]any{"custom_headers": list(32, func(i int) string { return "x-" + strconv.Itoa(i) })}, ""},
		{"33 header names", map[string]any{"custom_headers": list(33, func(i int) string { return "x-" + strconv.Itoa(i) })}, "custom_headers"},
		{"any header", map[string]any{"custom_headers": []string{"*"}}, ""},
		{"a header name with a space", map[string]any{"custom_headers": []string{"x a"}}, "custom_headers[0]"},
		{"a secret of 16 KiB", map[string]any{"secrets": secrets(1, 16<<10)}, ""},
		{"a secret past 16 KiB", map[string]any{"secrets": secrets(1, 16<<10+1)}, "secrets"},
		{"32 secrets", map[string]any{"secrets": secrets(32, 1)}, ""},
		{"33 secrets", map[string]any{"secrets": secrets(33, 1)}, "secrets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p struct {
				Type   string
				Errors []struct{ Field string }
			}
			st := e.do("PATCH", gateway.InstancesPath+"/"+inst.ID, userTok, c.patch, &p)
			switch {
			case c.field == "" && st != 200:
				t.Fatalf("%d %+v, want 200", st, p)
			case c.field != "" && (st != 400 || len(p.Errors) != 1 || p.Errors[0].Field != c.field):
				t.Fatalf("%d %+v, want 400 naming %s", st, p, c.field)
			}
		})
	}
}
