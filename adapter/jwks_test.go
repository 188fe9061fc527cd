package adapter

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// jwksServer serves a key set and counts its fetches.
type jwksServer struct {
	mu           sync.Mutex
	body         string
	cacheControl string
	status       int
	fetches      int
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	if s.cacheControl != "" {
		w.Header().Set("Cache-Control", s.cacheControl)
	}
	if s.status != 0 {
		w.WriteHeader(s.status)
	}
	_, _ = w.Write([]byte(s.body))
}

func (s *jwksServer) set(body, cacheControl string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.cacheControl = body, cacheControl
}

func (s *jwksServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// jwksSet renders a key set of Ed25519 keys by key id.
func jwksSet(t testing.TB, keys map[string]ed25519.PublicKey) string {
	t.Helper()
	set := struct {
		Keys []map[string]string `json:"keys"`
	}{Keys: []map[string]string{}}
	for kid, k := range keys {
		set.Keys = append(set.Keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "x": verifyB64Enc(k), "kid": kid, "alg": "EdDSA", "use": "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jwksStart(t *testing.T, body, cacheControl string) (*jwksServer, *JWKSCache, *verifyClock) {
	t.Helper()
	srv := &jwksServer{body: body, cacheControl: cacheControl}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	clock := &verifyClock{now: verifyT0}
	s := DefaultSettings()
	s.JWKSRefreshMinInterval = time.Minute
	c, err := NewJWKSCache(hs.URL+"/api/v1/delivery/jwks", &JWKSOptions{Client: hs.Client(), Clock: clock, Settings: &s})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, clock
}

func TestJWKSUsableKeys(t *testing.T) {
	x := verifyB64Enc(verifyPub)
	key := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	good := func(kid string) map[string]any {
		return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid}
	}
	with := func(kid, k string, v any) map[string]any { m := good(kid); m[k] = v; return m }
	without := func(kid, k string) map[string]any { m := good(kid); delete(m, k); return m }
	members := []string{
		key(good("plain")),
		key(with("alg-eddsa", "alg", "EdDSA")),
		key(with("use-sig", "use", "sig")),
		key(with("x-private-too", "d", x)),
		key(with("rsa", "kty", "RSA")),
		key(with("x25519", "crv", "X25519")),
		key(with("short-x", "x", verifyB64Enc(verifyPub[:31]))),
		key(with("long-x", "x", verifyB64Enc(append(verifyPub[:32:32], 0)))),
		key(with("padded-x", "x", x+"=")),
		key(with("alg-es256", "alg", "ES256")),
		key(with("use-enc", "use", "enc")),
		key(with("alg-null", "alg", nil)),
		key(with("kty-lower", "kty", "okp")),
		key(without("no-kty", "kty")),
		key(without("no-x", "x")),
		key(good("")),
		key(good("shared")),
		key(with("shared", "x", verifyB64Enc(verifyOther.Public().(ed25519.PublicKey)))),
		key(good("shared")),
		`{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"case","Kid":"other"}`,
		`{"KTY":"OKP","crv":"Ed25519","x":"` + x + `","kid":"kty-upper"}`,
		`"not an object"`,
	}
	got, err := jwksParse([]byte(`{"keys":[` + strings.Join(members, ",") + `]}`))
	if err == nil {
		t.Fatalf("a key naming kid twice (in two cases) was accepted: %v", got)
	}
	got, err = jwksParse([]byte(`{"keys":[` + strings.Join(members[:len(members)-3], ",") + `,` + members[len(members)-2] + `,` + members[len(members)-1] + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for kid, k := range got {
		if !k.Equal(verifyPub) {
			t.Errorf("key %q is not the published one", kid)
		}
		kids = append(kids, kid)
	}
	want := map[string]bool{"plain": true, "alg-eddsa": true, "use-sig": true, "x-private-too": true}
	if len(got) != len(want) {
		t.Errorf("usable keys %v, want %v", kids, want)
	}
	for kid := range want {
		if got[kid] == nil {
			t.Errorf("key %q left out", kid)
		}
	}

	for _, bad := range []string{`[]`, `{}`, `{"keys":{}}`, `{"keys":[],"keys":[]}`, `{"keys":[]} x`, `not json`} {
		if _, err := jwksParse([]byte(bad)); err == nil {
			t.Errorf("key set %s accepted", bad)
		}
	}
}

func TestJWKSCacheControl(t *testing.T) {
	body := jwksSet(t, map[string]ed25519.PublicKey{verifyKid: verifyPub})
	cases := []struct {
		name         string
		cacheControl string
		// fetches after a use at 0, 59s, 60s, 61s
		want []int
	}{
		{"max-age", "public, max-age=60", []int{1, 1, 2, 2}},
		{"max-age quoted and spaced", `max-age = "60"`, []int{1, 1, 2, 2}},
		{"absent: fetched on every use", "", []int{1, 2, 3, 4}},
		{"no-store", "no-store, max-age=60", []int{1, 2, 3, 4}},
		{"no-cache", "max-age=60, no-cache", []int{1, 2, 3, 4}},
		{"malformed", "max-age=soon", []int{1, 2, 3, 4}},
		{"repeated", "max-age=60, max-age=3600", []int{1, 2, 3, 4}},
		{"capped", "max-age=999999999999999", []int{1, 1, 1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, cache, clock := jwksStart(t, body, c.cacheControl)
			for i, at := range []time.Duration{0, 59 * time.Second, 60 * time.Second, 61 * time.Second} {
				clock.Set(verifyT0.Add(at))
				k, err := cache.Key(context.Background(), verifyKid)
				if err != nil || !k.Equal(verifyPub) {
					t.Fatalf("Key at %v: %v", at, err)
				}
				if n := srv.count(); n != c.want[i] {
					t.Fatalf("after the use at %v: %d fetches, want %d", at, n, c.want[i])
				}
			}
		})
	}
}

func TestJWKSUnknownKidReloadsOnceAndThrottles(t *testing.T) {
	srv, cache, clock := jwksStart(t, jwksSet(t, map[string]ed25519.PublicKey{"k-old": verifyPub}), "max-age=3600")
	ctx := context.Background()
	if _, err := cache.Key(ctx, "k-old"); err != nil || srv.count() != 1 {
		t.Fatalf("first use: %v, %d fetches", err, srv.count())
	}

	// An unknown kid: one forced reload, still unknown.
	if _, err := cache.Key(ctx, "k-new"); !errors.Is(err, ErrUnknownKey) || srv.count() != 2 {
		t.Fatalf("unknown kid: %v, %d fetches; want ErrUnknownKey after one reload", err, srv.count())
	}
	// The platform rotates; within the throttle nothing is fetched.
	srv.set(jwksSet(t, map[string]ed25519.PublicKey{"k-old": verifyPub, "k-new": verifyPub}), "max-age=3600")
	clock.Advance(59 * time.Second)
	for range 5 {
		if _, err := cache.Key(ctx, "k-new"); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("within the throttle: %v", err)
		}
	}
	if srv.count() != 2 {
		t.Fatalf("%d fetches within the throttle, want 2", srv.count())
	}
	// A known kid is served from the cache meanwhile.
	if _, err := cache.Key(ctx, "k-old"); err != nil || srv.count() != 2 {
		t.Fatalf("known kid: %v, %d fetches", err, srv.count())
	}
	// After the interval, one reload finds the new key.
	clock.Advance(time.Second)
	if k, err := cache.Key(ctx, "k-new"); err != nil || !k.Equal(verifyPub) || srv.count() != 3 {
		t.Fatalf("after the interval: %v, %d fetches", err, srv.count())
	}
	// A made-up kid right after: throttled again.
	if _, err := cache.Key(ctx, "k-made-up"); !errors.Is(err, ErrUnknownKey) || srv.count() != 3 {
		t.Fatalf("made-up kid: %v, %d fetches", err, srv.count())
	}

	// Through the verifier, an unknown kid is VerdictUnknownKey.
	v := NewVerifier(cache, &VerifierOptions{Clock: clock})
	h := verifyHeaderMap()
	h["kid"] = "k-made-up"
	got, err := v.Check(ctx, verifyMint(t, h, verifyClaimsMap(), verifySignEd(verifyPriv)), verifyExpect(), verifyActual)
	if err != nil || got.Verdict != VerdictUnknownKey {
		t.Fatalf("verdict %v, %v; want unknown_key", got.Verdict, err)
	}
	clock.Set(verifyT0.Add(time.Minute))
	got, err = v.Check(ctx, verifyMint(t, verifyHeaderMap(), verifyClaimsMap(), verifySignEd(verifyPriv)), verifyExpect(), verifyActual)
	if err != nil || got.Verdict != VerdictUnknownKey {
		// k-2026-12 is not published: still unknown, after a reload.
		t.Fatalf("verdict %v, %v; want unknown_key", got.Verdict, err)
	}
	srv.set(jwksSet(t, map[string]ed25519.PublicKey{verifyKid: verifyPub}), "max-age=3600")
	clock.Advance(time.Minute)
	got, err = v.Check(ctx, verifyMint(t, verifyHeaderMap(), verifyClaimsMap(), verifySignEd(verifyPriv)), verifyExpect(), verifyActual)
	if err != nil || got.Verdict != VerdictValid {
		t.Fatalf("verdict %v, %v; want valid after the key is published", got.Verdict, err)
	}
}

func TestJWKSFetchFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("status", func(t *testing.T) {
		srv, cache, _ := jwksStart(t, "{}", "")
		srv.status = http.StatusBadGateway
		if _, err := cache.Key(ctx, verifyKid); err == nil || errors.Is(err, ErrUnknownKey) {
			t.Fatalf("err %v, want a fetch error", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, cache, _ := jwksStart(t, `{"keys":[],"pad":"`+strings.Repeat("x", DefaultJWKSMaxBytes)+`"}`, "")
		if _, err := cache.Key(ctx, verifyKid); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err %v, want too large", err)
		}
	})
	t.Run("malformed keeps the held keys", func(t *testing.T) {
		srv, cache, clock := jwksStart(t, jwksSet(t, map[string]ed25519.PublicKey{verifyKid: verifyPub}), "max-age=10")
		if _, err := cache.Key(ctx, verifyKid); err != nil {
			t.Fatal(err)
		}
		srv.set(`{"keys":[`, "max-age=10")
		clock.Advance(10 * time.Second)
		if _, err := cache.Key(ctx, verifyKid); err == nil {
			t.Fatal("a malformed set was taken")
		}
		srv.set(jwksSet(t, map[string]ed25519.PublicKey{verifyKid: verifyPub}), "max-age=10")
		if _, err := cache.Key(ctx, verifyKid); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("context ends while waiting", func(t *testing.T) {
		_, cache, _ := jwksStart(t, "{}", "")
		cache.lock <- struct{}{} // a fetch in flight
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := cache.Key(cctx, verifyKid); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want canceled", err)
		}
	})
}

func TestNewJWKSCacheURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://novaos.example.com/api/v1/delivery/jwks": true,
		"http://127.0.0.1:8080/api/v1/delivery/jwks":      true,
		"http://[::1]:8080/jwks":                          true,
		"http://localhost/jwks":                           true,
		"http://127.0.0.2/jwks":                           false,
		"http://novaos.example.com/jwks":                  false,
		"/api/v1/delivery/jwks":                           false,
		"ftp://novaos.example.com/jwks":                   false,
		"https:///jwks":                                   false,
		"://bad":                                          false,
	} {
		if _, err := NewJWKSCache(u, nil); (err == nil) != ok {
			t.Errorf("%s: err %v, want ok %v", u, err, ok)
		}
	}
}

func TestJWKSFetchCarriesTraceContext(t *testing.T) {
	var got string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Traceparent")
		_, _ = w.Write([]byte(jwksSet(t, map[string]ed25519.PublicKey{verifyKid: verifyPub})))
	}))
	defer hs.Close()
	cache, err := NewJWKSCache(hs.URL, &JWKSOptions{Client: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	if _, err := cache.Key(trace.ContextWithSpanContext(context.Background(), sc), verifyKid); err != nil {
		t.Fatal(err)
	}
	if want := "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"; got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
}

// FuzzJWKSParse: no key set panics the parser, and every key it keeps is
// a 32-byte Ed25519 key under a non-empty key id.
func FuzzJWKSParse(f *testing.F) {
	f.Add(jwksSet(f, map[string]ed25519.PublicKey{verifyKid: verifyPub}))
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + verifyB64Enc(verifyPub) + `","kid":"a","alg":"EdDSA","use":"sig"},{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"r"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + verifyB64Enc(verifyPub) + `","kid":"a"},{"kty":"OKP","crv":"Ed25519","x":"` + verifyB64Enc(verifyPub) + `","kid":"a"}]}`)
	f.Add(`{"keys":[null,1,"x",[],{}]}`)
	f.Fuzz(func(t *testing.T, data string) {
		keys, err := jwksParse([]byte(data))
		if err != nil {
			return
		}
		for kid, k := range keys {
			if kid == "" || len(k) != ed25519.PublicKeySize {
				t.Fatalf("kept key %q of %d bytes", kid, len(k))
			}
		}
	})
}
