//go:build !amd64

package memory

const haveSIMDDot = false

func dotSIMD(a, b []float32) float32 { return dotGo(a, b) }
