package auth_test

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/keyfile"
	"novaos.dev/novaos/jwk"
)

const issuer = "http://127.0.0.1:8080"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, path string, clk *clock, mut ...func(*auth.Options)) *auth.Issuer {
	t.Helper()
	o := auth.Options{Issuer: issuer, Now: clk.Now}
	for _, m := range mut {
		m(&o)
	}
	iss, err := auth.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

var claims = identity.Claims{
	TenantID: "acme", AgentID: "agent-1", AgentName: "mailer", UserID: "user-7", RunID: "run-42",
	InstanceID: "inst-3", ConversationID: "conv-9", CallID: "call-5", Scopes: []string{"memory:read:*", "memory:write:agent"},
}

func TestOpenCreatesOwnerOnlyKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, auth.KeyFile)
	clk := &clock{t: time.Now()}
	iss := open(t, path, clk)
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
	}
	// The kid is the RFC 7638 thumbprint of the public key.
	pub := iss.PublicKeys()[0]
	raw, _ := pub.MarshalJSON()
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	tp, _ := jk.Thumbprint(crypto.SHA256)
	if want := base64.RawURLEncoding.EncodeToString(tp); iss.KeyID() != want || pub.KeyID() != want {
		t.Fatalf("kid %q, thumbprint %q", iss.KeyID(), want)
	}
	// Opening again reads the same key.
	if again := open(t, path, clk); again.KeyID() != iss.KeyID() {
		t.Fatal("a second Open made another key")
	}
}

func TestOpenConcurrentCreatesOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	clk := &clock{t: time.Now()}
	kids := make([]string, 8)
	var wg sync.WaitGroup
	for n := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			iss, err := auth.Open(path, auth.Options{Issuer: issuer, Now: clk.Now})
			if err != nil {
				t.Error(err)
				return
			}
			kids[n] = iss.KeyID()
		}()
	}
	wg.Wait()
	if len(slices.Compact(slices.Clone(kids))) != 1 || kids[0] == "" {
		t.Fatalf("racing Opens made several keys: %v", kids)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	clk := &clock{t: time.Now()}
	good := filepath.Join(dir, "good.key")
	open(t, good, clk)
	goodData, _ := os.ReadFile(good)

	tests := []struct {
		name, path string
		want       error
	}{
		{"empty", write("empty.key", "", 0o600), keyfile.ErrEmpty},
		{"not JSON", write("junk.key", "not a ring", 0o600), nil},
		{"public key only", write("pub.key", `{"active":{"key":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}`, 0o600), nil},
	}
	if runtime.GOOS != "windows" {
		tests = append(tests, struct {
			name, path string
			want       error
		}{"readable by others", write("loose.key", string(goodData), 0o644), keyfile.ErrLooseMode})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			_, err := auth.Open(tc.path, auth.Options{Issuer: issuer})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), `"d"`) || (len(goodData) > 0 && strings.Contains(err.Error(), string(goodData[:20]))) {
				t.Fatalf("error shows the file: %v", err)
			}
			after, _ := os.ReadFile(tc.path)
			if string(before) != string(after) {
				t.Fatal("Open rewrote a file it refused")
			}
		})
	}
}

