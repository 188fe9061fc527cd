package memindex_test

import (
	"cmp"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
)

var (
	benchVectors = flag.Int("memindex.vectors", 100_000, "memories in BenchmarkVectorSearch's partition")
	benchEf      = flag.Int("memindex.ef", 0, "BenchmarkVectorSearch's HNSW search width (0: the default)")
)

// benchWords are the vocabulary of the benchmark's texts, drawn with a
// Zipf law as words are in conversation.
var benchWords = strings.Fields(`the deploy pipeline failed again on staging because the database migration
timed out while the cache warmed and the team agreed to retry after lunch with a smaller batch size
alice prefers tea in the morning and coffee after three she lives in lisbon and walks her dog pepper
the quarterly planning meeting moved to thursday marketing wants the launch before the conference
bob is allergic to peanuts his daughter plays violin the invoice for march is still unpaid`)

func benchText(r *rand.Rand, z *rand.Zipf, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(benchWords[z.Uint64()])
		b.WriteString(fmt.Sprint(r.IntN(40), " "))
	}
	return b.String()
}

// BenchmarkVectorSearch compares the HNSW graph with the exact scan (int8
// ranking, float32 scoring of the best candidates) over one partition of
// HashEmbedder vectors of Zipf-drawn texts (the default embedder), at the
// 10 and the 100 results Retrieve asks for, and reports the recall of
// each against a float32 scan of every vector.
func BenchmarkVectorSearch(b *testing.B) {
	src := newSource()
	emb := memory.NewHashEmbedder(0)
	r := rand.New(rand.NewPCG(31, 32))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(benchWords)-1))
	vecs := make([][]float32, *benchVectors)
	for i := range vecs {
		text := benchText(r, z, 12+r.IntN(20))
		vecs[i] = emb.Vector(text)
		src.put(acme, memory.Memory{ID: fmt.Sprint("m", i), Version: 1, Content: text,
			Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: slices.Clone(vecs[i])}})
	}
	queries := make([]memory.Embedding, 200)
	for i := range queries {
		queries[i] = memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(benchText(r, z, 3+r.IntN(5)))}
	}
	exact := memindex.New(src, &memindex.Options{ApproxAbove: -1})
	var logs strings.Builder
	var mu sync.Mutex
	if _, err := exact.Vector(ctx, acme, memory.Filter{}, queries[0], 1); err != nil { // loads it
		b.Fatal(err)
	}
	approx := memindex.New(src, &memindex.Options{ApproxAbove: 1, EfSearch: *benchEf, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs},
		&slog.HandlerOptions{Level: slog.LevelDebug}))})
	if _, err := approx.Vector(ctx, acme, memory.Filter{}, queries[0], 1); err != nil {
		b.Fatal(err)
	}
	awaitLog(b, &mu, &logs, "vector graph built", 10*time.Minute)
	mu.Lock()
	b.Logf("graph build: %s", logs.String()[strings.Index(logs.String(), "vector graph built"):])
	mu.Unlock()
	for _, k := range []int{10, 100} {
		// The truth: a float32 scan of every vector (HashEmbedder vectors
		// are unit length).
		var want [][]string
		for _, q := range queries {
			type scored struct {
				i int
				s float32
			}
			all := make([]scored, len(vecs))
			for i, v := range vecs {
				all[i] = scored{i, memory.Dot(q.Vector, v)}
			}
			slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
			var w []string
			for _, a := range all[:k] {
				w = append(w, fmt.Sprint("m", a.i))
			}
			want = append(want, w)
		}
		for _, c := range []struct {
			name  string
			cache *memindex.Cache
		}{{"exact", exact}, {"hnsw", approx}} {
			b.Run(fmt.Sprintf("%s/k=%d", c.name, k), func(b *testing.B) {
				found, total, i := 0, 0, 0
				for b.Loop() {
					q := i % len(queries)
					hs, err := c.cache.Vector(ctx, acme, memory.Filter{}, queries[q], k)
					if err != nil {
						b.Fatal(err)
					}
					for _, id := range ids(hs) {
						if slices.Contains(want[q], id) {
							found++
						}
					}
					total += len(want[q])
					i++
				}
				b.ReportMetric(float64(found)/float64(total), "recall")
			})
		}
	}
}
