package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
)

// keyServer serves a JWKS that the test can change, counting fetches.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []*jwk.Key
	status  int
	body    []byte
	fetches atomic.Int64
}

func newKeyServer(t *testing.T, keys ...*jwk.Key) *keyServer {
	ks := &keyServer{keys: keys, status: http.StatusOK}
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if r.URL.Path != identity.JWKSPath {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(ks.status)
		if ks.body != nil {
			w.Write(ks.body)
			return
		}
		json.NewEncoder(w).Encode(jwk.NewKeySet(ks.keys...))
	}))
	t.Cleanup(ks.Close)
	return ks
}

func (ks *keyServer) set(keys ...*jwk.Key) {
	ks.mu.Lock()
	ks.keys = keys
	ks.mu.Unlock()
}

// clock is a settable test clock.
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

func loopback() *netguard.Policy { return &netguard.Policy{AllowLoopback: true} }

func TestJWKSThrottlesRefresh(t *testing.T) {
	a := newTestKey(t, identity.EdDSA)
	ks := newKeyServer(t, a.Key)
	clk := &clock{t: now}
	src, err := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{
		Policy: loopback(), RefreshInterval: 30 * time.Second, CacheTTL: 5 * time.Minute, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := src.Key(ctx, a.KeyID()); err != nil {
		t.Fatal(err)
	}
	if n := ks.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for the first key, want 1", n)
	}
	// A flood of unknown kids, some concurrent, within one interval: at
	// most one more fetch.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := src.Key(ctx, "made-up-"+string(rune('a'+i%26)))
			if !errors.Is(err, identity.ErrUnknownKey) {
				t.Errorf("unknown kid: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := ks.fetches.Load(); n != 1 {
		// The first fetch was just now, so the interval has not passed.
		t.Fatalf("%d fetches after 200 unknown kids in the same interval, want 1", n)
	}
	// A key rotated in: found once the interval has passed, with one fetch.
	b := newTestKey(t, identity.EdDSA)
	ks.set(a.Key, b.Key)
	clk.Add(31 * time.Second)
	for range 50 {
		if _, err := src.Key(ctx, b.KeyID()); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Key(ctx, "still-made-up"); !errors.Is(err, identity.ErrUnknownKey) {
			t.Fatal(err)
		}
	}
	if n := ks.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Known keys are served from the cache until it expires, then fetched.
	clk.Add(4 * time.Minute)
	src.Key(ctx, a.KeyID())
	if n := ks.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches within the cache TTL, want 2", n)
	}
	clk.Add(2 * time.Minute)
	src.Key(ctx, a.KeyID())
	if n := ks.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches after the cache TTL, want 3", n)
	}
}

func TestJWKSKeepsKeysWhenFetchFails(t *testing.T) {
	a := newTestKey(t, identity.EdDSA)
	ks := newKeyServer(t, a.Key)
	clk := &clock{t: now}
	src, _ := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback(), Now: clk.Now})
	ctx := context.Background()
	if _, err := src.Key(ctx, a.KeyID()); err != nil {
		t.Fatal(err)
	}
	ks.mu.Lock()
	ks.status = http.StatusInternalServerError
	ks.mu.Unlock()
	clk.Add(time.Hour)
	if _, err := src.Key(ctx, a.KeyID()); err != nil {
		t.Fatalf("a cached key after a failed refresh: %v", err)
	}
	clk.Add(time.Hour)
	_, err := src.Key(ctx, "new-kid")
	if !errors.Is(err, identity.ErrKeysUnavailable) || errors.Is(err, identity.ErrInvalid) {
		t.Fatalf("unknown kid while the key server fails: %v, want ErrKeysUnavailable only", err)
	}
}

func TestJWKSLimits(t *testing.T) {
	a := newTestKey(t, identity.EdDSA)
	ks := newKeyServer(t, a.Key)
	ks.body = []byte(`{"keys":[` + strings.Repeat(`{"kty":"oct"},`, 1000) + `{}]}`)
	src, _ := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback(), MaxBytes: 1024})
	_, err := src.Key(context.Background(), a.KeyID())
	if !errors.Is(err, identity.ErrKeysUnavailable) || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Fatalf("oversize JWKS: %v", err)
	}
}

