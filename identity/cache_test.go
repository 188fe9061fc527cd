package identity_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

// swapKeys is a key source whose keys a test replaces, as a JWKS refresh
// after a rotation would.
type swapKeys struct {
	mu   sync.Mutex
	byID map[string]*jwk.Key
}

func (s *swapKeys) Key(_ context.Context, kid string) (*jwk.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.byID[kid]
	if !ok {
		return nil, identity.ErrUnknownKey
	}
	return k, nil
}

func (s *swapKeys) set(kid string, k *jwk.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k == nil {
		delete(s.byID, kid)
		return
	}
	s.byID[kid] = k
}

// TestRememberedTokens: a token verified once is still checked in full
// on every later call, except for its signature under the same key.
func TestRememberedTokens(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	keys := &swapKeys{byID: map[string]*jwk.Key{ed.KeyID(): ed.Key}}
	clock := now
	v, err := identity.New(keys, identity.Options{Issuer: testIssuer, Now: func() time.Time { return clock }, CacheSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	verify := func(want error) *identity.Claims {
		t.Helper()
		c, err := v.Verify(ctx, tok)
		if !errors.Is(err, want) {
			t.Fatalf("Verify: %v, want %v", err, want)
		}
		return c
	}

	c := verify(nil)
	c.Scopes[0], c.TenantID = "admin", "other" // the caller's copy
	if c := verify(nil); c.Scopes[0] != "memory:read:*" || c.TenantID != "acme" {
		t.Fatalf("a caller's change to its claims reached the next call: %+v", c)
	}

	clock = now.Add(time.Hour) // past exp and the leeway
	verify(identity.ErrExpired)
	clock = now

	// A key replaced under the same kid: the remembered signature no
	// longer counts, and the token fails as a bad signature.
	other := newTestKey(t, identity.EdDSA)
	keys.set(ed.KeyID(), other.Key)
	verify(identity.ErrBadSignature)
	keys.set(ed.KeyID(), nil)
	verify(identity.ErrUnknownKey)
	keys.set(ed.KeyID(), ed.Key)
	verify(nil)

	// A token one byte different is not the remembered one.
	swap := "A"
	if tok[len(tok)-2] == 'A' {
		swap = "B"
	}
	forged := tok[:len(tok)-2] + swap + tok[len(tok)-1:]
	if _, err := v.Verify(ctx, forged); err == nil {
		t.Fatal("a changed signature verified")
	}

	// Many tokens: the cache stays bounded and every token still verifies.
	for i := range 40 {
		cl := validClaims(now)
		cl["run_id"] = "run-" + strconv.Itoa(i)
		tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, cl))
		for range 2 {
			if c, err := v.Verify(ctx, tok); err != nil || c.RunID != cl["run_id"] {
				t.Fatalf("token %d: %+v, %v", i, c, err)
			}
		}
	}
	if n := identity.RememberedTokens(v); n > 8 {
		t.Fatalf("%d tokens remembered, want at most CacheSize 8", n)
	}
}

func TestCacheDisabled(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	keys := &swapKeys{byID: map[string]*jwk.Key{ed.KeyID(): ed.Key}}
	v, err := identity.New(keys, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	for range 2 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := identity.RememberedTokens(v); n != 0 {
		t.Fatalf("%d tokens remembered with the cache off", n)
	}
}

// A token its issuer vouched for verifies without a signature check, and
// is otherwise held to everything a remembered token is.
func TestVouch(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	signer := newTestKey(t, identity.EdDSA) // not the kid's key: only a check of the signature sees it
	keys := &swapKeys{byID: map[string]*jwk.Key{ed.KeyID(): ed.Key}}
	clock := now
	var asked int
	opts := identity.Options{Issuer: testIssuer, Now: func() time.Time { return clock }, CacheSize: 8,
		Revoked: func(context.Context, *identity.Claims) error { asked++; return nil }}
	v, err := identity.New(keys, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok := sign(t, signer, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	if _, err := v.Verify(ctx, tok); !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("before Vouch: %v", err)
	}
	if err := v.Vouch(ctx, tok); err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(ctx, tok)
	if err != nil || c.TenantID != "acme" || asked != 1 {
		t.Fatalf("vouched: %+v, %v; revocation asked %d times", c, err, asked)
	}
	clock = now.Add(time.Hour)
	if _, err := v.Verify(ctx, tok); !errors.Is(err, identity.ErrExpired) {
		t.Fatalf("vouched and expired: %v", err)
	}
	clock = now
	keys.set(ed.KeyID(), newTestKey(t, identity.EdDSA).Key) // the kid's key replaced
	if _, err := v.Verify(ctx, tok); !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("vouched under a key since replaced: %v", err)
	}

	for name, bad := range map[string]string{
		"malformed":   "not.a-token",
		"unknown kid": sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", "nobody")), mustJSON(t, validClaims(now))),
		"wrong alg":   sign(t, ed, "EdDSA", mustJSON(t, header("RS256", ed.KeyID())), mustJSON(t, validClaims(now))),
		"bad claims":  sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), []byte(`{"iss":1}`)),
	} {
		if err := v.Vouch(ctx, bad); err == nil {
			t.Errorf("Vouch(%s) accepted", name)
		}
	}

	// A token as long as the verifier takes is vouched for; a byte more
	// is refused.
	keys.set(ed.KeyID(), ed.Key)
	exact := opts
	exact.MaxTokenBytes = len(tok)
	fits, _ := identity.New(keys, exact)
	if err := fits.Vouch(ctx, tok); err != nil {
		t.Fatalf("Vouch of a token of MaxTokenBytes: %v", err)
	}
	exact.MaxTokenBytes = len(tok) - 1
	short, _ := identity.New(keys, exact)
	if err := short.Vouch(ctx, tok); !errors.Is(err, identity.ErrMalformed) {
		t.Fatalf("Vouch of a token past MaxTokenBytes: %v", err)
	}

	// Without a cache there is nothing to vouch into: the signature is
	// checked as ever.
	opts.CacheSize = -1
	keys.set(ed.KeyID(), ed.Key)
	nocache, _ := identity.New(keys, opts)
	if err := nocache.Vouch(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := nocache.Verify(ctx, tok); !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("vouched with the cache off: %v", err)
	}
}
