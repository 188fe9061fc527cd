package hnsw_test

import (
	"fmt"
	"math"

	"novaos.dev/novaos/store/internal/hnsw"
)

// Index a few unit vectors under their slot numbers and find the two
// nearest a query, skipping a deleted slot.
func Example() {
	unit := func(v ...float32) []float32 {
		var s float32
		for _, x := range v {
			s += x * x
		}
		n := float32(math.Sqrt(float64(s)))
		for i := range v {
			v[i] /= n
		}
		return v
	}
	g := hnsw.New(3, &hnsw.Options{Seed: 1})
	g.Add(0, unit(1, 0, 0))
	g.Add(1, unit(0.9, 0.1, 0))
	g.Add(2, unit(0, 1, 0))
	g.Add(3, unit(0.8, 0, 0.2))
	g.Add(4, unit(0, 0, 1))

	deleted := map[uint32]bool{1: true}
	q := unit(1, 0.05, 0)
	for _, n := range g.Search(q, 2, 0, func(id uint32) bool { return !deleted[id] }) {
		fmt.Printf("slot %d score %.3f\n", n.ID, n.Score)
	}
	// Output:
	// slot 0 score 0.999
	// slot 3 score 0.969
}
