package agent_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

// executionAgent records what its skill's Context.Execution returned.
func executionAgent(t *testing.T) (*agent.Agent, chan identity.Execution) {
	t.Helper()
	got := make(chan identity.Execution, 1)
	var logs syncBuf
	t.Cleanup(func() {
		if strings.Contains(logs.String(), "eyJ") {
			t.Errorf("the log holds the token: %s", logs.String())
		}
		if !strings.Contains(logs.String(), `"execution"`) {
			t.Errorf("the skill's log line is missing: %s", logs.String())
		}
	})
	a := agent.New("exec", "1.0.0", &agent.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	a.MustRegister(agent.Skill{ID: "run", Handler: func(c *agent.Context) (agent.Result, error) {
		e := c.Execution()
		got <- e
		// What a skill might log: never the token.
		c.Logger().Info("execution", "exec", e, "platform", c.Platform())
		return agent.Result{Output: fmt.Sprint(e)}, nil
	}})
	return a, got
}

func TestExecutionFromPlatformContext(t *testing.T) {
	const tok = "eyJhbGciOiJFZERTQSJ9.eyJ0ZW5hbnRfaWQiOiJhY21lIn0.c2lnbmF0dXJl"
	tests := []struct {
		name   string
		md     map[string]any
		header http.Header
		want   identity.Execution
	}{
		{
			name: "platform context",
			md: map[string]any{agent.ContextMetadataKey: map[string]any{
				"execution_token": tok, "tenant_id": "acme", "user_id": "user-7", "run_id": "run-42",
				"agent_id": "agent-1", "instance_id": "inst-3", "conversation_id": "conv-9",
			}},
			want: identity.Execution{TenantID: "acme", UserID: "user-7", RunID: "run-42", AgentID: "agent-1", InstanceID: "inst-3", ConversationID: "conv-9"},
		},
		{
			name: "auth-proxy headers",
			header: http.Header{
				identity.HeaderExecutionToken: {tok}, identity.HeaderTenantID: {"acme"}, identity.HeaderUserID: {"user-7"},
				identity.HeaderRunID: {"run-42"}, identity.HeaderAgentID: {"agent-1"}, identity.HeaderInstanceID: {"inst-3"},
			},
			want: identity.Execution{TenantID: "acme", UserID: "user-7", RunID: "run-42", AgentID: "agent-1", InstanceID: "inst-3"},
		},
		{
			name:   "platform context wins over headers, headers fill the rest",
			md:     map[string]any{agent.ContextMetadataKey: map[string]any{"executionToken": tok, "tenantId": "acme"}},
			header: http.Header{identity.HeaderExecutionToken: {"other.token.x"}, identity.HeaderTenantID: {"globex"}, identity.HeaderRunID: {"run-42"}},
			want:   identity.Execution{TenantID: "acme", RunID: "run-42"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, got := executionAgent(t)
			url := endpoint(t, a)
			task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("hi", nil), Metadata: tc.md}, tc.header)
			e := <-got
			if e.Token.Reveal() != tok {
				t.Fatalf("token %q, want the platform's", e.Token.Reveal())
			}
			if h := e.AuthHeaders(); h["Authorization"] != "Bearer "+tok || len(h) != 1 {
				t.Fatalf("AuthHeaders %v", h)
			}
			e.Token = tc.want.Token
			if fmt.Sprint(e) != fmt.Sprint(tc.want) {
				t.Fatalf("execution %+v, want %+v", e, tc.want)
			}
			// The skill printed its Execution as the output: no token.
			if out := taskText(task); strings.Contains(out, "eyJ") || !strings.Contains(out, "[REDACTED]") {
				t.Fatalf("printed execution %q", out)
			}
		})
	}
}

func TestExecutionWithoutToken(t *testing.T) {
	a, got := executionAgent(t)
	sendTask(t, endpoint(t, a), a2a.SendMessageRequest{Message: userMsg("hi", nil)}, nil)
	e := <-got
	if _, err := e.RequireToken(); err != identity.ErrNoToken {
		t.Fatalf("RequireToken: %v", err)
	}
	if len(e.AuthHeaders()) != 0 || e.Verified {
		t.Fatalf("%+v", e)
	}
}

// An agent that verifies tokens itself (identity.Middleware in front of
// its handler) gets the verified claims, whatever the body or headers say.
func TestExecutionVerified(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	jk := jose.JSONWebKey{Key: priv, Algorithm: "EdDSA", KeyID: "k1"}
	pubJSON, _ := jk.Public().MarshalJSON()
	pub, _ := jwk.ParseKey(pubJSON)
	keys, _ := identity.NewStaticKeys(pub)
	v, _ := identity.New(keys, identity.Options{Issuer: "https://novaos.example.com"})
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jk}, (&jose.SignerOptions{}).WithType("JWT"))
	payload, _ := identity.Claims{
		Issuer: "https://novaos.example.com", Audience: []string{identity.DefaultAudience}, Expiry: time.Now().Add(time.Minute),
		TenantID: "acme", AgentID: "agent-1", RunID: "run-42", Scopes: []string{"memory:read:*"},
	}.MarshalJSON()
	jws, _ := signer.Sign(payload)
	tok, _ := jws.CompactSerialize()

	a, got := executionAgent(t)
	srv := httptest.NewServer(nil)
	srv.Config.Handler = identity.Middleware(v, a.Handler(srv.URL, nil))
	t.Cleanup(srv.Close)

	md := map[string]any{agent.ContextMetadataKey: map[string]any{"execution_token": "forged", "tenant_id": "globex"}}
	sendTask(t, srv.URL, a2a.SendMessageRequest{Message: userMsg("hi", nil), Metadata: md},
		http.Header{"Authorization": {"Bearer " + tok}, identity.HeaderTenantID: {"globex"}})
	e := <-got
	if !e.Verified || e.TenantID != "acme" || e.RunID != "run-42" || e.Token.Reveal() != tok || e.Scopes[0] != "memory:read:*" {
		t.Fatalf("verified execution %+v", e)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func taskText(task *a2a.Task) string {
	var b strings.Builder
	for _, art := range task.Artifacts {
		for _, p := range art.Parts {
			b.WriteString(p.Text)
		}
	}
	if task.Status.Message != nil {
		b.WriteString(task.Status.Message.Text())
	}
	return b.String()
}
