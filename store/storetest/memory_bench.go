package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/memory"
)

// benchWords is a vocabulary for synthetic memories; Zipf-drawn, so a few
// words are everywhere and most are rare, as in real text.
var benchWords = func() []string {
	base := strings.Fields(`user prefers concise summaries weekly report deploy cluster invoice currency euro dollar
		meeting friday monday calendar travel flight hotel lisbon london paris support ticket refund plan annual
		monthly customer order shipping address phone email dark mode theme language spanish english french coffee
		tea lunch dinner project deadline release version bug crash login password reset account billing payment card`)
	out := slices.Clone(base)
	for i := range 2000 {
		out = append(out, fmt.Sprintf("term%d", i))
	}
	return out
}()

func benchText(z *rand.Zipf, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = benchWords[int(z.Uint64())%len(benchWords)]
	}
	return strings.Join(w, " ")
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

var memBenchSeq atomic.Int64

// BenchmarkMemoryWrite measures durable memory writes (row, full-text
// entry, vector and idempotency key) from 16 concurrent writers, and, as
// the baseline of the same run, task creations of the same store family
// (tasks, nil to skip): the ratio says what the memory write costs over
// the platform's cheapest durable write. It reports writes/s and p50/p99
// latency of each.
func BenchmarkMemoryWrite(b *testing.B, s memory.Store, tasks a2asrv.TaskStore) {
	emb := memory.NewHashEmbedder(0)
	run := func(b *testing.B, write func(i int64) error) {
		var mu sync.Mutex
		var lat []time.Duration
		b.SetParallelism(8) // 8 × GOMAXPROCS writers
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for pb.Next() {
				t0 := time.Now()
				if err := write(memBenchSeq.Add(1)); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
		b.ReportMetric(float64(len(lat))/time.Since(start).Seconds(), "writes/s")
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	}
	ctx := context.Background()
	b.Run("Memory", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		z := rand.NewZipf(r, 1.1, 1, uint64(len(benchWords)-1))
		var rmu sync.Mutex
		run(b, func(i int64) error {
			rmu.Lock()
			text := benchText(z, 24)
			rmu.Unlock()
			now := time.Now()
			m := &memory.Memory{ID: fmt.Sprintf("w%d", i), Partition: agentA, Content: text, Version: 1, CreatedAt: now,
				Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(text)}}
			_, _, err := s.Put(ctx, "bench", m, key(fmt.Sprintf("key-%d", i)))
			return err
		})
	})
	if tasks == nil {
		return
	}
	b.Run("TaskBaseline", func(b *testing.B) {
		run(b, func(i int64) error {
			_, err := tasks.Create(ctx, alice, &a2a.Task{ID: fmt.Sprintf("wb-%d", i), ContextID: "c",
				Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: time.Now()}})
			return err
		})
	})
}

// BenchmarkMemoryQuery fills one partition of one tenant with n synthetic
// memories and measures memory.Retrieve (the default stack) and, as the
// baseline of the same run, keyword search alone, reporting p50 and p99.
func BenchmarkMemoryQuery(b *testing.B, s memory.Store, n int) {
	ctx := context.Background()
	emb := memory.NewHashEmbedder(0)
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(benchWords)-1))
	base := time.Now()
	var wg sync.WaitGroup
	texts := make([]string, n)
	for i := range texts {
		texts[i] = benchText(z, 12+r.IntN(20))
	}
	jobs := make(chan int)
	var failed atomic.Value
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				at := base.Add(time.Duration(i) * time.Millisecond)
				m := &memory.Memory{ID: fmt.Sprintf("q%d", i), Partition: agentA, Content: texts[i], ConversationID: "conv",
					Version: 1, CreatedAt: at, Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(texts[i])}}
				if _, _, err := s.Put(ctx, "bench", m, memory.Key{}); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	// A serving store is swept periodically; the sweep also does the
	// store's index upkeep.
	for range 4 {
		if _, err := s.Sweep(ctx, base, 1000); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = benchText(z, 3+r.IntN(5))
	}
	f := memory.Filter{Partition: agentA, Now: base}
	measure := func(b *testing.B, q func(string) error) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			if err := q(queries[i%len(queries)]); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			i++
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	}
	b.Run(fmt.Sprintf("Retrieve/%d", n), func(b *testing.B) {
		measure(b, func(q string) error {
			_, err := memory.Retrieve(ctx, s, emb, "bench", f, q, 10, nil)
			return err
		})
	})
	b.Run(fmt.Sprintf("KeywordBaseline/%d", n), func(b *testing.B) {
		measure(b, func(q string) error {
			_, err := s.SearchKeyword(ctx, "bench", f, memory.Terms(q), 10)
			return err
		})
	})
}
