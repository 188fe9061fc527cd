package vecdot

// haveAVX2 reports whether the CPU and the OS support AVX2 and FMA: the
// package imports only the standard library (it sits under the memory
// package and the HNSW graph alike), which does not export its CPU
// feature flags, so it asks CPUID itself.
var haveAVX2 = detectAVX2()

func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	// The OS must save the YMM registers on a context switch (XCR0 bits 1
	// and 2), or their upper halves would be lost.
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return ebx7&avx2 != 0
}

// Dot is the dot product of a and b, over the shorter one's length.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n] // the assembly reads len(a) elements of both
	if haveAVX2 {
		return dotAVX2(a, b)
	}
	return dotGo(a, b)
}

// dotAVX2 is dot with AVX2 and FMA; len(b) >= len(a).
//
//go:noescape
func dotAVX2(a, b []float32) float32

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// dotInt8AVX2 is DotInt8 with AVX2; len(a) == len(b).
//
//go:noescape
func dotInt8AVX2(a, b []int8) int32
