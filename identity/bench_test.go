package identity_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
)

// BenchmarkVerify is one whole verification of an EdDSA execution token;
// BenchmarkEd25519Baseline is the bare signature check on the same bytes,
// the floor any verifier pays. Compare the two from one run.
func BenchmarkVerify(b *testing.B) {
	ed := newTestKey(b, identity.EdDSA)
	v := newVerifier(b, ed)
	tok := sign(b, ed, "EdDSA", mustJSON(b, header("EdDSA", ed.KeyID())), mustJSON(b, validClaims(now)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEd25519Baseline(b *testing.B) {
	ed := newTestKey(b, identity.EdDSA)
	tok := sign(b, ed, "EdDSA", mustJSON(b, header("EdDSA", ed.KeyID())), mustJSON(b, validClaims(now)))
	i := strings.LastIndexByte(tok, '.')
	input := []byte(tok[:i])
	sig, _ := base64.RawURLEncoding.DecodeString(tok[i+1:])
	pub := ed.PublicKey().(ed25519.PublicKey)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, input, sig) {
			b.Fatal("bad signature")
		}
	}
}
