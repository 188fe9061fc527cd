package hnsw

import (
	"novaos.dev/novaos/vecdot"

	"math"
	"math/rand/v2"
)

// clustered returns n unit vectors around clusters centres: each centre
// has standard normal components and each point adds normal noise of
// standard deviation spread per component before normalising. With
// spread 1 two points of a cluster have cosine about 0.5 and points of
// different clusters about 0, like embeddings of texts on a few topics.
// Points are dealt to clusters round-robin, so the first m points of a
// set cover every cluster (held-out queries come from the tail).
func clustered(r *rand.Rand, n, dims, clusters int, spread float64) [][]float32 {
	centres := make([][]float64, clusters)
	for i := range centres {
		centres[i] = make([]float64, dims)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	backing := make([]float32, n*dims)
	out := make([][]float32, n)
	for i := range out {
		v := backing[i*dims : (i+1)*dims : (i+1)*dims]
		c := centres[i%clusters]
		for j := range v {
			v[j] = float32(c[j] + spread*r.NormFloat64())
		}
		normalize(v)
		out[i] = v
	}
	return out
}

// uniform returns n unit vectors spread evenly over the sphere: the hard
// case for any graph index, as nearest neighbours are barely nearer than
// anything else.
func uniform(r *rand.Rand, n, dims int) [][]float32 {
	backing := make([]float32, n*dims)
	out := make([][]float32, n)
	for i := range out {
		v := backing[i*dims : (i+1)*dims : (i+1)*dims]
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		normalize(v)
		out[i] = v
	}
	return out
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// build adds data to a new graph under ids 0..n-1.
func build(data [][]float32, opts *Options) *Graph {
	g := New(len(data[0]), opts)
	for i, v := range data {
		g.Add(uint32(i), v)
	}
	return g
}

// exact is the brute-force answer Search approximates.
func exact(data [][]float32, q []float32, k int, accept func(uint32) bool) []Neighbor {
	var h minHeap
	for i, v := range data {
		if accept != nil && !accept(uint32(i)) {
			continue
		}
		d := vecdot.Dot(q, v)
		if len(h) < k {
			h.push(Neighbor{uint32(i), d})
		} else if d > h[0].Score {
			h[0] = Neighbor{uint32(i), d}
			h.push(h.pop()) // restore the heap order
		}
	}
	return h.drainBestFirst(nil)
}

// recall is the mean fraction of the exact top k that Search returns.
func recall(g *Graph, data, queries [][]float32, k, ef int, accept func(uint32) bool) float64 {
	var hit, total int
	for _, q := range queries {
		want := exact(data, q, k, accept)
		got := g.Search(q, k, ef, accept)
		ids := make(map[uint32]bool, len(got))
		for _, n := range got {
			ids[n.ID] = true
		}
		for _, n := range want {
			if ids[n.ID] {
				hit++
			}
		}
		total += len(want)
	}
	return float64(hit) / float64(total)
}
