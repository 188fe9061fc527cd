package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
)

// QueryEmbedder is an Embedder that can weigh a query's words by their
// inverse document frequency (HashEmbedder does). Retrieve uses it when
// the Embedder has it.
type QueryEmbedder interface {
	Embedder
	QueryVector(text string, idf func(term string) float64) []float32
}

// QueryIDF is the weight Retrieve gives a query word that df of docs
// memories of the partition hold: the square of ln(1 + docs/(1+df)).
// Squared because stored vectors carry no idf of their own, so the query
// carries it for both sides of the cosine, as tf-idf does.
func QueryIDF(docs, df int) float64 {
	x := math.Log(1 + float64(docs)/float64(1+df))
	return x * x
}

// RetrieveOptions tunes Retrieve. The zero value means the defaults,
// chosen on LoCoMo (see README) and kept round rather than fitted.
type RetrieveOptions struct {
	// Candidates is how many memories each search returns before fusion
	// (default 100).
	Candidates int
	// Fuse weighs the two lists (default K 5, keyword weight 1, vector
	// weight 0.5: the lexical default embedder repeats much of what
	// keyword search finds, so it votes with half a voice).
	Fuse FuseOptions
	// Neighbours is the share of a memory's fused score given to the
	// memories written just before and after it in its conversation
	// (default 0.3; negative turns it off). The answer to a question is
	// often the turn after the one that names its subject ("what did you
	// name her?" — "Pepper").
	Neighbours float64
	// NeighbourDepth is how many of the best fused memories lend their
	// score to their neighbours (default 50).
	NeighbourDepth int
}

// DefaultFuse is the fusion Retrieve uses when RetrieveOptions.Fuse is
// zero.
var DefaultFuse = FuseOptions{K: 5, KeywordWeight: 1, VectorWeight: 0.5}

// Retrieve runs the default retrieval stack for query over f's memories of
// tenant and returns up to limit results, best first: keyword search and
// vector search (the query weighted by the partition's term statistics
// when emb is a QueryEmbedder), reciprocal-rank fusion, then conversation
// neighbours. emb nil means keyword search only.
//
// The service and the benchmarks call this one function, so what is
// measured is what is served.
func Retrieve(ctx context.Context, s Memories, emb Embedder, tenant string, f Filter, query string, limit int, opts *RetrieveOptions) ([]Fused, error) {
	var o RetrieveOptions
	if opts != nil {
		o = *opts
	}
	if o.Candidates <= 0 {
		o.Candidates = 100
	}
	if o.Fuse == (FuseOptions{}) {
		o.Fuse = DefaultFuse
	}
	if o.Neighbours == 0 {
		o.Neighbours = 0.3
	}
	if o.NeighbourDepth <= 0 {
		o.NeighbourDepth = 50
	}
	terms := Terms(query)
	docs, df, err := s.TermStats(ctx, tenant, f.Partition, terms)
	if err != nil {
		return nil, fmt.Errorf("memory: term statistics: %w", err)
	}
	kw, err := s.SearchKeyword(ctx, tenant, f, KeywordTerms(terms, docs, df), o.Candidates)
	if err != nil {
		return nil, fmt.Errorf("memory: keyword search: %w", err)
	}
	var vec []Hit
	if emb != nil {
		var qv []float32
		if qe, ok := emb.(QueryEmbedder); ok {
			qv = qe.QueryVector(query, func(t string) float64 { return QueryIDF(docs, df[t]) })
		} else {
			vs, err := emb.Embed(ctx, []string{query})
			if err != nil {
				return nil, fmt.Errorf("memory: embed query: %w", err)
			}
			qv = vs[0]
		}
		if vec, err = s.SearchVector(ctx, tenant, f, Embedding{Model: emb.ModelID(), Vector: qv}, o.Candidates); err != nil {
			return nil, fmt.Errorf("memory: vector search: %w", err)
		}
	}
	fused := fuseRanks(kw, vec, o.Fuse)
	if o.Neighbours > 0 && len(fused) > 0 {
		top := fused[:min(len(fused), o.NeighbourDepth)]
		ids := make([]string, len(top))
		for i := range top {
			ids[i] = top[i].Memory.ID
		}
		adj, err := s.Adjacent(ctx, tenant, f, ids)
		if err != nil {
			return nil, fmt.Errorf("memory: conversation neighbours: %w", err)
		}
		fused = smooth(fused, adj, o.Neighbours)
	}
	page := fused[:min(len(fused), limit)]
	score(terms, page)
	return page, nil
}

// Smooth lends each fused memory's score to its conversation neighbours:
// a neighbour gains share times it, whether it was found or not (one that
// was not joins the list). adj maps a memory id to its neighbours (what
// Memories.Adjacent returns). The result is sorted by the new score.
func Smooth(queryTerms []string, fused []Fused, adj map[string][]Memory, share float64) []Fused {
	out := smooth(fused, adj, share)
	score(queryTerms, out)
	return out
}

// smooth is Smooth without the scores.
func smooth(fused []Fused, adj map[string][]Memory, share float64) []Fused {
	byID := make(map[string]int, len(fused))
	out := slices.Clone(fused)
	for i := range out {
		byID[out[i].Memory.ID] = i
	}
	bonus := make([]float64, len(out))
	for i := range fused {
		for _, n := range adj[fused[i].Memory.ID] {
			j, ok := byID[n.ID]
			if !ok {
				j = len(out)
				byID[n.ID] = j
				out = append(out, Fused{Memory: n})
				bonus = append(bonus, 0)
			}
			bonus[j] += share * fused[i].RRF
		}
	}
	for i := range out {
		out[i].RRF += bonus[i]
	}
	slices.SortStableFunc(out, func(a, b Fused) int { return cmp.Compare(b.RRF, a.RRF) })
	return out
}

// KeywordTerms leaves out of a keyword search the terms more than half of
// the partition's docs memories hold (df from TermStats), unless that
// would leave none. BM25 gives such a term next to no weight, yet the
// index must score every memory holding it: a query with one everyday
// word would rank the whole partition.
func KeywordTerms(terms []string, docs int, df map[string]int) []string {
	var out []string
	for _, t := range terms {
		if 2*df[t] <= docs {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return terms
	}
	return out
}
