package telemetry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/store"
)

// fakeCounts is a TaskStates that reports what the test sets and tells
// it of each call.
type fakeCounts struct {
	mu     sync.Mutex
	counts map[a2a.TaskState]int64
	err    error
	calls  chan struct{}
}

func (f *fakeCounts) set(c map[a2a.TaskState]int64, err error) {
	f.mu.Lock()
	f.counts, f.err = c, err
	f.mu.Unlock()
}

func (f *fakeCounts) taskStates(context.Context) (map[a2a.TaskState]int64, error) {
	f.mu.Lock()
	c, err := f.counts, f.err
	f.mu.Unlock()
	f.calls <- struct{}{}
	return c, err
}

func TestDatabaseCollector(t *testing.T) {
	f := &fakeCounts{calls: make(chan struct{}, 8)}
	f.set(map[a2a.TaskState]int64{a2a.TaskStateWorking: 2, a2a.TaskStateCompleted: 5}, nil)
	d := telemetry.NewDatabase(&telemetry.DatabaseOptions{TaskStatesEvery: time.Hour})
	d.Attach(&store.Stores{TaskStates: f.taskStates, Pools: func() []store.PoolStats {
		return []store.PoolStats{{Name: "main", MaxConns: 8, InUse: 3, Idle: 2, Waits: 7, WaitTime: 1500 * time.Millisecond}}
	}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(d)
	d.ObserveBatch(3)
	d.ObserveBatch(200)

	// The first scrape counts itself.
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"novaos_tasks", map[string]string{"state": "working"}, 2},
		{"novaos_tasks", map[string]string{"state": "completed"}, 5},
		{"novaos_tasks", map[string]string{"state": "input_required"}, 0},
		{"novaos_db_connections", map[string]string{"pool": "main", "state": "in_use"}, 3},
		{"novaos_db_connections", map[string]string{"pool": "main", "state": "idle"}, 2},
		{"novaos_db_connections_max", map[string]string{"pool": "main"}, 8},
		{"novaos_db_connection_waits_total", map[string]string{"pool": "main"}, 7},
		{"novaos_db_connection_wait_seconds_total", map[string]string{"pool": "main"}, 1.5},
		{"novaos_db_write_batch_size", nil, 2},
	}
	for _, c := range checks {
		if got := sample(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	<-f.calls

	// Later scrapes report the last count without counting, and ask Run
	// for a new one.
	f.set(map[a2a.TaskState]int64{a2a.TaskStateWorking: 1, a2a.TaskStateCompleted: 6}, nil)
	if got := sample(t, reg, "novaos_tasks", map[string]string{"state": "completed"}); got != 5 {
		t.Errorf("completed = %v, want the last count, 5", got)
	}
	if n := len(f.calls); n != 0 {
		t.Errorf("a scrape with a count at hand counted again (%d calls)", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	<-f.calls // Run counted, as the scrapes asked
	cancel()
	<-done
	if got := sample(t, reg, "novaos_tasks", map[string]string{"state": "completed"}); got != 6 {
		t.Errorf("completed = %v, want Run's count, 6", got)
	}
	// A count that fails keeps the last one.
	f.set(nil, errors.New("database down"))
	if got := d.Refresh(context.Background()); got[a2a.TaskStateCompleted] != 6 {
		t.Errorf("Refresh after a failure = %v, want the last count", got)
	}
	<-f.calls
}

func TestDatabaseWithoutCounts(t *testing.T) {
	d := telemetry.NewDatabase(nil)
	d.Attach(&store.Stores{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(d)
	if got := sample(t, reg, "novaos_tasks", nil); got != -1 {
		t.Errorf("novaos_tasks reported for stores that cannot count: %v", got)
	}
	// Run returns at once when there is nothing to count.
	d.Run(context.Background())
}
