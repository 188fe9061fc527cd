package memory

import "golang.org/x/sys/cpu"

var haveSIMDDot = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotSIMD is Dot with AVX2 and FMA; len(a) == len(b).
//
//go:noescape
func dotSIMD(a, b []float32) float32
