package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store"
)

// StatsStores are a fresh database's stores and the batch sizes its
// writer reported (Options.ObserveBatch) so far.
type StatsStores struct {
	Stores  *store.Stores
	Batches func() []int
}

// TestStats checks what a database reports for metrics: its tasks by
// state (Stores.TaskStates), its pools (Stores.Pools), and the size of
// each group commit of task writes.
func TestStats(t *testing.T, open func(t *testing.T) StatsStores) {
	t.Run("TaskStates", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		empty, err := s.Stores.TaskStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(empty) != 0 {
			t.Errorf("a fresh database counts %v", empty)
		}
		states := []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
			a2a.TaskStateInputRequired, a2a.TaskStateCompleted, a2a.TaskStateCompleted}
		for i, st := range states {
			// Scopes do not matter: the counts are the database's.
			scope := a2asrv.Scope{Tenant: fmt.Sprint("t", i%2), Owner: "o"}
			if _, err := s.Stores.Tasks.Create(ctx, scope, task(fmt.Sprint("stats-", i), "c", st, time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		// A state that changes moves its task from one count to another.
		scope := a2asrv.Scope{Tenant: "t0", Owner: "o"}
		got, v, err := s.Stores.Tasks.Get(ctx, scope, "stats-0")
		if err != nil {
			t.Fatal(err)
		}
		got.Status.State = a2a.TaskStateCanceled
		if _, err := s.Stores.Tasks.Update(ctx, scope, got, v); err != nil {
			t.Fatal(err)
		}
		counts, err := s.Stores.TaskStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[a2a.TaskState]int64{a2a.TaskStateWorking: 1, a2a.TaskStateCanceled: 1, a2a.TaskStateCompleted: 3,
			a2a.TaskStateFailed: 1, a2a.TaskStateInputRequired: 1}
		if diff := gocmp.Diff(want, counts); diff != "" {
			t.Errorf("TaskStates (-want +got):\n%s", diff)
		}
		var total int
		for _, n := range s.Batches() {
			if n < 1 {
				t.Errorf("a batch of %d writes was reported", n)
			}
			total += n
		}
		// Eight task writes, however they were grouped; other writes
		// (leases) may be batched on the same writer.
		if total < len(states)+1 {
			t.Errorf("the batches reported hold %d writes, want at least %d", total, len(states)+1)
		}
	})
	t.Run("Pools", func(t *testing.T) {
		s := open(t)
		pools := s.Stores.Pools()
		if len(pools) == 0 {
			t.Fatal("no pool reported")
		}
		seen := map[string]bool{}
		for _, p := range pools {
			if p.Name == "" || seen[p.Name] {
				t.Errorf("pool name %q is empty or repeated", p.Name)
			}
			seen[p.Name] = true
			if p.InUse < 0 || p.Idle < 0 || p.Waits < 0 || p.WaitTime < 0 || (p.MaxConns > 0 && p.InUse+p.Idle > p.MaxConns) {
				t.Errorf("pool %+v: counts out of range", p)
			}
		}
	})
}
