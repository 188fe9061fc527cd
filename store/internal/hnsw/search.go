package hnsw

import (
	"novaos.dev/novaos/vecdot"

	"cmp"
	"fmt"
	"slices"
)

// scratch is one search's or insert's working memory, pooled so a search
// allocates nothing once the pool is warm.
type scratch struct {
	visited []uint32 // visited[id] == gen: seen in this search
	gen     uint32
	cand    maxHeap // nodes still to expand
	res     minHeap // the best found so far, worst on top
	entries []Neighbor
	found   []Neighbor
	sel     []Neighbor
	prune   []Neighbor
	pruned  []Neighbor
}

func (g *Graph) getScratch() *scratch {
	s := g.scratchPool.Get().(*scratch)
	if len(s.visited) < len(g.vecs) {
		s.visited = make([]uint32, len(g.vecs)+len(g.vecs)/4)
		s.gen = 0
	}
	return s
}

// newVisit starts a new visited set: bumping the generation clears it in
// O(1); a full clear is needed once per 2^32 searches.
func (s *scratch) newVisit() {
	s.gen++
	if s.gen == 0 {
		clear(s.visited)
		s.gen = 1
	}
}

// Search returns up to k neighbours of the unit query q, best first. ef is
// the candidate list width (0 means Options.EfSearch; it is raised to k if
// smaller): larger ef, higher recall, slower search.
//
// accept, when not nil, filters the results: a rejected node is still
// walked through, as it may lead to accepted ones, but never returned, and
// the search goes on until it holds ef accepted nodes or has nothing left
// to expand. So k accepted results come back whenever k accepted nodes are
// reachable, at the price of a longer walk when accept rejects most nodes
// (rejecting all of them visits the whole reachable graph).
//
// Search panics if q's length is not the graph's Dims.
func (g *Graph) Search(q []float32, k, ef int, accept func(id uint32) bool) []Neighbor {
	if len(q) != g.dims {
		panic(fmt.Sprintf("hnsw: Search with a %d-dimensional query in a %d-dimensional graph", len(q), g.dims))
	}
	if k <= 0 || g.top < 0 {
		return nil
	}
	if ef <= 0 {
		ef = g.efS
	}
	ef = max(ef, k)
	s := g.getScratch()
	defer g.scratchPool.Put(s)
	ep := Neighbor{g.entry, vecdot.Dot(q, g.vecs[g.entry])}
	for l := g.top; l > 0; l-- {
		ep = g.greedy(q, ep, l)
	}
	s.entries = append(s.entries[:0], ep)
	g.searchLayer(s, q, s.entries, ef, 0, accept)
	for len(s.res) > k {
		s.res.pop()
	}
	out := s.res.drainBestFirst(make([]Neighbor, 0, len(s.res)))
	return out
}

// searchLayer leaves in s.res the (up to) ef accepted nodes of layer l
// nearest q that a best-first walk from entries finds.
func (g *Graph) searchLayer(s *scratch, q []float32, entries []Neighbor, ef, l int, accept func(uint32) bool) {
	s.newVisit()
	s.cand, s.res = s.cand[:0], s.res[:0]
	for _, e := range entries {
		s.visited[e.ID] = s.gen
		s.cand.push(e)
		if accept == nil || accept(e.ID) {
			s.res.push(e)
		}
	}
	for len(s.res) > ef {
		s.res.pop()
	}
	for len(s.cand) > 0 {
		c := s.cand.pop()
		// Every node still to expand is worse than the worst kept: the
		// walk cannot improve the result any more.
		if len(s.res) >= ef && c.Score < s.res[0].Score {
			break
		}
		for _, id := range g.links(c.ID, l) {
			if s.visited[id] == s.gen {
				continue
			}
			s.visited[id] = s.gen
			d := vecdot.Dot(q, g.vecs[id])
			if len(s.res) < ef || d > s.res[0].Score {
				s.cand.push(Neighbor{id, d})
				if accept == nil || accept(id) {
					s.res.push(Neighbor{id, d})
					if len(s.res) > ef {
						s.res.pop()
					}
				}
			}
		}
	}
}

// sortBestFirst sorts by descending score, ties by id so the order is
// deterministic.
func sortBestFirst(ns []Neighbor) {
	slices.SortFunc(ns, func(a, b Neighbor) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// The heaps are written out rather than built on container/heap, whose
// interface calls cost more than the comparisons on this hot path.

// maxHeap pops the highest score first: a minHeap of negated scores.
type maxHeap minHeap

func (h *maxHeap) push(n Neighbor) {
	n.Score = -n.Score
	(*minHeap)(h).push(n)
}

func (h *maxHeap) pop() Neighbor {
	n := (*minHeap)(h).pop()
	n.Score = -n.Score
	return n
}

// minHeap pops the lowest score first: the worst of a result set.
type minHeap []Neighbor

func (h *minHeap) push(n Neighbor) {
	*h = append(*h, n)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].Score <= a[i].Score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *minHeap) pop() Neighbor {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(a) {
			break
		}
		if c+1 < len(a) && a[c+1].Score < a[c].Score {
			c++
		}
		if a[i].Score <= a[c].Score {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}

// drainBestFirst empties h into dst, best first.
func (h *minHeap) drainBestFirst(dst []Neighbor) []Neighbor {
	start := len(dst)
	for len(*h) > 0 {
		dst = append(dst, h.pop())
	}
	slices.Reverse(dst[start:])
	return dst
}
