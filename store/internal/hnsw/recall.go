package hnsw

import "novaos.dev/novaos/vecdot"

// Recall measures Search against an exact scan of the graph's own
// vectors: the mean fraction of each query's exact k nearest (among
// accepted nodes, accept as in Search) that Search with ef returns. It
// costs one exact scan per query, so give it a sample: the issue behind
// this package asks that the index's recall be measured and reported,
// and recall depends on the data far more than on the graph's size
// (see the package doc), so measure it on the deployment's own vectors.
//
// Queries that are themselves in the graph find themselves first in both
// answers, which lifts the figure by up to 1/k; real queries, or stored
// vectors with k one higher, avoid that. A query with no accepted node
// counts for nothing; with none at all Recall returns 1.
func (g *Graph) Recall(queries [][]float32, k, ef int, accept func(id uint32) bool) float64 {
	if k <= 0 {
		return 1
	}
	var hit, total int
	var want minHeap
	for _, q := range queries {
		got := g.Search(q, k, ef, accept)
		want = g.exact(want[:0], q, k, accept)
		for _, w := range want {
			for _, n := range got {
				if n.ID == w.ID {
					hit++
					break
				}
			}
		}
		total += len(want)
	}
	if total == 0 {
		return 1
	}
	return float64(hit) / float64(total)
}

// exact leaves in h the k accepted nodes nearest q by a full scan.
func (g *Graph) exact(h minHeap, q []float32, k int, accept func(uint32) bool) minHeap {
	for i, v := range g.vecs {
		id := uint32(i)
		if v == nil || accept != nil && !accept(id) {
			continue
		}
		d := vecdot.Dot(q, v)
		if len(h) < k {
			h.push(Neighbor{id, d})
		} else if d > h[0].Score {
			h.pop()
			h.push(Neighbor{id, d})
		}
	}
	return h
}
