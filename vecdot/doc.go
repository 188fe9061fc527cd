// Package vecdot computes dot products of float32 vectors, the inner loop of
// vector search.
//
// It uses AVX2 and FMA on amd64 (eight products an instruction, about 8x the
// Go loop at 256 dimensions) and unrolled Go elsewhere. It depends on the
// standard library only, so the memory package and the HNSW graph share it.
package vecdot
