package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/auth/authtest"
	"novaos.dev/novaos/jwk"
)

// ringCompanion reads the ring file's companion as stored: its kid and
// when it was made; "" when the ring has none.
func ringCompanion(t *testing.T, path string) (kid string, created time.Time) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Companion *struct {
			Key     struct{ Kid string }
			Created time.Time
		}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Companion == nil {
		return "", time.Time{}
	}
	return f.Companion.Key.Kid, f.Companion.Created
}

// kids lists the kids of keys.
func kids(keys []*jwk.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.KeyID())
	}
	return out
}

// jwksVerifier is a verifier that knows nothing of the issuer but its
// JWKS, as an agent's: the keys its handler serves, of the algorithms
// algs (all when none).
func jwksVerifier(t *testing.T, iss *auth.Issuer, clk *clock, algs ...string) *identity.Verifier {
	t.Helper()
	w := httptest.NewRecorder()
	iss.JWKSHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, identity.JWKSPath, nil))
	set, err := jwk.ParseKeySet(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewStaticKeys(set.Keys()...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := identity.New(keys, identity.Options{Issuer: issuer, Algorithms: algs, Now: clk.Now, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func otherAlg(alg string) string {
	if alg == auth.RS256 {
		return auth.EdDSA
	}
	return auth.RS256
}

// A token of the other algorithm is signed by the companion, which the
// ring publishes after the active key: the platform's verifier and one
// that knows only the JWKS accept it, and it stays the same key.
func TestMintAs(t *testing.T) {
	tests := []struct {
		name, ringAlg string
		inMemory      bool
	}{
		{"EdDSA on an RS256 ring", auth.RS256, false},
		{"RS256 on an EdDSA ring", auth.EdDSA, false},
		{"EdDSA on an in-memory RS256 ring", auth.RS256, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
			path := ""
			if !tc.inMemory {
				path = filepath.Join(t.TempDir(), auth.KeyFile)
			}
			iss := open(t, path, clk, func(o *auth.Options) { o.Algorithm = tc.ringAlg })
			ctx := context.Background()
			as := otherAlg(tc.ringAlg)
			active := iss.KeyID()
			tok, err := iss.MintAs(ctx, as, claims, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			comp := kidOf(tok)
			if algOf(tok) != as || comp == active || comp == "" || iss.KeyID() != active {
				t.Fatalf("MintAs(%s): alg %s, kid %s (active %s, now %s)", as, algOf(tok), comp, active, iss.KeyID())
			}
			if diff := cmp.Diff([]string{active, comp}, kids(iss.PublicKeys())); diff != "" {
				t.Fatalf("PublicKeys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{active, comp}, jwksKids(t, iss.JWKSHandler())); diff != "" {
				t.Fatalf("JWKS (-want +got):\n%s", diff)
			}
			c, err := iss.Verify(ctx, tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.TenantID != "acme" || c.Issuer != issuer || c.Subject != "agent-1" || c.ID == "" ||
				!c.Expiry.Equal(clk.Now().Add(10*time.Minute)) {
				t.Fatalf("claims %+v", c)
			}
			for _, algs := range [][]string{nil, {as}} {
				if _, err := jwksVerifier(t, iss, clk, algs...).Verify(ctx, tok); err != nil {
					t.Fatalf("a verifier of the JWKS (algorithms %v): %v", algs, err)
				}
			}
			// The active key keeps signing Mint's tokens, and the
			// companion every later token of its algorithm.
			if mt, _ := iss.Mint(ctx, claims, time.Minute); kidOf(mt) != active || algOf(mt) != tc.ringAlg {
				t.Fatalf("Mint after MintAs: kid %s, alg %s", kidOf(mt), algOf(mt))
			}
			clk.Add(5 * time.Second)
			if again, _ := iss.MintAs(ctx, as, claims, time.Minute); kidOf(again) != comp {
				t.Fatalf("a second MintAs signed with %s, the first with %s", kidOf(again), comp)
			}
			if key, err := iss.Key(ctx, comp); err != nil || key.IsPrivate() || key.Algorithm() != as {
				t.Fatalf("Key(companion) = %v, %v", key, err)
			}
			if !tc.inMemory {
				if kid, created := ringCompanion(t, path); kid != comp || !created.Equal(clk.Now().Add(-5*time.Second)) {
					t.Fatalf("ring file companion %s made %v, want %s", kid, created, comp)
				}
			}
		})
	}
}

// MintAs of the ring's own algorithm is Mint: the active key signs, and
// no companion is made.
func TestMintAsActiveAlgorithm(t *testing.T) {
	for _, alg := range []string{auth.RS256, auth.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
			path := filepath.Join(t.TempDir(), auth.KeyFile)
			iss := open(t, path, clk, func(o *auth.Options) { o.Algorithm = alg })
			tok, err := iss.MintAs(context.Background(), alg, claims, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if kidOf(tok) != iss.KeyID() || algOf(tok) != alg {
				t.Fatalf("kid %s alg %s, want the active key %s", kidOf(tok), algOf(tok), iss.KeyID())
			}
			if kid, _ := ringCompanion(t, path); kid != "" || len(iss.PublicKeys()) != 1 {
				t.Fatalf("companion %q, %d keys published: want none made", kid, len(iss.PublicKeys()))
			}
			if _, err := iss.Verify(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// MintAs refuses an algorithm it has no key of, and claims Mint refuses,
// before it makes any key.
func TestMintAsRefuses(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	iss := open(t, path, clk, func(o *auth.Options) { o.MaxTTL = time.Hour })
	tests := []struct {
		name, alg string
		c         identity.Claims
		ttl       time.Duration
	}{
		{"no algorithm", "", claims, time.Minute},
		{"HS256", "HS256", claims, time.Minute},
		{"ES256", "ES256", claims, time.Minute},
		{"none", "none", claims, time.Minute},
		{"lower case", "eddsa", claims, time.Minute},
		{"no tenant", auth.EdDSA, identity.Claims{AgentID: "a"}, time.Minute},
		{"bad scope", auth.EdDSA, identity.Claims{TenantID: "t", Scopes: []string{"memory read"}}, time.Minute},
		{"ttl beyond max", auth.EdDSA, claims, 2 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := iss.MintAs(context.Background(), tc.alg, tc.c, tc.ttl)
			if !errors.Is(err, auth.ErrClaims) || tok != "" {
				t.Fatalf("MintAs(%q): %q, %v; want ErrClaims", tc.alg, tok, err)
			}
		})
	}
	if kid, _ := ringCompanion(t, path); kid != "" || len(iss.PublicKeys()) != 1 {
		t.Fatalf("refused MintAs calls made a companion %q", kid)
	}
}

// Processes sharing a ring share its companion: one opened later signs
// with the companion in the file, and ones asking for it at once make a
// single one.
func TestCompanionShared(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	ctx := context.Background()

	path := filepath.Join(t.TempDir(), auth.KeyFile)
	first := open(t, path, clk)
	tok, err := first.MintAs(ctx, auth.EdDSA, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	second := open(t, path, clk)
	tok2, err := second.MintAs(ctx, auth.EdDSA, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if kidOf(tok2) != kidOf(tok) {
		t.Fatalf("the second process signed with %s, the companion is %s", kidOf(tok2), kidOf(tok))
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the second process rewrote the ring")
	}
	if _, err := second.Verify(ctx, tok); err != nil {
		t.Fatalf("the second process verifying the first's token: %v", err)
	}

	path = filepath.Join(t.TempDir(), auth.KeyFile)
	open(t, path, clk)
	replicas := []*auth.Issuer{open(t, path, clk), open(t, path, clk), open(t, path, clk), open(t, path, clk)}
	var mu sync.Mutex
	signed := map[string]bool{}
	var wg sync.WaitGroup
	for _, r := range replicas {
		for range 3 {
			wg.Go(func() {
				tok, err := r.MintAs(ctx, auth.EdDSA, claims, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				signed[kidOf(tok)] = true
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	kid, _ := ringCompanion(t, path)
	if len(signed) != 1 || !signed[kid] {
		t.Fatalf("replicas signed with %v, the ring's companion is %q: want that one alone", signed, kid)
	}
	if retired := ringRetired(t, path); len(retired) != 0 {
		t.Fatalf("retired %v: a companion was made and replaced", retired)
	}
}

// Every rotation retires the companion with the active key: both stay
// published until MaxTTL plus the leeway after the rotation, their tokens
// keep verifying, and the new ring has no companion until a token of the
// other algorithm is asked for.
func TestRotationRetiresCompanion(t *testing.T) {
	const maxTTL = time.Hour
	tests := []struct {
		name string
		opts func(*auth.Options)
		// rotate rotates the ring of iss, 30 minutes after it was made,
		// and returns the issuer that did.
		rotate func(t *testing.T, iss *auth.Issuer, path string, clk *clock) *auth.Issuer
	}{
		{"Rotate", nil, func(t *testing.T, iss *auth.Issuer, _ string, _ *clock) *auth.Issuer {
			if _, err := iss.Rotate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return iss
		}},
		{"key lifetime", func(o *auth.Options) { o.KeyLifetime = 30 * time.Minute }, func(t *testing.T, iss *auth.Issuer, _ string, _ *clock) *auth.Issuer {
			if _, err := iss.Mint(context.Background(), claims, time.Minute); err != nil {
				t.Fatal(err)
			}
			return iss
		}},
		{"algorithm change", nil, func(t *testing.T, _ *auth.Issuer, path string, clk *clock) *auth.Issuer {
			ed := open(t, path, clk, func(o *auth.Options) { o.MaxTTL, o.Algorithm = maxTTL, auth.EdDSA })
			if _, err := ed.Mint(context.Background(), claims, time.Minute); err != nil {
				t.Fatal(err)
			}
			return ed
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			clk := &clock{t: t0}
			path := filepath.Join(t.TempDir(), auth.KeyFile)
			iss := open(t, path, clk, func(o *auth.Options) {
				o.MaxTTL = maxTTL
				if tc.opts != nil {
					tc.opts(o)
				}
			})
			ctx := context.Background()
			activeTok, _ := iss.Mint(ctx, claims, maxTTL)
			compTok, err := iss.MintAs(ctx, auth.EdDSA, claims, maxTTL)
			if err != nil {
				t.Fatal(err)
			}
			oldActive, oldComp := kidOf(activeTok), kidOf(compTok)

			clk.Add(30 * time.Minute)
			signer := tc.rotate(t, iss, path, clk)
			newActive := signer.KeyID()
			until := clk.Now().UTC().Add(maxTTL + identity.DefaultLeeway)
			if diff := cmp.Diff(map[string]time.Time{oldActive: until, oldComp: until}, ringRetired(t, path)); diff != "" {
				t.Fatalf("retired (-want +got):\n%s", diff)
			}
			if kid, _ := ringCompanion(t, path); kid != "" || newActive == oldActive {
				t.Fatalf("after the rotation: companion %q, active %s (was %s)", kid, newActive, oldActive)
			}
			if diff := cmp.Diff([]string{newActive, oldActive, oldComp}, kids(signer.PublicKeys())); diff != "" {
				t.Fatalf("published (-want +got):\n%s", diff)
			}

			// A token of the other algorithm gets a new companion.
			other := otherAlg(signer.Algorithm())
			newTok, err := signer.MintAs(ctx, other, claims, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			newComp := kidOf(newTok)
			if slices.Contains([]string{oldActive, oldComp, newActive}, newComp) || algOf(newTok) != other {
				t.Fatalf("new companion %s (%s): want a new key", newComp, algOf(newTok))
			}
			if diff := cmp.Diff([]string{newActive, newComp, oldActive, oldComp}, kids(signer.PublicKeys())); diff != "" {
				t.Fatalf("published (-want +got):\n%s", diff)
			}

			// The old tokens verify until they expire, their keys are
			// published until until, and not an instant longer.
			clk.mu.Lock()
			clk.t = t0.Add(maxTTL + identity.DefaultLeeway - time.Second)
			clk.mu.Unlock()
			for _, tok := range []string{activeTok, compTok} {
				if _, err := signer.Verify(ctx, tok); err != nil {
					t.Fatalf("a token of a retired key before its expiry: %v", err)
				}
			}
			clk.mu.Lock()
			clk.t = until.Add(-time.Nanosecond)
			clk.mu.Unlock()
			if _, found := published(t, signer, oldActive, oldComp); len(found) != 2 {
				t.Fatalf("a moment before until, found %v", found)
			}
			clk.Add(time.Nanosecond)
			if listed, found := published(t, signer, oldActive, oldComp); len(found) != 0 || !slices.Equal(listed, []string{newActive, newComp}) {
				t.Fatalf("at until: listed %v, found %v", listed, found)
			}
		})
	}
}

// A companion older than KeyLifetime is replaced at its next signature,
// retired like a rotated key, and the active key stays: the companion of
// a process whose clock runs behind the one that made the active key.
func TestCompanionKeyLifetime(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const lifetime, maxTTL = 24 * time.Hour, time.Hour
	opts := func(o *auth.Options) { o.KeyLifetime, o.MaxTTL = lifetime, maxTTL }
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	clk := &clock{t: t0}
	iss := open(t, path, clk, opts)
	active := iss.KeyID()
	behind := open(t, path, &clock{t: t0.Add(-20 * time.Hour)}, opts)
	ctx := context.Background()
	old, err := behind.MintAs(ctx, auth.EdDSA, claims, maxTTL)
	if err != nil {
		t.Fatal(err)
	}
	oldComp := kidOf(old)

	clk.Add(4*time.Hour - time.Nanosecond)
	tok, err := iss.MintAs(ctx, auth.EdDSA, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if kidOf(tok) != oldComp {
		t.Fatalf("a moment before its lifetime the companion was replaced: %s, was %s", kidOf(tok), oldComp)
	}
	clk.Add(time.Nanosecond)
	tok, err = iss.MintAs(ctx, auth.EdDSA, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	newComp := kidOf(tok)
	if newComp == oldComp || iss.KeyID() != active {
		t.Fatalf("at its lifetime: companion %s (was %s), active %s (was %s)", newComp, oldComp, iss.KeyID(), active)
	}
	until := clk.Now().UTC().Add(maxTTL + identity.DefaultLeeway)
	if diff := cmp.Diff(map[string]time.Time{oldComp: until}, ringRetired(t, path)); diff != "" {
		t.Fatalf("retired (-want +got):\n%s", diff)
	}
	if kid, created := ringCompanion(t, path); kid != newComp || !created.Equal(clk.Now()) {
		t.Fatalf("ring companion %s made %v", kid, created)
	}
	if diff := cmp.Diff([]string{active, newComp, oldComp}, kids(iss.PublicKeys())); diff != "" {
		t.Fatalf("published (-want +got):\n%s", diff)
	}
	// Its token, minted by the process behind, verifies while it lives.
	clk.mu.Lock()
	clk.t = t0.Add(-20*time.Hour + maxTTL)
	clk.mu.Unlock()
	if _, err := iss.Verify(ctx, old); err != nil {
		t.Fatalf("the retired companion's token: %v", err)
	}
}

// writeRing writes a ring file by hand: active, and companion unless
// nil, as private JWKs; retired as public ones, published for a day.
func writeRing(t *testing.T, path string, created time.Time, active *jwk.Key, companion *jwk.Key, retired ...*jwk.Key) []byte {
	t.Helper()
	priv := func(k *jwk.Key) json.RawMessage {
		b, err := k.PrivateJWK()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f := map[string]any{"active": map[string]any{"key": priv(active), "created": created}}
	if companion != nil {
		f["companion"] = map[string]any{"key": priv(companion), "created": created}
	}
	var rs []any
	for _, k := range retired {
		rs = append(rs, map[string]any{"key": k, "retired": created, "until": created.Add(24 * time.Hour)})
	}
	if rs != nil {
		f["retired"] = rs
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// A ring file of before the companion (no companion member, or null)
// loads and signs as it did, unchanged, until a token of the other
// algorithm adds the companion beside what it held.
func TestOldRingFileLoads(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	active, err := jwk.GenerateRSAKey(auth.RSABits)
	if err != nil {
		t.Fatal(err)
	}
	retired, _ := jwk.GenerateKey(jwk.EdDSA)
	for _, tc := range []struct {
		name string
		edit func(string) string
	}{
		{"no companion member", func(s string) string { return s }},
		{"companion null", func(s string) string { return strings.Replace(s, `{"active"`, `{"companion":null,"active"`, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: t0}
			path := filepath.Join(t.TempDir(), auth.KeyFile)
			data := []byte(tc.edit(string(writeRing(t, path, t0.Add(-time.Hour), active, nil, retired.Public()))))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			iss := open(t, path, clk)
			ctx := context.Background()
			if diff := cmp.Diff([]string{active.KeyID(), retired.KeyID()}, kids(iss.PublicKeys())); diff != "" {
				t.Fatalf("published (-want +got):\n%s", diff)
			}
			tok, err := iss.Mint(ctx, claims, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := iss.Verify(ctx, tok); err != nil || kidOf(tok) != active.KeyID() {
				t.Fatalf("Mint on an old ring: kid %s, %v", kidOf(tok), err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(data) {
				t.Fatal("opening and minting rewrote an old ring")
			}
			comp, err := iss.MintAs(ctx, auth.EdDSA, claims, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			again := open(t, path, clk)
			if diff := cmp.Diff([]string{active.KeyID(), kidOf(comp), retired.KeyID()}, kids(again.PublicKeys())); diff != "" {
				t.Fatalf("published after MintAs (-want +got):\n%s", diff)
			}
			if again.KeyID() != active.KeyID() {
				t.Fatal("adding the companion changed the active key")
			}
		})
	}
}

// A companion that is not a private Ed25519 or RSA JWK makes the ring
// unreadable, like such an active key, without quoting it, and the file
// is left as it is.
func TestOpenRefusesBadCompanion(t *testing.T) {
	active, _ := jwk.GenerateKey(jwk.EdDSA)
	activeJWK, _ := active.PrivateJWK()
	other, _ := jwk.GenerateKey(jwk.EdDSA)
	pub, _ := json.Marshal(other)
	es, _ := jwk.GenerateKey(jwk.ES256)
	esJWK, _ := es.PrivateJWK()
	tests := []struct {
		name, companion string
		namesCompanion  bool // a JWK problem, said of the companion
	}{
		{"not a JWK", `{"key":"junk","created":"2026-12-02T10:00:00Z"}`, true},
		{"empty object", `{"key":{},"created":"2026-12-02T10:00:00Z"}`, true},
		{"no key", `{"created":"2026-12-02T10:00:00Z"}`, true},
		{"public key only", `{"key":` + string(pub) + `,"created":"2026-12-02T10:00:00Z"}`, true},
		{"ES256", `{"key":` + string(esJWK) + `,"created":"2026-12-02T10:00:00Z"}`, true},
		{"not an object", `"` + string(activeJWK[:30]) + `"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), auth.KeyFile)
			data := `{"active":{"key":` + string(activeJWK) + `,"created":"2026-12-02T10:00:00Z"},"companion":` + tc.companion + `}`
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := auth.Open(path, auth.Options{Issuer: issuer})
			if err == nil {
				t.Fatal("Open accepted the ring")
			}
			if s := err.Error(); strings.Contains(s, `"d"`) || strings.Contains(s, string(activeJWK[:20])) ||
				strings.Contains(s, string(esJWK[:20])) || strings.Contains(s, "junk") {
				t.Fatalf("the error quotes the file: %v", err)
			}
			if tc.namesCompanion && !strings.Contains(err.Error(), "the companion key is not a private Ed25519 or RSA JWK") {
				t.Fatalf("Open: %v, want it to name the companion", err)
			}
			if after, _ := os.ReadFile(path); string(after) != data {
				t.Fatal("Open rewrote a ring it refused")
			}
		})
	}
}

// A companion of the active key's algorithm (a hand-made ring) never
// signs, as the active key does that algorithm's tokens; it is published,
// so what it signed verifies, until a companion of the other algorithm or
// a rotation retires it.
func TestCompanionOfActiveAlgorithm(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	active, _ := jwk.GenerateRSAKey(auth.RSABits)
	same, _ := jwk.GenerateRSAKey(auth.RSABits)
	for _, tc := range []struct {
		name   string
		retire func(*auth.Issuer) error
	}{
		{"retired by a companion of the other algorithm", func(iss *auth.Issuer) error {
			_, err := iss.MintAs(context.Background(), auth.EdDSA, claims, time.Minute)
			return err
		}},
		{"retired by a rotation", func(iss *auth.Issuer) error {
			_, err := iss.Rotate(context.Background())
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: t0}
			path := filepath.Join(t.TempDir(), auth.KeyFile)
			writeRing(t, path, t0, active, same)
			iss := open(t, path, clk, func(o *auth.Options) { o.MaxTTL = time.Hour })
			ctx := context.Background()
			if diff := cmp.Diff([]string{active.KeyID(), same.KeyID()}, kids(iss.PublicKeys())); diff != "" {
				t.Fatalf("published (-want +got):\n%s", diff)
			}
			for name, mint := range map[string]func() (string, error){
				"Mint":          func() (string, error) { return iss.Mint(ctx, claims, time.Minute) },
				"MintAs(RS256)": func() (string, error) { return iss.MintAs(ctx, auth.RS256, claims, time.Minute) },
			} {
				if tok, err := mint(); err != nil || kidOf(tok) != active.KeyID() {
					t.Fatalf("%s: kid %s, %v; want the active key", name, kidOf(tok), err)
				}
			}
			forged := authtest.SignJWT(t, same, map[string]any{
				"iss": issuer, "aud": identity.DefaultAudience, "tenant_id": "acme", "exp": t0.Add(time.Hour).Unix(),
			})
			if _, err := iss.Verify(ctx, forged); err != nil {
				t.Fatalf("a token of the published companion: %v", err)
			}
			if err := tc.retire(iss); err != nil {
				t.Fatal(err)
			}
			until := t0.Add(time.Hour + identity.DefaultLeeway)
			if got := ringRetired(t, path); !got[same.KeyID()].Equal(until) {
				t.Fatalf("retired %v: want %s until %v", got, same.KeyID(), until)
			}
			if kid, _ := ringCompanion(t, path); kid == same.KeyID() {
				t.Fatal("the companion of the active algorithm is still the companion")
			}
			if _, err := iss.Verify(ctx, forged); err != nil {
				t.Fatalf("a token of the retired companion: %v", err)
			}
		})
	}
}

// BenchmarkMintAs is what the execution gateway saves per run token of an
// agent hosted in the platform's process: Mint on an RS256 ring against
// MintAs EdDSA, signed by the ring's companion.
func BenchmarkMintAs(b *testing.B) {
	iss, err := auth.Open(filepath.Join(b.TempDir(), auth.KeyFile), auth.Options{Issuer: issuer})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mint func() (string, error)
	}{
		{"Mint_RS256", func() (string, error) { return iss.Mint(ctx, claims, time.Hour) }},
		{"MintAs_EdDSA", func() (string, error) { return iss.MintAs(ctx, auth.EdDSA, claims, time.Hour) }},
	} {
		if _, err := tc.mint(); err != nil { // the companion made outside the timing
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tc.mint(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
