package hnsw

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Benchmark data: clustered 256-dimensional vectors, clusters of about
// 200, as the recall tests use.
const benchDims = 256

var benchFixtures = map[int]*fixture{}

func benchFixture(b *testing.B, n int) *fixture {
	if f, ok := benchFixtures[n]; ok {
		return f
	}
	all := clustered(rand.New(rand.NewPCG(uint64(n), 2)), n+numQueries, benchDims, n/200, 1)
	f := &fixture{data: all[:n], queries: all[n:]}
	start := time.Now()
	f.g = build(f.data, nil)
	b.Logf("built n=%d dims=%d in %v", n, benchDims, time.Since(start).Round(time.Millisecond))
	benchFixtures[n] = f
	return f
}

// BenchmarkSearch and BenchmarkExactScan run on the same data so their
// ns/op give the speed-up; recall is reported beside each setting.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, ef := range []int{16, 32, 64, 128} {
			b.Run(fmt.Sprintf("n=%d/ef=%d", n, ef), func(b *testing.B) {
				f := benchFixture(b, n)
				rc := recall(f.g, f.data, f.queries, 10, ef, nil)
				b.ResetTimer()
				i := 0
				for b.Loop() {
					f.g.Search(f.queries[i%len(f.queries)], 10, ef, nil)
					i++
				}
				b.ReportMetric(rc, "recall@10")
			})
		}
	}
}

// BenchmarkSearchFiltered rejects half the ids, as expired or deleted
// slots would be.
func BenchmarkSearchFiltered(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			f := benchFixture(b, n)
			accept := keepOne(2)
			rc := recall(f.g, f.data, f.queries, 10, 0, accept)
			b.ResetTimer()
			i := 0
			for b.Loop() {
				f.g.Search(f.queries[i%len(f.queries)], 10, 0, accept)
				i++
			}
			b.ReportMetric(rc, "recall@10")
		})
	}
}

func BenchmarkExactScan(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			f := benchFixture(b, n)
			i := 0
			for b.Loop() {
				exact(f.data, f.queries[i%len(f.queries)], 10, nil)
				i++
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct{ n, efC int }{
		{10_000, 64}, {10_000, 100}, {100_000, 64},
	} {
		b.Run(fmt.Sprintf("n=%d/efConstruction=%d", tc.n, tc.efC), func(b *testing.B) {
			data := clustered(rand.New(rand.NewPCG(uint64(tc.n), 3)), tc.n, benchDims, tc.n/200, 1)
			b.ResetTimer()
			for b.Loop() {
				build(data, &Options{EfConstruction: tc.efC})
			}
			b.ReportMetric(float64(tc.n)*float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
		})
	}
}
