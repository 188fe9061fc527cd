package auth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// A service on httpapi.API takes the token's claims through the issuer's
// Authenticator, and ClaimsFrom reads them either way.
func TestAuthenticator(t *testing.T) {
	clk := &clock{t: time.Now()}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk)
	api := &httpapi.API{Name: "memory", Auth: iss.Authenticator()}
	var got *identity.Claims
	h := api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = auth.ClaimsFrom(r.Context())
		caller, _ := httpapi.CallerFrom(r.Context())
		if caller.Scheme != auth.SchemeExecutionToken || strings.Contains(caller.Subject, ".") {
			t.Errorf("caller %+v", caller)
		}
	}))
	good, _ := iss.Mint(context.Background(), claims, time.Minute)
	other := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk)
	foreign, _ := other.Mint(context.Background(), claims, time.Minute)

	for _, tc := range []struct {
		name, auth string
		status     int
		problem    string
	}{
		{"valid", "Bearer " + good, http.StatusOK, ""},
		{"none", "", http.StatusUnauthorized, problem.TypeUnauthorized},
		{"foreign key", "Bearer " + foreign, http.StatusUnauthorized, identity.ProblemInvalidToken},
		{"garbage", "Bearer x.y.z", http.StatusUnauthorized, identity.ProblemInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			r := httptest.NewRequest(http.MethodPost, "/api/v1/mcp", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if tc.status == http.StatusOK {
				if got == nil || got.TenantID != "acme" || got.AgentID != "agent-1" {
					t.Fatalf("claims %+v", got)
				}
				return
			}
			var p struct{ Type string }
			json.Unmarshal(w.Body.Bytes(), &p)
			if p.Type != tc.problem || w.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("problem %q (want %q), challenge %q", p.Type, tc.problem, w.Header().Get("WWW-Authenticate"))
			}
			if strings.Contains(w.Body.String(), foreign[:20]) {
				t.Fatal("the answer holds the token")
			}
		})
	}
}

// ClaimsFrom finds claims only where a token put them, and says so.
func TestClaimsFrom(t *testing.T) {
	c := &identity.Claims{TenantID: "acme"}
	var none *identity.Claims
	tests := []struct {
		name string
		ctx  context.Context
		want *identity.Claims
	}{
		{"nothing", context.Background(), nil},
		{"token caller", httpapi.WithCaller(context.Background(), &httpapi.Caller{Scheme: auth.SchemeExecutionToken, Claims: c}), c},
		{"token caller without claims", httpapi.WithCaller(context.Background(), &httpapi.Caller{Scheme: auth.SchemeExecutionToken, Claims: none}), nil},
		{"token caller with other claims", httpapi.WithCaller(context.Background(), &httpapi.Caller{Scheme: auth.SchemeExecutionToken, Claims: "acme"}), nil},
		{"admin caller carrying claims", httpapi.WithCaller(context.Background(), &httpapi.Caller{Scheme: httpapi.SchemeAdminToken, Admin: true, Claims: c}), nil},
	}
	for _, tc := range tests {
		got, ok := auth.ClaimsFrom(tc.ctx)
		if got != tc.want || ok != (tc.want != nil) {
			t.Errorf("%s: ClaimsFrom = %v, %v; want %v", tc.name, got, ok, tc.want)
		}
	}
}
