package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
)

// The execution gateway on SQLite, end to end: a tenant's user installs
// the hosted echo agent, runs it and follows the run with the Go client;
// the run's token, which the memory service would accept while the run
// lives, is refused once it has ended.
func TestGatewayEndToEnd(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir()})
	ctx := context.Background()
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "echo", Hosted: "echo", Scopes: []string{"memory:read:*"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "hello gateway"})
	if err != nil {
		t.Fatal(err)
	}
	var last gateway.StreamEvent
	var text string
	for ev, err := range c.EventsWithReconnect(ctx, res.RunID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.WireType == gateway.EventMessageDelta {
			text += ev.Content
		}
		last = ev
	}
	if !last.IsTerminal() || last.IsFailure() {
		t.Fatalf("the stream ended on %+v", last)
	}
	run, err := c.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != gateway.StatusCompleted || run.Output == "" || text == "" {
		t.Fatalf("run %+v, streamed %q", run, text)
	}
	// A token of the ended run no longer verifies anywhere on the server.
	runTok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", RunID: run.ID, AgentID: "echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Issuer().Verify(ctx, runTok); err == nil {
		t.Fatal("a token of an ended run verifies")
	}
}

// An agent that verifies its callers' tokens with the identity package's
// JWKS verifier, as the Python SDK's agents do with JWKSTokenVerifier,
// accepts the RS256 tokens the gateway mints for a run.
func TestGatewayTokensVerifyAtTheAgent(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir()})
	ctx := context.Background()
	seen := make(chan identity.Execution, 1)
	a := agent.New("verifier", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "check", Handler: func(c *agent.Context) (agent.Result, error) {
		seen <- c.Execution()
		return agent.Result{Output: "verified"}, nil
	}})
	v, err := identity.NewJWKSVerifier(srv.URL(), srv.Issuer().IssuerURL(), &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	agentSrv := httptest.NewServer(nil)
	defer agentSrv.Close()
	h := a.Handler(agentSrv.URL, nil)
	mux := http.NewServeMux()
	mux.Handle("GET "+a2a.WellKnownCardPath, h) // the card is public
	algs := make(chan string, 4)
	mux.Handle("/", identity.Middleware(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		algs <- jwsAlg(t, r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	})))
	agentSrv.Config.Handler = mux

	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "verifier", URL: agentSrv.URL, Scopes: []string{"memory:read:agent"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "who am I?"})
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range c.EventsWithReconnect(ctx, res.RunID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.IsTerminal() && ev.IsFailure() {
			t.Fatalf("the run failed: %+v", ev)
		}
	}
	ex := <-seen
	if !ex.Verified || ex.RunID != res.RunID || ex.TenantID != "acme" || ex.UserID != "alice" || ex.InstanceID != inst.ID {
		t.Fatalf("the agent saw %+v", ex)
	}
	if srv.Issuer().Algorithm() != auth.RS256 {
		t.Fatalf("the server signs %s", srv.Issuer().Algorithm())
	}
	if alg := <-algs; alg != auth.RS256 {
		t.Fatalf("an agent by URL got a token signed %s", alg)
	}
}

// jwsAlg is the alg of the compact JWS in an Authorization header.
func jwsAlg(t *testing.T, header string) string {
	t.Helper()
	tok, ok := strings.CutPrefix(header, "Bearer ")
	head, _, ok2 := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	var h struct {
		Alg string `json:"alg"`
	}
	if !ok || !ok2 || err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatal("the agent got no bearer JWS")
	}
	return h.Alg
}
