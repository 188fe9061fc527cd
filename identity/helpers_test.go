package identity_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

const testIssuer = "https://novaos.example.com"

// testKey is a private key with the raw crypto key beside it, for signing
// tokens the way an issuer would (and ways it never would).
type testKey struct {
	*jwk.Key
	priv crypto.Signer
}

func newTestKey(t testing.TB, alg string) testKey {
	t.Helper()
	k, err := jwk.GenerateKey(alg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := k.PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return testKey{Key: k, priv: jk.Key.(crypto.Signer)}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign makes a compact JWS of header and payload (both already JSON)
// signed with k as alg says, bypassing every library check.
func sign(t testing.TB, k testKey, alg string, header, payload []byte) string {
	t.Helper()
	input := b64(header) + "." + b64(payload)
	h := sha256.Sum256([]byte(input))
	var sig []byte
	switch p := k.priv.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(p, []byte(input))
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, p, h[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, p, crypto.SHA256, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	return input + "." + b64(sig)
}

// hs256 signs with HMAC-SHA256 under secret, as a forger who knows only a
// public key would (the classic RS256 → HS256 confusion).
func hs256(header, payload, secret []byte) string {
	input := b64(header) + "." + b64(payload)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return input + "." + b64(m.Sum(nil))
}

// claims returns a valid claims object for now.
func validClaims(now time.Time) map[string]any {
	return map[string]any{
		"iss":              testIssuer,
		"aud":              identity.DefaultAudience,
		"sub":              "agent-1",
		"exp":              now.Add(10 * time.Minute).Unix(),
		"iat":              now.Unix(),
		"nbf":              now.Unix(),
		"tenant_id":        "acme",
		"user_id":          "user-7",
		"run_id":           "run-42",
		"instance_id":      "inst-3",
		"agent_id":         "agent-1",
		"agent_name":       "mailer",
		"conversation_id":  "conv-9",
		"call_id":          "call-5",
		"scopes":           []string{"memory:read:*", "memory:write:agent"},
		"llm_max_tokens":   5000,
		"llm_max_cost_usd": 0.75,
	}
}

func header(alg, kid string) map[string]any {
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return h
}
