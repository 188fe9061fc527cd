package vecdot

// DotInt8 is the dot product of two int8 vectors, over the shorter one's
// length: a quantised vector scan reads a quarter of the bytes a float32
// one does, which is what a scan of a large partition waits on.
func DotInt8(a, b []int8) int32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	if haveAVX2 {
		return dotInt8AVX2(a, b)
	}
	return dotInt8Go(a, b)
}

// dotInt8Go is DotInt8 in Go; len(a) == len(b).
func dotInt8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	for len(a) >= 4 {
		x, y := a[:4:4], b[:4:4]
		s0 += int32(x[0]) * int32(y[0])
		s1 += int32(x[1]) * int32(y[1])
		s2 += int32(x[2]) * int32(y[2])
		s3 += int32(x[3]) * int32(y[3])
		a, b = a[4:], b[4:]
	}
	for i := range a {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
