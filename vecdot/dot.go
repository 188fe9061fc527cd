package vecdot

// dotGo is the dot product of two vectors of one length, in Go for CPUs
// without AVX2 and FMA. Go does not vectorise loops, so eight independent
// accumulators let the CPU overlap the multiply-adds instead of waiting
// on one running sum; reslicing each block to a fixed length lets the
// compiler drop the bounds checks. The benchmarks in dot_test.go compare
// it with the plain loop, a 4-way unroll and the AVX2 version.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
