package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// The server verifies the tokens it signs at the memory service, and
// publishes their keys, without the card key.
func TestMemoryServiceBehindTokens(t *testing.T) {
	cardKey, err := jwk.GenerateKey("EdDSA")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{CardKey: cardKey}})
	ctx := context.Background()

	// JWKS: the token key alone (the card key has its own set), cacheable.
	resp, err := http.Get(srv.URL() + app.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	kids := map[string]bool{}
	for _, k := range set.Keys {
		kids[k.Kid] = true
		if k.D != "" {
			t.Fatal("the JWKS publishes a private key")
		}
	}
	if !kids[srv.Issuer().KeyID()] || kids[cardKey.KeyID()] || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
		t.Fatalf("JWKS kids %v (Cache-Control %q): want the token key %s and not the card key %s", kids, resp.Header.Get("Cache-Control"), srv.Issuer().KeyID(), cardKey.KeyID())
	}

	// No token, another issuer's token: 401. The server's own: served.
	anon, _ := memory.NewClient(srv.URL(), secret.New("not-a-jwt"), &memory.ClientOptions{Retry: &resilience.Policy{}})
	if _, err := anon.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "x"}); status(err) != http.StatusUnauthorized {
		t.Fatalf("malformed token: %v, want 401", err)
	}
	other, err := auth.Open("", auth.Options{Issuer: "https://elsewhere.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	claims := identity.Claims{TenantID: "acme", AgentID: "support", UserID: "u1", RunID: "r1",
		Scopes: []string{"memory:read:*", "memory:write:run"}}
	foreign, _ := other.Mint(ctx, claims, time.Minute)
	fc, _ := memory.NewClient(srv.URL(), secret.New(foreign), &memory.ClientOptions{Retry: &resilience.Policy{}})
	if _, err := fc.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "x"}); status(err) != http.StatusUnauthorized {
		t.Fatalf("another issuer's token: %v, want 401", err)
	}
	own, err := srv.Issuer().Mint(ctx, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := memory.NewClient(srv.URL(), secret.New(own), &memory.ClientOptions{Retry: &resilience.Policy{}})
	w, err := c.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "The deploy is at noon."})
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "deploy"})
	if err != nil || len(q.Items) != 1 || q.Items[0].MemoryID != w.MemoryID {
		t.Fatalf("query = %+v, %v", q, err)
	}
	// The same agent and run in another tenant sees nothing.
	claims.TenantID = "globex"
	tok2, _ := srv.Issuer().Mint(ctx, claims, time.Minute)
	c2, _ := memory.NewClient(srv.URL(), secret.New(tok2), &memory.ClientOptions{Retry: &resilience.Policy{}})
	if q, err := c2.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "deploy"}); err != nil || len(q.Items) != 0 {
		t.Fatalf("another tenant read %+v, %v", q, err)
	}
	// A scope the token lacks is 403.
	if _, err := c.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "x y z"}); status(err) != http.StatusForbidden {
		t.Fatalf("write without memory:write:agent: %v, want 403", err)
	}
}