func TestJWKSURLGuarded(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1:8080/.well-known/jwks.json", // loopback, not opted in
		"http://169.254.169.254/latest/meta-data",     // metadata, never
		"http://10.0.0.1/.well-known/jwks.json",       // private, not opted in
		"file:///etc/passwd",
		"http://2130706433/",
	} {
		if _, err := identity.NewJWKS(u, nil); err == nil {
			t.Errorf("NewJWKS(%q) accepted", u)
		}
	}
	if _, err := identity.NewJWKS("http://169.254.169.254/", &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true, AllowPrivate: true}}); err == nil {
		t.Error("a metadata address accepted with every opt-in")
	}
}

func TestJWKSVerifierEndToEnd(t *testing.T) {
	a := newTestKey(t, identity.EdDSA)
	ks := newKeyServer(t, a.Key)
	v, err := identity.NewJWKSVerifier(ks.URL, testIssuer, &identity.JWKSOptions{Policy: loopback()}, &identity.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, a, "EdDSA", mustJSON(t, header("EdDSA", a.KeyID())), mustJSON(t, validClaims(now)))
	c, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.RunID != "run-42" {
		t.Fatal(c.RunID)
	}
}

// Two keys under one kid in a fetched key set: neither can be told from
// the other, so a token naming that kid is refused whichever of them
// signed it; the set's other keys still verify. An ambiguity that appears
// at a refresh drops a kid that was trusted before.
func TestJWKSRefusesAmbiguousKid(t *testing.T) {
	a, b, c, d := newTestKey(t, identity.EdDSA), newTestKey(t, identity.EdDSA), newTestKey(t, identity.ES256), newTestKey(t, identity.EdDSA)
	kid := a.KeyID()
	twin := testKey{Key: b.Key.WithKeyID(kid), priv: b.priv}
	third := testKey{Key: d.Key.WithKeyID(kid), priv: d.priv}
	tests := []struct {
		name    string
		set     []*jwk.Key
		refused []testKey // each signs a token naming its kid
		good    []testKey
	}{
		{"the first of two", []*jwk.Key{a.Key, twin.Key, c.Key}, []testKey{a, twin}, []testKey{c}},
		{"the second of two", []*jwk.Key{c.Key, twin.Key, a.Key}, []testKey{a, twin}, []testKey{c}},
		{"three", []*jwk.Key{a.Key, twin.Key, third.Key, c.Key}, []testKey{a, twin, third}, []testKey{c}},
		{"the same key twice", []*jwk.Key{a.Key, a.Key, c.Key}, []testKey{a}, []testKey{c}},
		{"no twin", []*jwk.Key{a.Key, c.Key}, nil, []testKey{a, c}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ks := newKeyServer(t, tc.set...)
			v, err := identity.NewJWKSVerifier(ks.URL, testIssuer, &identity.JWKSOptions{Policy: loopback()}, &identity.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			src, _ := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback()})
			for _, k := range tc.refused {
				tok := sign(t, k, k.Algorithm(), mustJSON(t, header(k.Algorithm(), k.KeyID())), mustJSON(t, validClaims(now)))
				if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrUnknownKey) {
					t.Errorf("a token under the ambiguous kid: %v, want ErrUnknownKey", err)
				}
				if key, err := src.Key(context.Background(), k.KeyID()); key != nil || !errors.Is(err, identity.ErrUnknownKey) {
					t.Errorf("Key(ambiguous kid) = %v, %v; want no key and ErrUnknownKey", key, err)
				}
			}
			for _, k := range tc.good {
				tok := sign(t, k, k.Algorithm(), mustJSON(t, header(k.Algorithm(), k.KeyID())), mustJSON(t, validClaims(now)))
				if _, err := v.Verify(context.Background(), tok); err != nil {
					t.Errorf("a token of an unambiguous key: %v", err)
				}
			}
		})
	}

	// Trusted, then ambiguous after a refresh: refused from then on, even
	// a token verified (and remembered) before.
	ks := newKeyServer(t, a.Key)
	clk := &clock{t: now}
	src, _ := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback(), Now: clk.Now,
		CacheTTL: time.Minute, RefreshInterval: time.Second})
	v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: clk.Now})
	tok := sign(t, a, "EdDSA", mustJSON(t, header("EdDSA", kid)), mustJSON(t, validClaims(now)))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	ks.set(a.Key, twin.Key)
	clk.Add(2 * time.Minute)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrUnknownKey) {
		t.Fatalf("after the kid became ambiguous: %v, want ErrUnknownKey", err)
	}
}
