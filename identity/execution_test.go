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
