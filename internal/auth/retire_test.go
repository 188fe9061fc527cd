package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
)

// ringRetired reads the ring file as stored: the retired kids and until
// when each stays published.
func ringRetired(t *testing.T, path string) map[string]time.Time {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Retired []struct {
			Key   struct{ Kid string }
			Until time.Time
		}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, r := range f.Retired {
		out[r.Key.Kid] = r.Until
	}
	return out
}

// published reports the kids the issuer publishes (PublicKeys, JWKS) and
// the ones its Key source still finds.
func published(t *testing.T, iss *auth.Issuer, kids ...string) (listed, found []string) {
	t.Helper()
	for _, k := range iss.PublicKeys() {
		listed = append(listed, k.KeyID())
	}
	if diff := cmp.Diff(listed, jwksKids(t, iss.JWKSHandler())); diff != "" {
		t.Errorf("JWKS and PublicKeys differ (-PublicKeys +JWKS):\n%s", diff)
	}
	for _, kid := range kids {
		k, err := iss.Key(context.Background(), kid)
		switch {
		case err == nil && k != nil && k.KeyID() == kid && !k.IsPrivate():
			found = append(found, kid)
		case !errors.Is(err, identity.ErrUnknownKey) || k != nil:
			t.Errorf("Key(%s) = %v, %v; want a public key or ErrUnknownKey", kid, k, err)
		}
	}
	return listed, found
}

// A retired key is published, and found, for MaxTTL plus the leeway after
// it stopped signing (the last moment a token it signed can still be
// valid) and not an instant longer; a rotation drops the retired keys
// whose time is up from the ring file, so they are not kept forever.
func TestRetiredKeysStopBeingServed(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	const maxTTL, leeway = time.Hour, 45 * time.Second
	iss := open(t, path, clk, func(o *auth.Options) { o.MaxTTL, o.Leeway = maxTTL, leeway })
	ctx := context.Background()
	k0 := iss.KeyID()
	k1, err := iss.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until0 := t0.Add(maxTTL + leeway)
	if diff := cmp.Diff(map[string]time.Time{k0: until0}, ringRetired(t, path)); diff != "" {
		t.Fatalf("ring after the first rotation (-want +got):\n%s", diff)
	}

	clk.Add(30 * time.Minute)
	k2, err := iss.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until1 := t0.Add(30*time.Minute + maxTTL + leeway)
	if diff := cmp.Diff(map[string]time.Time{k0: until0, k1: until1}, ringRetired(t, path)); diff != "" {
		t.Fatalf("ring after the second rotation (-want +got):\n%s", diff)
	}

	steps := []struct {
		at            time.Time
		listed, found []string
	}{
		{t0.Add(30 * time.Minute), []string{k2, k1, k0}, []string{k0, k1, k2}},
		{until0.Add(-time.Nanosecond), []string{k2, k1, k0}, []string{k0, k1, k2}},
		{until0, []string{k2, k1}, []string{k1, k2}},
		{until1.Add(-time.Nanosecond), []string{k2, k1}, []string{k1, k2}},
		{until1, []string{k2}, []string{k2}},
		{until1.Add(1000 * time.Hour), []string{k2}, []string{k2}},
	}
	for _, s := range steps {
		clk.mu.Lock()
		clk.t = s.at
		clk.mu.Unlock()
		listed, found := published(t, iss, k0, k1, k2)
		if diff := cmp.Diff(s.listed, listed); diff != "" {
			t.Errorf("at %s, published (-want +got):\n%s", s.at.Sub(t0), diff)
		}
		if diff := cmp.Diff(s.found, found); diff != "" {
			t.Errorf("at %s, found by kid (-want +got):\n%s", s.at.Sub(t0), diff)
		}
	}

	// A rotation at the instant k0's time is up drops it from the file and
	// keeps k1, whose time is not.
	clk.mu.Lock()
	clk.t = until0
	clk.mu.Unlock()
	k3, err := iss.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{k1: until1, k2: until0.Add(maxTTL + leeway)}
	if diff := cmp.Diff(want, ringRetired(t, path)); diff != "" {
		t.Fatalf("ring after a rotation at k0's end (-want +got):\n%s", diff)
	}
	// Another process reading the ring sees the same.
	again := open(t, path, clk, func(o *auth.Options) { o.MaxTTL, o.Leeway = maxTTL, leeway })
	listed, _ := published(t, again, k0, k1, k2, k3)
	if diff := cmp.Diff([]string{k3, k2, k1}, listed); diff != "" {
		t.Errorf("reopened ring publishes (-want +got):\n%s", diff)
	}
}