func status(err error) int {
	var e *memory.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// The turns of a conversation with a hosted agent reach assemble's live
// messages from every binding, under the token's tenant and conversation,
// and only from a token that names the conversation and may write memory,
// for calls the agent accepted.
func TestConversationTurnsRecorded(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"}})
	ctx := t.Context()
	mint := func(c identity.Claims) string {
		t.Helper()
		tok, err := srv.Issuer().Mint(ctx, c, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	write := []string{"memory:read:*", "memory:write:agent"}
	alice := mint(identity.Claims{TenantID: "acme", AgentID: "support", UserID: "alice", ConversationID: "conv-a", Scopes: write})
	mallory := mint(identity.Claims{TenantID: "acme", AgentID: "support", UserID: "mallory", ConversationID: "conv-m", Scopes: write})
	gateOnly := mint(identity.Claims{TenantID: "acme", AgentID: "support", UserID: "mallory", ConversationID: "conv-a", Scopes: []string{"gate:submit", "memory:read:*"}})
	noConv := mint(identity.Claims{TenantID: "acme", AgentID: "support", UserID: "mallory", Scopes: write})
	globex := mint(identity.Claims{TenantID: "globex", AgentID: "support", ConversationID: "conv-a", Scopes: write})
	other, err := auth.Open("", auth.Options{Issuer: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := other.Mint(ctx, identity.Claims{TenantID: "acme", ConversationID: "conv-a", Scopes: write}, time.Minute)

	agentURL := srv.URL() + "/agents/echo"
	// post sends a raw JSON-RPC body and returns the answer's text.
	post := func(body, version, token string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, agentURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set(a2a.HeaderVersion, version)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	envelope := func(method string, m *a2a.Message) string {
		p, _ := json.Marshal(a2a.SendMessageRequest{Message: m})
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + string(p) + `}`
	}
	msg := func(text, contextID string) *a2a.Message {
		m := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
		m.ContextID = contextID
		return m
	}
	// over sends text with our client over binding.
	over := func(binding, text, token string) {
		t.Helper()
		c, err := a2aclient.NewFromURL(ctx, agentURL, &a2aclient.Options{Transports: []string{binding},
			TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Binding() != binding {
			t.Fatalf("the client speaks %s, want %s", c.Binding(), binding)
		}
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg(text, "")}, a2aclient.WithHeader("Authorization", "Bearer "+token)); err != nil {
			t.Fatalf("SendMessage over %s: %v", binding, err)
		}
	}
	expectCode := func(answer string, code int) {
		t.Helper()
		if !strings.Contains(answer, fmt.Sprintf(`"code":%d`, code)) {
			t.Fatalf("answer %s, want error %d", answer, code)
		}
	}

	// Accepted, on each binding.
	post(envelope(a2a.MethodSendMessage, msg("over json-rpc", "")), "1.0", alice)
	over(a2a.BindingHTTPJSON, "over http+json", alice)
	over(a2a.BindingGRPC, "over grpc", alice)
	post(envelope(a2a.MethodSendStreamingMessage, msg("streamed", "")), "1.0", alice)
	post(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-03","role":"user","parts":[{"kind":"text","text":"over a2a 0.3"}]}}}`, "", alice)
	// Naming another conversation's context records into the token's own.
	post(envelope(a2a.MethodSendMessage, msg("mallory names conv-a", "conv-a")), "1.0", mallory)

	// Not recorded: forged, refused, misread.
	post(envelope(a2a.MethodSendMessage, msg("forged without a write scope", "conv-a")), "1.0", gateOnly)
	post(envelope(a2a.MethodSendMessage, msg("forged by a token naming no conversation", "conv-a")), "1.0", noConv)
	post(envelope(a2a.MethodSendMessage, msg("forged with another issuer's token", "conv-a")), "1.0", foreign)
	post(envelope(a2a.MethodSendMessage, msg("sent without a token", "conv-a")), "1.0", "")
	expectCode(post(envelope(a2a.MethodSendMessage, msg("refused: unsupported version", "")), "9.9", alice), a2a.CodeVersionNotSupported)
	bad := msg("refused: bad params", "")
	bad.Role = a2a.RoleUnspecified
	expectCode(post(envelope(a2a.MethodSendMessage, bad), "1.0", alice), a2a.CodeInvalidParams)
	unknownTask := msg("refused: unknown task", "")
	unknownTask.TaskID = "no-such-task"
	expectCode(post(envelope(a2a.MethodSendMessage, unknownTask), "1.0", alice), a2a.CodeTaskNotFound)
	streamRefused := msg("refused: streamed to an unknown task", "")
	streamRefused.TaskID = "no-such-task"
	expectCode(post(envelope(a2a.MethodSendStreamingMessage, streamRefused), "1.0", alice), a2a.CodeTaskNotFound)
	// The agent reads the exact key "method"; "Method" is not a second name for it.
	p, _ := json.Marshal(a2a.SendMessageRequest{Message: msg("a GetTask read as SendMessage", "")})
	post(`{"jsonrpc":"2.0","id":1,"method":"GetTask","Method":"SendMessage","params":`+string(p)+`}`, "1.0", alice)

	post(envelope(a2a.MethodSendMessage, msg("another tenant's turn", "")), "1.0", globex)

	assemble := func(token string) []string {
		t.Helper()
		c, _ := memory.NewClient(srv.URL(), secret.New(token), &memory.ClientOptions{Retry: &resilience.Policy{}})
		res, err := c.Assemble(ctx, &memory.AssembleRequest{Query: "turn"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.LiveMessages {
			got = append(got, m.Role+": "+m.Content)
		}
		return got
	}
	// The echo agent's answer is a task: its status message, then its
	// artifact's text.
	echo := func(text string) string { return fmt.Sprintf("assistant: echoed %d bytes\n%s", len(text), text) }
	want := []string{
		"user: over json-rpc", echo("over json-rpc"),
		"user: over http+json", echo("over http+json"),
		"user: over grpc", echo("over grpc"),
		"user: streamed",
		"user: over a2a 0.3", echo("over a2a 0.3"),
	}
	if diff := cmp.Diff(want, assemble(alice)); diff != "" {
		t.Errorf("alice's conversation (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user: mallory names conv-a", echo("mallory names conv-a")}, assemble(mallory)); diff != "" {
		t.Errorf("mallory's conversation (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user: another tenant's turn", echo("another tenant's turn")}, assemble(globex)); diff != "" {
		t.Errorf("the other tenant's conversation (-want +got)\n%s", diff)
	}
}
