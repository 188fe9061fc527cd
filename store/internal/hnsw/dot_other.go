//go:build !amd64

package hnsw

const haveAVX2 = false

func dot(a, b []float32) float32 { return dotGo(a, b) }

func dotAVX2(a, b []float32) float32 { return dotGo(a, b) }
