package identity_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newVerifier(t testing.TB, keys ...testKey) *identity.Verifier {
	t.Helper()
	ks := make([]*jwk.Key, 0, len(keys))
	for _, k := range keys {
		ks = append(ks, k.Key)
	}
	src, err := identity.NewStaticKeys(ks...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	es := newTestKey(t, identity.ES256)
	rs := newTestKey(t, identity.RS256)
	other := newTestKey(t, identity.EdDSA) // not in the verifier's keys
	v := newVerifier(t, ed, es, rs)

	with := func(mut func(c map[string]any)) []byte {
		c := validClaims(now)
		mut(c)
		return mustJSON(t, c)
	}
	good := mustJSON(t, validClaims(now))
	edHeader := mustJSON(t, header(identity.EdDSA, ed.KeyID()))
	edPub := []byte(ed.PublicKey().(ed25519.PublicKey))
	rsJWK, _ := rs.MarshalJSON()

	tests := []struct {
		name  string
		token string
		want  error // nil: verifies
	}{
		{"EdDSA", sign(t, ed, "EdDSA", edHeader, good), nil},
		{"ES256", sign(t, es, "ES256", mustJSON(t, header("ES256", es.KeyID())), good), nil},
		{"RS256", sign(t, rs, "RS256", mustJSON(t, header("RS256", rs.KeyID())), good), nil},
		{"no typ", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID()}), good), nil},
		{"audience list", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["aud"] = []string{"x", "acp-agent"} })), nil},
		{"expired within leeway", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["exp"] = now.Add(-20 * time.Second).Unix() })), nil},
		{"scopes as a string", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["scopes"] = "memory:read:* mcp:tools:memory" })), nil},

		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(good) + ".", identity.ErrAlgorithm},
		{"alg none with kid", b64(mustJSON(t, header("none", ed.KeyID()))) + "." + b64(good) + ".", identity.ErrAlgorithm},
		{"HS256 keyed with the Ed25519 public key", hs256(mustJSON(t, header("HS256", ed.KeyID())), good, edPub), identity.ErrAlgorithm},
		{"HS256 keyed with the RSA public JWK", hs256(mustJSON(t, header("HS256", rs.KeyID())), good, rsJWK), identity.ErrAlgorithm},
		{"RS384", sign(t, rs, "RS256", mustJSON(t, header("RS384", rs.KeyID())), good), identity.ErrAlgorithm},
		{"alg of another key type", sign(t, es, "ES256", mustJSON(t, header("ES256", ed.KeyID())), good), identity.ErrAlgorithm},
		{"no alg", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"kid": ed.KeyID()}), good), identity.ErrAlgorithm},

		{"wrong issuer", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), identity.ErrIssuer},
		{"no issuer", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { delete(c, "iss") })), identity.ErrIssuer},
		{"wrong audience", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["aud"] = "other" })), identity.ErrAudience},
		{"no audience", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { delete(c, "aud") })), identity.ErrAudience},
		{"expired", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })), identity.ErrExpired},
		{"not yet valid", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() })), identity.ErrNotYetValid},
		{"issued in the future", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() })), identity.ErrNotYetValid},
		{"no exp", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { delete(c, "exp") })), identity.ErrMissingClaim},
		{"no tenant", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { delete(c, "tenant_id") })), identity.ErrMissingClaim},

		{"unknown kid", sign(t, other, "EdDSA", mustJSON(t, header("EdDSA", other.KeyID())), good), identity.ErrUnknownKey},
		{"signed by another key under a known kid", sign(t, other, "EdDSA", edHeader, good), identity.ErrBadSignature},
		{"tampered payload", tamperPayload(sign(t, ed, "EdDSA", edHeader, good), with(func(c map[string]any) { c["tenant_id"] = "globex" })), identity.ErrBadSignature},
		{"tampered header", tamperHeader(sign(t, ed, "EdDSA", edHeader, good), mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "typ": "JWT", "x": 1})), identity.ErrBadSignature},
		{"empty signature", b64(edHeader) + "." + b64(good) + ".", identity.ErrBadSignature},

		{"non-canonical base64 signature", respell(sign(t, ed, "EdDSA", edHeader, good)), identity.ErrMalformed},
		{"no kid", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA"}), good), identity.ErrMalformed},
		{"oversize", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["pad"] = strings.Repeat("x", 9000) })), identity.ErrMalformed},
		{"duplicate claim", sign(t, ed, "EdDSA", edHeader, []byte(strings.Replace(string(good), `{`, `{"tenant_id":"globex",`, 1))), identity.ErrMalformed},
		{"duplicate header", sign(t, ed, "EdDSA", []byte(`{"alg":"EdDSA","alg":"none","kid":"`+ed.KeyID()+`"}`), good), identity.ErrMalformed},
		{"crit header", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "crit": []string{"b64"}, "b64": false}), good), identity.ErrMalformed},
		{"jku header", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "jku": "https://evil.example.com/jwks"}), good), identity.ErrMalformed},
		{"embedded jwk", sign(t, other, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "jwk": other.Public()}), good), identity.ErrMalformed},
		{"typ JOSE (a card signature)", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "typ": "JOSE"}), good), identity.ErrMalformed},
		{"typ of an invocation token", sign(t, ed, "EdDSA", mustJSON(t, map[string]any{"alg": "EdDSA", "kid": ed.KeyID(), "typ": "agent-invocation+jwt"}), good), identity.ErrMalformed},
		{"exp a string", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["exp"] = "tomorrow" })), identity.ErrMalformed},
		{"tenant a number", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["tenant_id"] = 7 })), identity.ErrMalformed},
		{"invalid scope", sign(t, ed, "EdDSA", edHeader, with(func(c map[string]any) { c["scopes"] = []string{"memory::read"} })), identity.ErrMalformed},
		{"claims not an object", sign(t, ed, "EdDSA", edHeader, []byte(`["a"]`)), identity.ErrMalformed},
		{"trailing data after claims", sign(t, ed, "EdDSA", edHeader, append(append([]byte{}, good...), []byte(`{}`)...)), identity.ErrMalformed},
		{"empty", "", identity.ErrMalformed},
		{"two parts", "a.b", identity.ErrMalformed},
		{"four parts", "a.b.c.d", identity.ErrMalformed},
		{"header not base64", "!!.e30.", identity.ErrMalformed},
		{"header not JSON", b64([]byte("nope")) + ".e30.", identity.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Verify(context.Background(), tc.token)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if c.TenantID != "acme" || c.AgentID != "agent-1" {
					t.Fatalf("claims %+v", c)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, identity.ErrInvalid) {
				t.Fatalf("Verify error %v, want %v and ErrInvalid", err, tc.want)
			}
			// Exactly one kind.
			for _, k := range kinds {
				if k != tc.want && errors.Is(err, k) {
					t.Errorf("error %v also matches %v", err, k)
				}
			}
			assertNoToken(t, err.Error(), tc.token)
		})
	}
}

