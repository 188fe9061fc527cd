package identity_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
)

// BenchmarkVerify is one whole verification of an EdDSA execution token:
// signature checked (cache off), and remembered (the same token again);
// BenchmarkEd25519Baseline is the bare signature check on the same bytes,
// the floor any verifier without a cache pays. Compare them from one run.
func BenchmarkVerify(b *testing.B) {
	ed := newTestKey(b, identity.EdDSA)
	tok := sign(b, ed, "EdDSA", mustJSON(b, header("EdDSA", ed.KeyID())), mustJSON(b, validClaims(now)))
	src, err := identity.NewStaticKeys(ed.Key)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []struct {
		name  string
		cache int
	}{{"signature", -1}, {"remembered", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: mode.cache})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
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