func TestMintVerify(t *testing.T) {
	tests := []struct {
		name, alg, wantAlg string
	}{
		{"default", "", "RS256"},
		{"RS256", auth.RS256, "RS256"},
		{"EdDSA", auth.EdDSA, "EdDSA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
			withAlg := func(o *auth.Options) { o.Algorithm = tc.alg }
			iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk, withAlg)
			if iss.Algorithm() != tc.wantAlg || iss.PublicKeys()[0].Algorithm() != tc.wantAlg {
				t.Fatalf("Algorithm %q, key %v; want %s", iss.Algorithm(), iss.PublicKeys()[0], tc.wantAlg)
			}
			tok, err := iss.Mint(context.Background(), claims, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// Header: alg, typ JWT, kid the active key.
			h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
			var hdr map[string]any
			json.Unmarshal(h, &hdr)
			if diff := cmp.Diff(map[string]any{"alg": tc.wantAlg, "typ": "JWT", "kid": iss.KeyID()}, hdr); diff != "" {
				t.Fatalf("header (-want +got):\n%s", diff)
			}
			c, err := iss.Verify(context.Background(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if c.Issuer != issuer || !slices.Equal(c.Audience, []string{identity.DefaultAudience}) || c.Subject != "agent-1" ||
				c.ID == "" || !c.Expiry.Equal(clk.Now().Add(10*time.Minute)) || c.ConversationID != "conv-9" || c.CallID != "call-5" ||
				!c.HasScope("memory:read:tenant") {
				t.Fatalf("claims %+v", c)
			}
			// Expiry is enforced by the platform's verifier, with its leeway.
			clk.Add(10*time.Minute + identity.DefaultLeeway + time.Second)
			if _, err := iss.Verify(context.Background(), tok); !errors.Is(err, identity.ErrExpired) {
				t.Fatalf("after expiry: %v", err)
			}
			// A token of another ring is not the platform's.
			other := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk, withAlg)
			foreign, _ := other.Mint(context.Background(), claims, time.Minute)
			if _, err := iss.Verify(context.Background(), foreign); !errors.Is(err, identity.ErrUnknownKey) {
				t.Fatalf("foreign token: %v", err)
			}
		})
	}
	if _, err := auth.Open("", auth.Options{Issuer: issuer, Algorithm: "HS256"}); err == nil {
		t.Fatal("Open accepted algorithm HS256")
	}
}

func TestMintRefuses(t *testing.T) {
	clk := &clock{t: time.Now()}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk, func(o *auth.Options) { o.MaxTTL = time.Hour })
	tests := []struct {
		name string
		c    identity.Claims
		ttl  time.Duration
	}{
		{"no tenant", identity.Claims{AgentID: "a"}, time.Minute},
		{"bad scope", identity.Claims{TenantID: "t", Scopes: []string{"memory read"}}, time.Minute},
		{"bare star", identity.Claims{TenantID: "t", Scopes: []string{"*"}}, time.Minute},
		{"ttl beyond max", identity.Claims{TenantID: "t"}, 2 * time.Hour},
		{"negative ttl", identity.Claims{TenantID: "t"}, -time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := iss.Mint(context.Background(), tc.c, tc.ttl); !errors.Is(err, auth.ErrClaims) {
				t.Fatalf("Mint: %v, want ErrClaims", err)
			}
		})
	}
	tok, err := iss.Mint(context.Background(), identity.Claims{TenantID: "t"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := iss.Verify(context.Background(), tok)
	if got := c.Expiry.Sub(c.IssuedAt); got != auth.DefaultTTL {
		t.Fatalf("ttl 0 gave %s, want %s", got, auth.DefaultTTL)
	}
}

func jwksKids(t *testing.T, h http.Handler) []string {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, identity.JWKSPath, nil))
	if w.Code != http.StatusOK {
		t.Fatalf("JWKS status %d", w.Code)
	}
	set, err := jwk.ParseKeySet(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys() {
		kids = append(kids, k.KeyID())
	}
	return kids
}

