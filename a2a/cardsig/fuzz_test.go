package cardsig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jwk"
)

// FuzzCanonicalizeCard: any card JSON either fails to parse or
// canonicalizes to valid JSON that is a fixed point (canonicalizing the
// canonical form gives it back), and verifying it never panics.
func FuzzCanonicalizeCard(f *testing.F) {
	for _, tc := range loadCanonCases(f) {
		f.Add([]byte(tc.Card))
	}
	f.Add([]byte(`{"capabilities":{"extensions":[{"uri":"u","params":{"a":[1e400]}}]}}`))
	f.Add([]byte(`{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"implicit":null,"password":{"tokenUrl":"t"}}}}}}`))
	set := jwk.NewKeySet(keys[jwk.EdDSA])
	f.Fuzz(func(t *testing.T, data []byte) {
		var card a2a.AgentCard
		if err := a2a.Unmarshal(data, &card); err != nil {
			return
		}
		canon, err := Canonicalize(&card)
		if err != nil {
			return
		}
		if !json.Valid(canon) {
			t.Fatalf("canonical form is not JSON: %q", canon)
		}
		again, err := CanonicalizeJSON(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v (%q)", err, canon)
		}
		if string(again) != string(canon) {
			t.Fatalf("not a fixed point:\n%s\n%s", canon, again)
		}
		if _, err := Verify(&card, set, nil); err == nil && len(card.Signatures) > 0 {
			t.Fatalf("a fuzzed card verified against a fresh key")
		}
	})
}

// FuzzVerifySignature: arbitrary protected headers and signatures never
// verify unless they spell the genuine ones, never panic, and fail with
// ErrInvalidSignature.
func FuzzVerifySignature(f *testing.F) {
	key := keys[jwk.EdDSA]
	signed, err := Sign(testCard(), key, &SignOptions{JKU: "https://example.com/jwks"})
	if err != nil {
		f.Fatal(err)
	}
	s := signed.Signatures[0]
	f.Add(s.Protected, s.Signature)
	f.Add("eyJhbGciOiJub25lIn0", "")
	f.Add("eyJhbGciOiJIUzI1NiIsImtpZCI6ImsifQ", "AAAA")
	f.Add(s.Protected, s.Signature+"A")
	set := jwk.NewKeySet(key)
	f.Fuzz(func(t *testing.T, protected, signature string) {
		card := testCard()
		card.Signatures = []a2a.AgentCardSignature{{Protected: protected, Signature: signature}}
		_, err := Verify(card, set, nil)
		if err == nil {
			// go-jose drops white space and ignores the unused low bits of
			// the last base64 character, so other spellings of the signed
			// header and signature bytes verify too; anything else that
			// verifies is a forgery.
			if !sameBase64(protected, s.Protected) || !sameBase64(signature, s.Signature) {
				t.Fatalf("forged signature verified: protected %q, signature %q", protected, signature)
			}
			return
		}
		if !errors.Is(err, ErrInvalidSignature) {
			t.Fatalf("err = %v, want ErrInvalidSignature", err)
		}
	})
}

// sameBase64 reports whether a, read as go-jose reads it (white space
// dropped, unpadded base64url), decodes to the same bytes as b.
func sameBase64(a, b string) bool {
	da, err := base64.RawURLEncoding.DecodeString(strings.Join(strings.Fields(a), ""))
	if err != nil {
		return false
	}
	db, err := base64.RawURLEncoding.DecodeString(b)
	return err == nil && bytes.Equal(da, db)
}
