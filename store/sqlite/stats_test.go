package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

// batches collects the sizes an ObserveBatch hook is told.
type batches struct {
	mu sync.Mutex
	n  []int
}

func (b *batches) observe(n int) {
	b.mu.Lock()
	b.n = append(b.n, n)
	b.mu.Unlock()
}

func (b *batches) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.n...)
}

func TestStatsContract(t *testing.T) {
	storetest.TestStats(t, func(t *testing.T) storetest.StatsStores {
		b := &batches{}
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), &sqlite.Options{ObserveBatch: b.observe})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return storetest.StatsStores{Stores: db.Stores(), Batches: b.sizes}
	})
}

// BenchmarkTaskStates counts 10,000 tasks by state, what a /metrics
// scrape asks of the database.
func BenchmarkTaskStates(b *testing.B) {
	db := tempDB(b)
	ctx := context.Background()
	ts := db.TaskStore()
	states := []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateWorking, a2a.TaskStateFailed, a2a.TaskStateInputRequired}
	var wg sync.WaitGroup
	const tasks, writers = 10_000, 32
	for w := range writers {
		wg.Go(func() {
			for i := w; i < tasks; i += writers {
				id := fmt.Sprint("task-", i)
				task := &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: states[i%len(states)], Timestamp: time.Now()},
					History: []a2a.Message{{MessageID: "m-" + id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("a question of a few words, as an echo run carries")}}}}
				if _, err := ts.Create(ctx, a2asrv.Scope{Tenant: "t", Owner: "o"}, task); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	for b.Loop() {
		counts, err := db.TaskStates(ctx)
		if err != nil || counts[a2a.TaskStateCompleted] != int64(tasks/len(states)) {
			b.Fatal(counts, err)
		}
	}
}