func TestRotation(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	iss := open(t, path, clk, func(o *auth.Options) { o.MaxTTL = time.Hour })
	ctx := context.Background()
	oldKid := iss.KeyID()
	oldTok, _ := iss.Mint(ctx, claims, time.Hour) // the longest a token of the old key can live

	clk.Add(10 * time.Minute)
	newKid, err := iss.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newKid == oldKid || iss.KeyID() != newKid {
		t.Fatalf("after Rotate the active kid is %q (old %q, new %q)", iss.KeyID(), oldKid, newKid)
	}
	newTok, _ := iss.Mint(ctx, claims, time.Minute)
	if kidOf(newTok) != newKid {
		t.Fatal("a token minted after Rotate is not signed by the new key")
	}
	// Both verify, and the JWKS lists both, newest first.
	for _, tok := range []string{oldTok, newTok} {
		if _, err := iss.Verify(ctx, tok); err != nil {
			t.Fatalf("after rotation: %v", err)
		}
	}
	if kids := jwksKids(t, iss.JWKSHandler()); !slices.Equal(kids, []string{newKid, oldKid}) {
		t.Fatalf("JWKS kids %v, want [%s %s]", kids, newKid, oldKid)
	}
	// The old token verifies until it expires (with leeway)…
	clk.Add(50*time.Minute + identity.DefaultLeeway - time.Second)
	if _, err := iss.Verify(ctx, oldTok); err != nil {
		t.Fatalf("old token before its expiry: %v", err)
	}
	clk.Add(2 * time.Second)
	if _, err := iss.Verify(ctx, oldTok); !errors.Is(err, identity.ErrExpired) {
		t.Fatalf("old token after its expiry: %v", err)
	}
	// Once no token it could have signed (up to MaxTTL after it retired)
	// can still be valid, the old key is gone.
	if kids := jwksKids(t, iss.JWKSHandler()); len(kids) != 2 {
		t.Fatalf("JWKS kids %v before the old key's last possible expiry", kids)
	}
	clk.Add(10 * time.Minute)
	if kids := jwksKids(t, iss.JWKSHandler()); !slices.Equal(kids, []string{newKid}) {
		t.Fatalf("JWKS kids after the old key's last expiry %v, want [%s]", kids, newKid)
	}
	// The file agrees: another process sees the same.
	if again := open(t, path, clk); again.KeyID() != newKid || len(again.PublicKeys()) != 1 {
		t.Fatalf("reopened ring: kid %s, %d keys", again.KeyID(), len(again.PublicKeys()))
	}
}

// A rotation by another process (novaos token rotate beside a running
// server) is picked up by the server without a restart.
func TestRotationByAnotherProcess(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	server := open(t, path, clk)
	cli := open(t, path, clk)
	newKid, err := cli.Rotate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cli.Mint(context.Background(), claims, time.Minute)
	clk.Add(2 * time.Second) // past the server's once-a-second look at the file
	if _, err := server.Verify(context.Background(), tok); err != nil {
		t.Fatalf("server verifying a token of the key another process rotated in: %v", err)
	}
	if kids := jwksKids(t, server.JWKSHandler()); len(kids) != 2 || kids[0] != newKid {
		t.Fatalf("server JWKS %v", kids)
	}
}

func TestKeyLifetimeRotates(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk, func(o *auth.Options) { o.KeyLifetime = 24 * time.Hour })
	first := iss.KeyID()
	tok1, _ := iss.Mint(context.Background(), claims, time.Minute)
	clk.Add(25 * time.Hour)
	tok2, _ := iss.Mint(context.Background(), claims, time.Minute)
	if kidOf(tok1) != first || kidOf(tok2) == first {
		t.Fatalf("kids %s then %s, first key %s", kidOf(tok1), kidOf(tok2), first)
	}
}

