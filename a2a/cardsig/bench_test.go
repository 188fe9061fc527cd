package cardsig

import (
	"testing"
)

// BenchmarkVerify measures card verifications per second (canonicalize +
// signature check) per algorithm.
func BenchmarkVerify(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			card, err := Sign(testCard(), keys[alg], nil)
			if err != nil {
				b.Fatal(err)
			}
			set := NewKeySet(keys[alg])
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
	for _, alg := range Algorithms {
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