// The bounds of Options and of the clock-driven rules, at their edges.
func TestIssuerEdges(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()

	// A default TTL equal to the maximum is allowed, one beyond it is not,
	// and a token may live exactly MaxTTL.
	clk := &clock{t: t0}
	iss := open(t, "", clk, func(o *auth.Options) { o.DefaultTTL, o.MaxTTL = time.Hour, time.Hour })
	tok, err := iss.Mint(ctx, claims, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := iss.Verify(ctx, tok)
	if err != nil || !c.Expiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a token of the default TTL: %v, expiry %v", err, c)
	}
	if _, err := iss.Mint(ctx, claims, time.Hour); err != nil {
		t.Fatalf("ttl = MaxTTL: %v", err)
	}
	if _, err := iss.Mint(ctx, claims, time.Hour+time.Second); !errors.Is(err, auth.ErrClaims) {
		t.Fatalf("ttl beyond MaxTTL: %v", err)
	}
	if _, err := auth.Open("", auth.Options{Issuer: issuer, DefaultTTL: time.Hour + 1, MaxTTL: time.Hour}); err == nil {
		t.Fatal("a default TTL beyond MaxTTL accepted")
	}

	// The leeway given is the verifier's: a token expired 90s ago passes
	// with 2 minutes, not with the default 30s.
	for _, tc := range []struct {
		leeway time.Duration
		ok     bool
	}{{2 * time.Minute, true}, {0, false}} {
		clk := &clock{t: t0}
		iss := open(t, "", clk, func(o *auth.Options) { o.Leeway = tc.leeway })
		tok, _ := iss.Mint(ctx, claims, time.Minute)
		clk.Add(time.Minute + 90*time.Second)
		if _, err := iss.Verify(ctx, tok); (err == nil) != tc.ok {
			t.Errorf("leeway %s, 90s past expiry: %v", tc.leeway, err)
		}
	}

	// Key lifetime: the key of exactly that age is replaced at the next
	// Mint, a moment younger is not.
	clk = &clock{t: t0}
	iss = open(t, filepath.Join(t.TempDir(), auth.KeyFile), clk, func(o *auth.Options) { o.KeyLifetime = 24 * time.Hour })
	first := iss.KeyID()
	clk.Add(24*time.Hour - time.Nanosecond)
	tok, _ = iss.Mint(ctx, claims, time.Minute)
	if kidOf(tok) != first {
		t.Fatal("rotated before the key lifetime")
	}
	clk.Add(time.Nanosecond)
	tok, _ = iss.Mint(ctx, claims, time.Minute)
	if kidOf(tok) == first || iss.KeyID() != kidOf(tok) {
		t.Fatal("not rotated at the key lifetime")
	}
}

// A server looks at the ring file again once a second has passed since it
// last did, not sooner: a key another process rotated in is unknown for
// just under a second, then found.
func TestRingReloadInterval(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	server := open(t, path, clk)
	cli := open(t, path, clk)
	newKid, err := cli.Rotate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second - time.Nanosecond)
	if _, err := server.Key(context.Background(), newKid); !errors.Is(err, identity.ErrUnknownKey) {
		t.Fatalf("within a second of the last look: %v, want the ring as loaded", err)
	}
	clk.Add(time.Nanosecond)
	if _, err := server.Key(context.Background(), newKid); err != nil {
		t.Fatalf("a second after the last look: %v", err)
	}
}
