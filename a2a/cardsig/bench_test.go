package cardsig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"novaos.dev/novaos/jwk"
	"testing"
)

// BenchmarkVerify measures card verifications per second (canonicalize +
// signature check) per algorithm.
func BenchmarkVerify(b *testing.B) {
	for _, alg := range jwk.Algorithms {
		b.Run(alg, func(b *testing.B) {
			card, err := Sign(testCard(), keys[alg], nil)
			if err != nil {
				b.Fatal(err)
			}
			set := jwk.NewKeySet(keys[alg])
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Verify(card, set, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
		})
	}
}

// BenchmarkSign measures card signatures per second per algorithm.
func BenchmarkSign(b *testing.B) {
	for _, alg := range jwk.Algorithms {
		b.Run(alg, func(b *testing.B) {
			card := testCard()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Sign(card, keys[alg], nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signs/s")
		})
	}
}

// BenchmarkCanonicalize is the canonicalization share of a verification.
func BenchmarkCanonicalize(b *testing.B) {
	card := testCard()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(card); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyBaseline is the bare signature check of the same
// canonical payload with the standard library: Verify's overhead
// (canonicalization, JWS parsing, key lookup) is the difference.
func BenchmarkVerifyBaseline(b *testing.B) {
	for _, alg := range jwk.Algorithms {
		b.Run(alg, func(b *testing.B) {
			card, err := Sign(testCard(), keys[alg], nil)
			if err != nil {
				b.Fatal(err)
			}
			payload, _ := Canonicalize(card)
			s := card.Signatures[0]
			input := []byte(s.Protected + "." + base64.RawURLEncoding.EncodeToString(payload))
			sig, _ := base64.RawURLEncoding.DecodeString(s.Signature)
			pub := keys[alg].PublicKey()
			var check func() bool
			switch pub := pub.(type) {
			case ed25519.PublicKey:
				check = func() bool { return ed25519.Verify(pub, input, sig) }
			case *ecdsa.PublicKey:
				r, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
				check = func() bool { h := sha256.Sum256(input); return ecdsa.Verify(pub, h[:], r, ss) }
			case *rsa.PublicKey:
				check = func() bool {
					h := sha256.Sum256(input)
					return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
				}
			}
			for b.Loop() {
				if !check() {
					b.Fatal("does not verify")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
		})
	}
}
