package identity_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
)

func TestExecutionHeaders(t *testing.T) {
	const tok = "eyJhbGciOiJFZERTQSJ9.eyJ0ZW5hbnRfaWQiOiJhY21lIn0.c2ln"
	h := http.Header{}
	h.Set(identity.HeaderExecutionToken, tok)
	h.Set(identity.HeaderTenantID, "acme")
	h.Set(identity.HeaderUserID, "user-7")
	h.Set(identity.HeaderRunID, "run-42")
	h.Set(identity.HeaderAgentID, "agent-1")
	h.Set(identity.HeaderInstanceID, "inst-3")
	e := identity.ExecutionFromHeaders(h)
	if e.Verified || e.TenantID != "acme" || e.RunID != "run-42" || e.InstanceID != "inst-3" {
		t.Fatalf("%+v", e)
	}
	if d := cmp.Diff(map[string]string{"Authorization": "Bearer " + tok}, e.AuthHeaders()); d != "" {
		t.Fatal(d)
	}
	ctxh := e.ContextHeaders()
	if ctxh[identity.HeaderExecutionToken] != tok || ctxh[identity.HeaderUserID] != "user-7" || len(ctxh) != 6 {
		t.Fatalf("context headers %v", ctxh)
	}
	out := http.Header{}
	if !e.Authorize(out) || out.Get("Authorization") != "Bearer "+tok {
		t.Fatal(out)
	}
	// Printing or logging an Execution never shows the token.
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "exec", e)
	for _, s := range []string{fmt.Sprint(e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e), logged.String()} {
		if strings.Contains(s, "eyJ") {
			t.Fatalf("token printed: %s", s)
		}
	}
}

// seed 000, novaos_client_sdk.execution_context.ExecutionContext.from_headers:
// "If X-NovaOS-Execution-Token is absent from the headers (e.g. the agent
// is running outside the auth-proxy sidecar), the method falls back to
// the NOVAOS_EXECUTION_TOKEN environment variable before returning None."
// The variable is read once by the program (envconfig.ExecutionToken) and
// given here.
func TestExecutionFallbackToken(t *testing.T) {
	fallback := secret.New("from-env")
	for _, tt := range []struct {
		name     string
		header   string
		fallback secret.Value
		want     string
		ok       bool
	}{
		{"header wins", "from-header", fallback, "from-header", true},
		{"no header: the fallback", "", fallback, "from-env", true},
		{"neither", "", secret.Value{}, "", false},
		{"header, no fallback", "from-header", secret.Value{}, "from-header", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set(identity.HeaderExecutionToken, tt.header)
			}
			h.Set(identity.HeaderRunID, "run-1")
			e := identity.ExecutionFromHeaders(h).WithFallbackToken(tt.fallback)
			tok, err := e.RequireToken()
			if (err == nil) != tt.ok || tok.Reveal() != tt.want || e.RunID != "run-1" {
				t.Fatalf("token set %v, err %v, run %q (want token ok %v)", !tok.IsZero(), err, e.RunID, tt.ok)
			}
			if !tt.ok && !errors.Is(err, identity.ErrNoToken) {
				t.Fatalf("error %v, want ErrNoToken", err)
			}
		})
	}
	if !strings.Contains(identity.ErrNoToken.Error(), "NOVAOS_EXECUTION_TOKEN") {
		t.Error("ErrNoToken does not say how to give a token outside the platform")
	}
}

func TestExecutionWithoutToken(t *testing.T) {
	var e identity.Execution
	if len(e.AuthHeaders()) != 0 {
		t.Fatal("auth headers without a token")
	}
	if _, err := e.RequireToken(); !errors.Is(err, identity.ErrNoToken) {
		t.Fatal(err)
	}
	if e.Authorize(http.Header{}) {
		t.Fatal("Authorize without a token")
	}
	e.Token = secret.New("t")
	if v, err := e.RequireToken(); err != nil || v.Reveal() != "t" {
		t.Fatal(v, err)
	}
}
