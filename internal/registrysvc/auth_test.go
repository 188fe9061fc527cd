package registrysvc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
)

// adminToken is the configured token; nearMiss differs in its last byte.
const (
	adminToken = "adm-7f3c9e21b4d85a60"
	nearMiss   = "adm-7f3c9e21b4d85a61"
)

// authService is a service with one agent, "x", whose logs go to logs.
func authService(t *testing.T, token secret.Value, logs *bytes.Buffer) http.Handler {
	t.Helper()
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{
		AdminToken: token,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if _, err := svc.Register(t.Context(), &registry.Agent{Name: "x", URL: "https://x.example.com/"}); err != nil {
		t.Fatal(err)
	}
	return svc.Handler()
}

type authRequest struct {
	method, path, body string
	ok                 int // the status when the request is let through
}

var (
	writes = []authRequest{
		{http.MethodPost, "/api/v1/agents", `{"name":"y","url":"https://y.example.com/"}`, 201},
		{http.MethodPut, "/api/v1/agents/x", `{"url":"https://x2.example.com/"}`, 200},
		{http.MethodPatch, "/api/v1/agents/x", `{"url":"https://x2.example.com/"}`, 405}, // not routed, but guarded
		{http.MethodDelete, "/api/v1/agents/x", "", 204},
	}
	reads = []authRequest{
		{http.MethodGet, "/api/v1/agents", "", 200},
		{http.MethodHead, "/api/v1/agents", "", 200},
		{http.MethodGet, "/api/v1/agents/x", "", 200},
		{http.MethodGet, "/api/v1/agents/search?q=x", "", 200},
		{http.MethodGet, "/api/v1/agents/find?capability=a", "", 200},
		{http.MethodOptions, "/api/v1/agents", "", 405},
	}
)

func serve(h http.Handler, r authRequest, remote, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	req.RemoteAddr = remote
	req.Host = "127.0.0.1:8080" // the loopback peers' rule wants the server named as loopback
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkProblem checks an access problem without printing the body, which
// a failing implementation might fill with the token.
func checkProblem(t *testing.T, name string, rec *httptest.ResponseRecorder, status int, typ string) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("%s: status %d, want %d", name, rec.Code, status)
		return
	}
	p, ok := decodeProblem(rec.Body.Bytes())
	if !ok || p.Status != status || p.Type != typ || p.Detail == "" || rec.Header().Get("Content-Type") != registry.ProblemContentTypeHeader {
		t.Errorf("%s: not a %d %s problem+json with a detail: got a %d %s", name, status, typ, p.Status, p.Type)
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge", name, rec.Header().Get("WWW-Authenticate"))
	}
}

func TestWritesNeedTheAdminToken(t *testing.T) {
	tests := []struct {
		name, authorization string
		pass                bool
	}{
		{"no header", "", false},
		{"right token", "Bearer " + adminToken, true},
		{"scheme in lower case", "bearer " + adminToken, true},
		{"wrong token", "Bearer " + nearMiss, false},
		{"token prefix", "Bearer " + adminToken[:len(adminToken)-1], false},
		{"token with a suffix", "Bearer " + adminToken + "0", false},
		{"empty token", "Bearer ", false},
		{"no scheme", adminToken, false},
		{"basic scheme", "Basic " + adminToken, false},
	}
	for _, remote := range []string{"127.0.0.1:5000", "203.0.113.9:5000"} {
		for _, tc := range tests {
			for _, w := range writes {
				name := fmt.Sprintf("%s %s from %s, %s", w.method, w.path, remote, tc.name)
				var logs bytes.Buffer
				rec := serve(authService(t, secret.New(adminToken), &logs), w, remote, tc.authorization)
				if tc.pass {
					if rec.Code != w.ok {
						t.Errorf("%s: status %d, want %d", name, rec.Code, w.ok)
					}
				} else {
					checkProblem(t, name, rec, http.StatusUnauthorized, registry.ProblemUnauthorized)
				}
				for _, s := range []string{rec.Body.String(), fmt.Sprint(rec.Header()), logs.String()} {
					if strings.Contains(s, adminToken[4:]) || strings.Contains(s, nearMiss[4:]) {
						t.Errorf("%s: a token shows in the response or the logs", name)
					}
				}
			}
		}
	}
	// Reads stay open without a token, from anywhere.
	h := authService(t, secret.New(adminToken), new(bytes.Buffer))
	for _, r := range reads {
		if rec := serve(h, r, "203.0.113.9:5000", ""); rec.Code != r.ok {
			t.Errorf("%s %s without a token: status %d, want %d", r.method, r.path, rec.Code, r.ok)
		}
	}
}

func TestWritesWithoutATokenAreLoopbackOnly(t *testing.T) {
	tests := []struct {
		remote string
		pass   bool
	}{
		{"127.0.0.1:5000", true},
		{"127.1.2.3:5000", true},
		{"[::1]:5000", true},
		{"[::ffff:127.0.0.1]:5000", true},
		{"10.0.0.8:5000", false},
		{"192.168.1.20:5000", false},
		{"203.0.113.9:5000", false},
		{"[2001:db8::1]:5000", false},
		{"[::]:5000", false},
		{"0.0.0.0:5000", false},
		{"localhost:5000", false}, // a name is not an address
		{"127.0.0.1", false},      // not a host:port
		{"", false},
	}
	for _, tc := range tests {
		for _, w := range writes {
			name := fmt.Sprintf("%s %s from %q", w.method, w.path, tc.remote)
			rec := serve(authService(t, secret.Value{}, new(bytes.Buffer)), w, tc.remote, "Bearer anything")
			if tc.pass {
				if rec.Code != w.ok {
					t.Errorf("%s: status %d, want %d", name, rec.Code, w.ok)
				}
				continue
			}
			checkProblem(t, name, rec, http.StatusForbidden, registry.ProblemWriteForbidden)
			if !strings.Contains(rec.Body.String(), "admin-token-file") {
				t.Errorf("%s: the problem does not say how to configure a token: %s", name, rec.Body)
			}
		}
		h := authService(t, secret.Value{}, new(bytes.Buffer))
		for _, r := range reads {
			if rec := serve(h, r, tc.remote, ""); rec.Code != r.ok {
				t.Errorf("%s %s from %q: status %d, want %d", r.method, r.path, tc.remote, rec.Code, r.ok)
			}
		}
	}
}

func TestWriteMode(t *testing.T) {
	for _, tc := range []struct {
		token secret.Value
		want  registrysvc.WriteMode
		str   string
	}{
		{secret.Value{}, registrysvc.WritesLoopbackOnly, "loopback-only"},
		{secret.New(""), registrysvc.WritesLoopbackOnly, "loopback-only"},
		{secret.New(adminToken), registrysvc.WritesNeedToken, "admin-token"},
	} {
		opts := &registrysvc.Options{AdminToken: tc.token}
		if got := registrysvc.New(registrysvc.NewMemoryStore(), opts).WriteMode(); got != tc.want || got.String() != tc.str {
			t.Errorf("WriteMode = %v, want %v", got, tc.str)
		}
		if s := fmt.Sprintf("%v %+v %#v", opts, *opts, opts); strings.Contains(s, adminToken) {
			t.Error("Options show the admin token")
		}
	}
}

func decodeProblem(b []byte) (registry.Problem, bool) {
	var p registry.Problem
	return p, json.Unmarshal(b, &p) == nil
}
