package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// The server verifies the tokens it signs at the memory service, and
// publishes their keys, without the card key.
func TestMemoryServiceBehindTokens(t *testing.T) {
	cardKey, err := cardsig.GenerateKey("EdDSA")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, &app.Options{DataDir: t.TempDir(), CardKey: cardKey})
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

// The turns of a conversation with a hosted agent, sent with an
// execution token, reach assemble's live messages under the token's
// tenant and conversation.
func TestConversationTurnsRecorded(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir()})
	ctx := t.Context()
	claims := identity.Claims{TenantID: "acme", AgentID: "support", UserID: "u1", RunID: "r1", ConversationID: "conv-1",
		Scopes: []string{"memory:read:*"}}
	tok, err := srv.Issuer().Mint(ctx, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, text, token string) {
		t.Helper()
		msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
		p, _ := json.Marshal(a2a.SendMessageRequest{Message: msg})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/agents/echo",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+string(p)+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(a2a.HeaderVersion, "1.0")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", method, resp.StatusCode, err)
		}
	}
	send(a2a.MethodSendMessage, "where is the deploy log", tok)
	send(a2a.MethodSendStreamingMessage, "and the rollback plan", tok)
	send(a2a.MethodSendMessage, "sent without a token", "")
	other, _ := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "globex", AgentID: "support", ConversationID: "conv-1",
		Scopes: []string{"memory:read:*"}}, time.Minute)
	send(a2a.MethodSendMessage, "another tenant's turn", other)

	assemble := func(token string) []memory.LiveMessage {
		t.Helper()
		c, _ := memory.NewClient(srv.URL(), secret.New(token), &memory.ClientOptions{Retry: &resilience.Policy{}})
		res, err := c.Assemble(ctx, &memory.AssembleRequest{Query: "deploy"})
		if err != nil {
			t.Fatal(err)
		}
		return res.LiveMessages
	}
	var got []string
	for _, m := range assemble(tok) {
		got = append(got, m.Role+": "+m.Content)
	}
	// The echo agent's answer is a task: its status message, then its
	// artifact's text.
	want := []string{"user: where is the deploy log", "assistant: echoed 23 bytes\nwhere is the deploy log", "user: and the rollback plan"}
	if !slices.Equal(got, want) {
		t.Errorf("live messages = %q, want %q", got, want)
	}
	if got := assemble(other); len(got) != 2 || got[0].Content != "another tenant's turn" {
		t.Errorf("the other tenant's live messages = %+v", got)
	}
}