var kinds = []error{
	identity.ErrMalformed, identity.ErrAlgorithm, identity.ErrUnknownKey, identity.ErrBadSignature,
	identity.ErrIssuer, identity.ErrAudience, identity.ErrExpired, identity.ErrNotYetValid, identity.ErrMissingClaim,
}

// assertNoToken fails when msg holds the token or any of its three parts.
func assertNoToken(t *testing.T, msg, token string) {
	t.Helper()
	if token == "" {
		return
	}
	for _, part := range append(strings.Split(token, "."), token) {
		if len(part) >= 8 && strings.Contains(msg, part) {
			t.Fatalf("error %q contains part of the token", msg)
		}
	}
}

func tamperPayload(token string, payload []byte) string {
	p := strings.Split(token, ".")
	return p[0] + "." + b64(payload) + "." + p[2]
}

func tamperHeader(token string, header []byte) string {
	p := strings.Split(token, ".")
	return b64(header) + "." + p[1] + "." + p[2]
}

func TestVerifyClaims(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	v := newVerifier(t, ed)
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	got, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := &identity.Claims{
		Issuer: testIssuer, Subject: "agent-1", Audience: []string{"acp-agent"},
		Expiry: now.Add(10 * time.Minute), NotBefore: now, IssuedAt: now,
		TenantID: "acme", UserID: "user-7", RunID: "run-42", InstanceID: "inst-3",
		AgentID: "agent-1", AgentName: "mailer", ConversationID: "conv-9", CallID: "call-5",
		Scopes:       []string{"memory:read:*", "memory:write:agent"},
		LLMMaxTokens: 5000, LLMMaxCostUSD: 0.75,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("claims (-want +got):\n%s", d)
	}
	if !got.HasScope("memory:read:tenant") || got.HasScope("memory:write:user") {
		t.Fatalf("scopes: %v", got.Scopes)
	}
	// Round trip through the platform's own encoding.
	b, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back identity.Claims
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, &back); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
}

func TestNewRefuses(t *testing.T) {
	src, _ := identity.NewStaticKeys()
	for _, tc := range []struct {
		name string
		opts identity.Options
	}{
		{"no issuer", identity.Options{}},
		{"HS256 allowed", identity.Options{Issuer: testIssuer, Algorithms: []string{"HS256"}}},
		{"none allowed", identity.Options{Issuer: testIssuer, Algorithms: []string{"none"}}},
		{"PS256 allowed", identity.Options{Issuer: testIssuer, Algorithms: []string{"EdDSA", "PS256"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := identity.New(src, tc.opts); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if _, err := identity.New(nil, identity.Options{Issuer: testIssuer}); err == nil {
		t.Fatal("New accepted no key source")
	}
}

func TestAllowListNarrows(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	rs := newTestKey(t, identity.RS256)
	src, _ := identity.NewStaticKeys(ed.Key, rs.Key)
	v, err := identity.New(src, identity.Options{Issuer: testIssuer, Algorithms: []string{"EdDSA"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, rs, "RS256", mustJSON(t, header("RS256", rs.KeyID())), mustJSON(t, validClaims(now)))
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrAlgorithm) {
		t.Fatalf("RS256 with only EdDSA allowed: %v", err)
	}
}

func TestStaticKeysRefusesDuplicateKid(t *testing.T) {
	a, b := newTestKey(t, identity.EdDSA), newTestKey(t, identity.EdDSA)
	if _, err := identity.NewStaticKeys(a.Key, b.Key.WithKeyID(a.KeyID())); err == nil {
		t.Fatal("two keys under one kid accepted")
	}
}

func TestErrorFormat(t *testing.T) {
	e := &identity.Error{Kind: identity.ErrExpired, Reason: "expired at x"}
	if got := fmt.Sprint(e); got != "identity: token expired: expired at x" {
		t.Fatal(got)
	}
}

// respell changes the spare bits of the signature's last base64url
// character: the same bytes, spelled differently.
func respell(token string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, token[len(token)-1])
	return token[:len(token)-1] + string(alphabet[last^1])
}
