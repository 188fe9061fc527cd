package identity_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
)

func TestBearerToken(t *testing.T) {
	tests := []struct {
		values []string
		want   string
		ok     bool
	}{
		{[]string{"Bearer abc.def.ghi"}, "abc.def.ghi", true},
		{[]string{"bearer abc"}, "abc", true},
		{[]string{"BEARER   abc"}, "abc", true},
		{[]string{"Basic abc"}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Bearer a b"}, "", false},
		{[]string{"Bearer a", "Bearer b"}, "", false},
		{nil, "", false},
	}
	for _, tc := range tests {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Authorization", v)
		}
		got, ok := identity.BearerToken(h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.values, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMiddleware(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	v := newVerifier(t, ed)
	good := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	expiredClaims := validClaims(now)
	expiredClaims["exp"] = now.Add(-time.Hour).Unix()
	expired := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, expiredClaims))

	var seen identity.Execution
	var spoofed string
	h := identity.Middleware(v, identity.RequireScope("memory:read:tenant", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = identity.ExecutionFromContext(r.Context())
		spoofed = r.Header.Get(identity.HeaderTenantID)
		w.WriteHeader(http.StatusNoContent)
	})))
	narrowClaims := validClaims(now)
	narrowClaims["scopes"] = []string{"memory:write:agent"}
	narrow := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, narrowClaims))

	tests := []struct {
		name, auth     string
		status         int
		authenticate   string
		detailContains string
	}{
		{"valid", "Bearer " + good, http.StatusNoContent, "", ""},
		{"no token", "", http.StatusUnauthorized, `Bearer realm="novaos"`, "required"},
		{"other scheme", "Basic dXNlcjpwYXNz", http.StatusUnauthorized, `Bearer realm="novaos"`, "required"},
		{"expired", "Bearer " + expired, http.StatusUnauthorized, `Bearer realm="novaos", error="invalid_token"`, "token expired"},
		{"garbage", "Bearer not-a-token", http.StatusUnauthorized, `Bearer realm="novaos", error="invalid_token"`, "malformed"},
		{"insufficient scope", "Bearer " + narrow, http.StatusForbidden, `Bearer realm="novaos", error="insufficient_scope", scope="memory:read:tenant"`, "memory:read:tenant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen = identity.Execution{}
			r := httptest.NewRequest(http.MethodPost, "/api/v1/mcp", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			r.Header.Set(identity.HeaderTenantID, "globex") // a caller's spoof
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tc.authenticate {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.authenticate)
			}
			if tc.status == http.StatusNoContent {
				if !seen.Verified || seen.TenantID != "acme" || seen.Token.Reveal() != good {
					t.Fatalf("execution in the handler: %+v", seen)
				}
				if spoofed != "" {
					t.Fatalf("the caller's %s reached the handler: %q", identity.HeaderTenantID, spoofed)
				}
				return
			}
			var p struct{ Type, Detail string }
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if !strings.Contains(p.Detail, tc.detailContains) {
				t.Fatalf("detail %q, want it to mention %q", p.Detail, tc.detailContains)
			}
			if strings.Contains(w.Body.String(), expired[10:40]) {
				t.Fatal("the answer holds the token")
			}
		})
	}
}

func TestMiddlewareKeysUnavailable(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	ks := newKeyServer(t)
	ks.status = http.StatusBadGateway
	v, err := identity.NewJWKSVerifier(ks.URL, testIssuer, &identity.JWKSOptions{Policy: loopback()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(time.Now())))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	identity.Middleware(v, http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
}

func TestVerifyRequest(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	v := newVerifier(t, ed)
	good := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if _, _, err := v.VerifyRequest(r); err != identity.ErrNoCredentials {
		t.Fatalf("no token: %v", err)
	}
	r.Header.Set("Authorization", "Bearer "+good[:len(good)-8]+"AAAAAAAA")
	if _, _, err := v.VerifyRequest(r); !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("bad token: %v", err)
	}
	r.Header.Set("Authorization", "Bearer "+good)
	c, tok, err := v.VerifyRequest(r)
	if err != nil || c.TenantID != "acme" || tok.Reveal() != good {
		t.Fatalf("good token: %v %v", c, err)
	}
}