func TestJWKSHandler(t *testing.T) {
	clk := &clock{t: time.Now()}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk)
	h := iss.JWKSHandler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, identity.JWKSPath, nil))
	if ct, cc := w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"); ct != "application/jwk-set+json" || cc != "public, max-age=300" {
		t.Fatalf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	if strings.Contains(w.Body.String(), `"d"`) {
		t.Fatal("the JWKS holds a private member")
	}
	if kids := jwksKids(t, h); !slices.Equal(kids, []string{iss.KeyID()}) {
		t.Fatalf("kids %v, want the token key alone", kids)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, identity.JWKSPath, nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

// The card key has a key set of its own: private members never served,
// nil keys skipped, its own max-age.
func TestKeySetHandler(t *testing.T) {
	card, _ := jwk.GenerateKey(jwk.ES256)
	tests := []struct {
		name   string
		maxAge time.Duration
		keys   []*jwk.Key
		kids   []string
		cc     string
	}{
		{"card key", time.Minute, []*jwk.Key{card}, []string{card.KeyID()}, "public, max-age=60"},
		{"default max-age, nil skipped", 0, []*jwk.Key{nil, card, nil}, []string{card.KeyID()}, "public, max-age=300"},
		{"no key", -time.Second, nil, nil, "public, max-age=300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := auth.KeySetHandler(tc.maxAge, tc.keys...)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/agent-card-jwks.json", nil))
			if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != tc.cc || strings.Contains(w.Body.String(), `"d"`) {
				t.Fatalf("status %d, Cache-Control %q, body %d bytes", w.Code, w.Header().Get("Cache-Control"), w.Body.Len())
			}
			if diff := cmp.Diff(tc.kids, jwksKids(t, h)); diff != "" {
				t.Errorf("kids (-want +got):\n%s", diff)
			}
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodDelete, "/", nil))
			if w.Code != http.StatusMethodNotAllowed {
				t.Errorf("DELETE: %d", w.Code)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	clk := &clock{t: time.Now()}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk)
	var tenant string
	h := iss.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := identity.FromContext(r.Context())
		tenant = c.TenantID
	}))
	tok, _ := iss.Mint(context.Background(), claims, time.Minute)
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"Bearer " + tok, http.StatusOK},
		{"Bearer " + tok[:len(tok)-4] + "AAAA", http.StatusUnauthorized},
		{"", http.StatusUnauthorized},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/mcp", strings.NewReader(`{"tenant_id":"globex"}`))
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Fatalf("status %d, want %d", w.Code, tc.status)
		}
		if tc.status == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
		}
	}
	if tenant != "acme" {
		t.Fatalf("tenant %q: identity must come from the token, not the body", tenant)
	}
}

func kidOf(tok string) string {
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var hdr struct{ Kid string }
	json.Unmarshal(h, &hdr)
	return hdr.Kid
}

func TestInMemoryRing(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	t.Chdir(dir)
	iss := open(t, "", clk)
	ctx := context.Background()
	old, err := iss.Mint(ctx, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, _ := iss.Mint(ctx, claims, time.Minute)
	for _, tok := range []string{old, fresh} {
		if _, err := iss.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if kidOf(old) == kidOf(fresh) || len(jwksKids(t, iss.JWKSHandler())) != 2 {
		t.Fatal("rotation in memory did not make a second key")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an in-memory ring wrote %v", entries)
	}
}

// The verifier remembers a verified token only while the key source
// returns the same key, so Key must not make a new one per call, also
// across the ring's periodic look at its file.
func TestKeyIsStable(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	iss := open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk)
	ctx := context.Background()
	first, err := iss.Key(ctx, iss.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(5 * time.Second)
	again, err := iss.Key(ctx, iss.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	if first != again || first.IsPrivate() {
		t.Fatalf("Key gave %p then %p (private %v); want the same public key", first, again, first.IsPrivate())
	}
	if pub := iss.PublicKeys(); pub[0] != first {
		t.Fatal("PublicKeys()[0] is not the key Key returns")
	}
}

// BenchmarkVerify is the platform verifier on a token it saw before (what
// every request of a session costs) against minting, whose signature is
// about what a first sight costs.
func BenchmarkVerify(b *testing.B) {
	iss, err := auth.Open(filepath.Join(b.TempDir(), auth.KeyFile), auth.Options{Issuer: issuer})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tok, err := iss.Mint(ctx, claims, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("repeated", func(b *testing.B) {
		for b.Loop() {
			if _, err := iss.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mint", func(b *testing.B) {
		for b.Loop() {
			if _, err := iss.Mint(ctx, claims, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
}
