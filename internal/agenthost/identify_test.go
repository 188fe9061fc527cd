package agenthost_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store"
)

// countingTokens verifies the token "good" as acme's, and counts every
// verification.
type countingTokens struct{ verified atomic.Int32 }

func (c *countingTokens) Verify(_ context.Context, tok string) (*identity.Claims, error) {
	c.verified.Add(1)
	if tok != "good" {
		return nil, fmt.Errorf("%w: bad signature", identity.ErrInvalid)
	}
	return &identity.Claims{TenantID: "acme", AgentID: "support", ConversationID: "c1"}, nil
}

func (*countingTokens) SignJWT(context.Context, string, []byte) (string, error) {
	return "", errors.New("not signing")
}
func (*countingTokens) IssuerURL() string { return "https://issuer.example" }

// seeIdentity is an interceptor that notes the Identity every call
// arrives with.
type seeIdentity struct{ seen atomic.Value }

func (s *seeIdentity) Before(ctx context.Context, c *a2asrv.Call, _ any) (context.Context, error) {
	s.seen.Store(fmt.Sprintf("%T", c.Identity))
	return ctx, nil
}
func (*seeIdentity) After(context.Context, *a2asrv.Call, any, error) {}

// A hosted agent's caller is identified once per call, by the host: the
// agent SDK's Execution and every interceptor read that one verification;
// a call without a token is anonymous, and one whose token does not
// verify is refused.
func TestHostIdentifiesCallersOnce(t *testing.T) {
	whoami := agent.New("whoami", "1.0.0", nil)
	whoami.MustRegister(agent.Skill{ID: "whoami", Handler: func(c *agent.Context) (agent.Result, error) {
		e := c.Execution()
		return agent.Result{Output: fmt.Sprintf("tenant=%s verified=%v", e.TenantID, e.Verified)}, nil
	}})
	tokens := &countingTokens{}
	ic := &seeIdentity{}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	guard, err := httpapi.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agenthost.New(t.Context(), &store.Stores{Tasks: a2asrv.NewMemoryTaskStore(nil)},
		agenthost.Deps{BaseURL: ts.URL, Guard: guard, Tokens: tokens, Interceptors: []a2asrv.Interceptor{ic}},
		&agenthost.Options{Hosted: map[string]agenthost.Agent{"whoami": whoami}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	for _, r := range h.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	send := func(token string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + a2a.NewID() +
			`","role":"ROLE_USER","parts":[{"text":"who"}],"metadata":{"skillId":"whoami"}}}}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL+agenthost.Path("whoami"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	tests := []struct {
		token        string
		want         string // in the answer
		seen         string // the Identity the interceptor saw ("" when refused before it)
		verification int32
	}{
		{"good", "tenant=acme verified=true", "identity.Verified", 1},
		{"", "tenant= verified=false", "<nil>", 0},
		{"forged", `"code":-31401`, "", 1},
	}
	for _, tt := range tests {
		before := tokens.verified.Load()
		ic.seen.Store("")
		got := send(tt.token)
		if !strings.Contains(got, tt.want) {
			t.Errorf("token %q: answer %s, want %s", tt.token, got, tt.want)
		}
		if n := tokens.verified.Load() - before; n != tt.verification {
			t.Errorf("token %q verified %d times, want %d", tt.token, n, tt.verification)
		}
		if seen := ic.seen.Load(); seen != tt.seen {
			t.Errorf("token %q: the interceptor saw %q, want %q", tt.token, seen, tt.seen)
		}
	}
}
