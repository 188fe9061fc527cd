//go:build !amd64

package vecdot

const haveAVX2 = false

// Dot is the dot product of a and b, over the shorter one's length.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	return dotGo(a[:n], b[:n])
}

func dotAVX2(a, b []float32) float32 { return dotGo(a, b) }

func dotInt8AVX2(a, b []int8) int32 { return dotInt8Go(a, b) }
