package vecdot

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestDotInt8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 15, 16, 17, 31, 32, 33, 48, 255, 256, 1536} {
		a, b := make([]int8, n), make([]int8, n+5)
		for i := range a {
			a[i] = int8(r.IntN(256) - 128)
		}
		for i := range b {
			b[i] = int8(r.IntN(256) - 128)
		}
		var want int32
		for i := range a {
			want += int32(a[i]) * int32(b[i])
		}
		if got := DotInt8(a, b); got != want {
			t.Errorf("n=%d: DotInt8 = %d, want %d", n, got, want)
		}
		if got := dotInt8Go(a, b[:n]); got != want {
			t.Errorf("n=%d: dotInt8Go = %d, want %d", n, got, want)
		}
	}
	// The extremes: -128·-128 in every lane of a long vector.
	a := make([]int8, 4096)
	for i := range a {
		a[i] = -128
	}
	if got, want := DotInt8(a, a), int32(4096*128*128); got != want {
		t.Errorf("extremes: %d, want %d", got, want)
	}
}

func BenchmarkDotInt8(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y := make([]int8, 256), make([]int8, 256)
	for i := range x {
		x[i], y[i] = int8(r.IntN(256)-128), int8(r.IntN(256)-128)
	}
	for _, f := range []struct {
		name string
		fn   func(a, b []int8) int32
	}{{"DotInt8", DotInt8}, {"go", dotInt8Go}} {
		b.Run(fmt.Sprintf("%s/dims=256", f.name), func(b *testing.B) {
			var s int32
			for b.Loop() {
				s += f.fn(x, y)
			}
			_ = s
		})
	}
}
