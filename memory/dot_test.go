package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Dot's fast path must agree with the plain loop at every length,
// including the tails past the blocks of 32 and 8.
func TestDotMatchesPlainLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 300 {
		a, b := make([]float32, n), make([]float32, n+3) // the longer one is cut
		for i := range a {
			a[i] = r.Float32()*2 - 1
		}
		for i := range b {
			b[i] = r.Float32()*2 - 1
		}
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		got := Dot(a, b)
		if math.Abs(float64(got)-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Fatalf("n=%d: Dot = %v, want %v", n, got, want)
		}
		if back := Dot(b, a); back != got {
			t.Fatalf("n=%d: Dot(b, a) = %v, Dot(a, b) = %v", n, back, got)
		}
	}
	if Dot(nil, []float32{1}) != 0 {
		t.Error("Dot of an empty vector is not 0")
	}
}

// BenchmarkDot scans 10k vectors of 256 with Dot and, as the baseline of
// the same run, with the plain Go loop.
func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	q := make([]float32, DefaultDims)
	for i := range q {
		q[i] = r.Float32()
	}
	vs := make([][]float32, 10_000)
	for j := range vs {
		vs[j] = make([]float32, DefaultDims)
		for i := range vs[j] {
			vs[j][i] = r.Float32()
		}
	}
	var sink float32
	for _, c := range []struct {
		name string
		dot  func(a, b []float32) float32
	}{{"Dot", Dot}, {"GoLoop", dotGo}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, v := range vs {
					sink += c.dot(q, v)
				}
			}
		})
	}
	_ = sink
}
