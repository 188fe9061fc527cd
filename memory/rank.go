package memory

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// FuseOptions tunes Fuse. The zero value means the defaults.
type FuseOptions struct {
	// K damps the weight of the first ranks (default 60, the value of
	// Cormack et al.'s reciprocal-rank fusion paper).
	K float64
	// KeywordWeight and VectorWeight scale each list's votes (default 1
	// and 1).
	KeywordWeight, VectorWeight float64
}

// Fused is one memory of a fused ranking.
type Fused struct {
	Memory Memory
	// RRF is the fused rank score the list is sorted by; it orders, but
	// says nothing about how well a memory matches.
	RRF float64
	// Score is the memory's calibrated similarity to the query (see
	// Similarity).
	Score float64
	// KeywordRank and VectorRank are the memory's 1-based ranks in each
	// list, 0 when it was not in that list.
	KeywordRank, VectorRank int
	// cosine is the memory's vector score, 0 when it was not in the
	// vector list: what Score is computed from with its terms.
	cosine float64
}

// Fuse merges a keyword ranking and a vector ranking of one query with
// reciprocal-rank fusion: a memory scores the sum over the lists it is in
// of weight/(K+rank), so agreement between the lists wins and neither
// list's raw scores (BM25 is unbounded, cosine is not comparable to it)
// need to be on one scale. Ties go to the better keyword rank, then the
// better vector rank, then the id, so the order is deterministic.
//
// Each result's Score is Similarity of the memory to queryTerms and its
// cosine (0 when it was not in the vector list).
func Fuse(queryTerms []string, keyword, vector []Hit, opts FuseOptions) []Fused {
	out := fuseRanks(keyword, vector, opts)
	score(queryTerms, out)
	return out
}

// fuseRanks is Fuse without the scores: Retrieve scores only the page it
// returns, since tokenising every candidate cost a fifth of a query.
func fuseRanks(keyword, vector []Hit, opts FuseOptions) []Fused {
	k := opts.K
	if k <= 0 {
		k = 60
	}
	wk, wv := opts.KeywordWeight, opts.VectorWeight
	if wk == 0 && wv == 0 {
		wk, wv = 1, 1
	}
	byID := map[string]*Fused{}
	var order []*Fused
	get := func(h *Hit) *Fused {
		f := byID[h.Memory.ID]
		if f == nil {
			f = &Fused{Memory: h.Memory}
			byID[h.Memory.ID] = f
			order = append(order, f)
		}
		return f
	}
	for i := range keyword {
		f := get(&keyword[i])
		if f.KeywordRank == 0 {
			f.KeywordRank = i + 1
			f.RRF += wk / (k + float64(i+1))
		}
	}
	for i := range vector {
		f := get(&vector[i])
		if f.VectorRank == 0 {
			f.VectorRank = i + 1
			f.RRF += wv / (k + float64(i+1))
			f.cosine = vector[i].Score
		}
	}
	out := make([]Fused, len(order))
	for i, f := range order {
		out[i] = *f
	}
	slices.SortFunc(out, func(a, b Fused) int {
		if c := cmp.Compare(b.RRF, a.RRF); c != 0 {
			return c
		}
		if c := cmp.Compare(rankKey(a.KeywordRank), rankKey(b.KeywordRank)); c != 0 {
			return c
		}
		if c := cmp.Compare(rankKey(a.VectorRank), rankKey(b.VectorRank)); c != 0 {
			return c
		}
		return cmp.Compare(a.Memory.ID, b.Memory.ID)
	})
	return out
}

// score sets each result's Score.
func score(queryTerms []string, fs []Fused) {
	qset := termSet(queryTerms)
	for i := range fs {
		fs[i].Score = similarity(qset, Terms(EmbedText(fs[i].Memory.Content, fs[i].Memory.Tags)), fs[i].cosine)
	}
}

func rankKey(r int) int {
	if r == 0 {
		return math.MaxInt
	}
	return r
}

// Similarity is the calibrated 0..1 score of a memory (its Terms) for a
// query (queryTerms), given their cosine: the mean of
//
//   - coverage, the share of the query's distinct terms the memory holds
//     (1 when it holds every word the query asks about), and
//   - the cosine clamped to [0, 1].
//
// Fixed points: 0 for a memory sharing no term and no spelling with the
// query, 1 for a memory whose text is the query's, and 0.5 or more for one
// that holds every query term. Both parts are computed here, not taken
// from a store's keyword score, so the score means the same on SQLite and
// PostgreSQL and does not drift with corpus statistics. It is a
// similarity, not a probability of relevance, and it is not the ranking
// key: a result list is ordered by fused rank, so a later item may score
// higher than an earlier one.
func Similarity(queryTerms, memoryTerms []string, cosine float64) float64 {
	return similarity(termSet(queryTerms), memoryTerms, cosine)
}

func similarity(q map[string]struct{}, memoryTerms []string, cosine float64) float64 {
	cov := 0.0
	if len(q) > 0 {
		seen := map[string]struct{}{}
		for _, t := range memoryTerms {
			if _, ok := q[t]; ok {
				seen[t] = struct{}{}
			}
		}
		cov = float64(len(seen)) / float64(len(q))
	}
	c := min(max(cosine, 0), 1)
	s := (cov + c) / 2
	return math.Round(s*1e4) / 1e4
}

func termSet(terms []string) map[string]struct{} {
	m := make(map[string]struct{}, len(terms))
	for _, t := range terms {
		m[t] = struct{}{}
	}
	return m
}

// TopK keeps the k best-scoring items offered to it (a bounded min-heap),
// for exact vector search over a partition without sorting it whole.
type TopK[T any] struct {
	k, n int
	h    topHeap[T]
}

// NewTopK returns a TopK keeping k items.
func NewTopK[T any](k int) *TopK[T] { return &TopK[T]{k: k} }

// Offer considers v with score s. Among equal scores the first offered
// is kept, so a scan in a fixed order gives a fixed result.
func (t *TopK[T]) Offer(v T, s float64) {
	if t.k <= 0 {
		return
	}
	t.n++
	if len(t.h) < t.k {
		heap.Push(&t.h, scored[T]{v, s, t.n})
		return
	}
	if s > t.h[0].s {
		t.h[0] = scored[T]{v, s, t.n}
		heap.Fix(&t.h, 0)
	}
}

// Min is the score an item must beat to be kept once k are held, or
// -Inf while fewer are.
func (t *TopK[T]) Min() float64 {
	if len(t.h) < t.k {
		return math.Inf(-1)
	}
	return t.h[0].s
}

// Sorted returns the kept items, best first, and their scores.
func (t *TopK[T]) Sorted() ([]T, []float64) {
	items := slices.Clone(t.h)
	slices.SortFunc(items, func(a, b scored[T]) int {
		if c := cmp.Compare(b.s, a.s); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	vs, ss := make([]T, len(items)), make([]float64, len(items))
	for i, it := range items {
		vs[i], ss[i] = it.v, it.s
	}
	return vs, ss
}

type scored[T any] struct {
	v T
	s float64
	n int
}

type topHeap[T any] []scored[T]

func (h topHeap[T]) Len() int { return len(h) }
func (h topHeap[T]) Less(i, j int) bool {
	// The root is the item to drop first: the lowest score, and among
	// equal scores the latest offered.
	if h[i].s != h[j].s {
		return h[i].s < h[j].s
	}
	return h[i].n > h[j].n
}
func (h topHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *topHeap[T]) Push(x any)   { *h = append(*h, x.(scored[T])) }
func (h *topHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
