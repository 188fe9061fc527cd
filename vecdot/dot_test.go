package vecdot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// dotPlain is the reference the unrolled dot is checked and timed against.
func dotPlain(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// dot4 is a 4-way unroll, timed against the 8-way one.
func dot4(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 4 {
		x, y := a[:4:4], b[:4:4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		a, b = a[4:], b[4:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 255, 256, 1536} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			a, b := make([]float32, n), make([]float32, n)
			var want float64
			for i := range a {
				a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				want += float64(a[i]) * float64(b[i])
			}
			impls := map[string]func(a, b []float32) float32{"Dot": Dot, "dotGo": dotGo}
			if haveAVX2 {
				impls["dotAVX2"] = dotAVX2
			}
			for name, fn := range impls {
				got := fn(a, b)
				// float32 sums in another order differ in the last bits only.
				if tol := 1e-5 * float64(n+1); math.Abs(float64(got)-want) > tol {
					t.Errorf("%s = %v, want %v (±%v)", name, got, want, tol)
				}
			}
		})
	}
}

func BenchmarkDot(b *testing.B) {
	for _, dims := range []int{256, 1536} {
		r := rand.New(rand.NewPCG(1, 2))
		x, y := make([]float32, dims), make([]float32, dims)
		for i := range x {
			x[i], y[i] = r.Float32(), r.Float32()
		}
		for _, f := range []struct {
			name string
			fn   func(a, b []float32) float32
		}{{"plain", dotPlain}, {"unroll4", dot4}, {"unroll8", dotGo}, {"avx2", dotAVX2}} {
			if f.name == "avx2" && !haveAVX2 {
				continue // not a skip of a feature: this CPU has no AVX2
			}
			b.Run(fmt.Sprintf("%s/dims=%d", f.name, dims), func(b *testing.B) {
				var s float32
				for b.Loop() {
					s += f.fn(x, y)
				}
				sink = s
			})
		}
	}
}

var sink float32

// Dot takes the shorter length when the two differ.
func TestDotUnequalLengths(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	if got := Dot(a, a[:3]); got != 14 {
		t.Errorf("Dot(17, 3 elements) = %v, want 14", got)
	}
	if got := Dot(nil, a); got != 0 {
		t.Errorf("Dot(nil, a) = %v, want 0", got)
	}
}
