package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/lease"
)

// Instance is one process's handle on a database that other instances share.
type Instance struct {
	Tasks     a2asrv.TaskStore
	Recoverer a2asrv.Recoverer
	// Crash ends the handle as kill -9 would: the heartbeat stops and the
	// lease is left to lapse, not given up. The handle is not used again.
	Crash func()
	// Close ends the handle gracefully, giving its lease up.
	Close func()
	// WriteRaw stores a task row as written by a process that is gone
	// (no lease), bypassing the store's encoding: id, scope and state in
	// their columns, version 1, and body as it is. The contract uses it
	// for rows the store cannot read back.
	WriteRaw func(t *testing.T, scope a2asrv.Scope, id string, state a2a.TaskState, body []byte)
}

// LeaseOptions are the lease times TestRecoverer's instances must use: short,
// so a crashed instance's lease lapses within the test, yet twenty
// heartbeats long, so a live instance on a loaded machine never looks dead
// (at ten, a renewal queued behind other tests' commits under -race once
// came too late).
var LeaseOptions = lease.Options{Heartbeat: 100 * time.Millisecond, Expiry: 2 * time.Second}

// TestRecoverer runs the a2asrv.Recoverer contract: only tasks waiting for a
// process (a2asrv.OrphanStates) whose writer is dead are orphans, settling
// one jumps its version by a2asrv.RecoveryVersionGap, and two instances never
// both settle one task. newDB returns a function that opens a new instance
// (with LeaseOptions) on one fresh database, the same database at every call.
func TestRecoverer(t *testing.T, newDB func(t *testing.T) func() Instance) {
	t.Run("OrphansOfDeadInstancesOnly", func(t *testing.T) { testOrphans(t, newDB(t)) })
	t.Run("SettleJumpsTheVersion", func(t *testing.T) { testSettle(t, newDB(t)) })
	t.Run("SettleConflicts", func(t *testing.T) { testSettleConflicts(t, newDB(t)) })
	t.Run("ClosedInstanceLeavesOrphansAtOnce", func(t *testing.T) { testClosedInstance(t, newDB(t)) })
	t.Run("ConcurrentRecoverSettlesEachOnce", func(t *testing.T) { testConcurrentRecover(t, newDB(t)) })
	t.Run("UnreadableRowsBlockNothing", func(t *testing.T) { testUnreadable(t, newDB(t)) })
}

var allStates = []a2a.TaskState{
	a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking,
	a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled,
	a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired,
}

func orphanIDs(t *testing.T, r a2asrv.Recoverer) []string {
	t.Helper()
	found, next, err := r.Orphans(ctxT(t), "", 1000)
	if err != nil || next != "" {
		t.Fatalf("Orphans = next %q, %v; want all at once", next, err)
	}
	var out []string
	for _, o := range found {
		out = append(out, o.Task.ID)
	}
	slices.Sort(out)
	return out
}

// awaitOrphans polls r until it reports exactly want (sorted), which takes
// a lapsed lease: at most about LeaseOptions.Expiry.
func awaitOrphans(t *testing.T, r a2asrv.Recoverer, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * LeaseOptions.Expiry)
	var got []string
	for time.Now().Before(deadline) {
		if got = orphanIDs(t, r); slices.Equal(got, want) {
			return
		}
		time.Sleep(LeaseOptions.Heartbeat / 2)
	}
	t.Fatalf("orphans = %v, want %v", got, want)
}

func testOrphans(t *testing.T, open func() Instance) {
	a, b := open(), open()
	var want []string
	for _, s := range allStates {
		id := "a-" + s.String()
		mustCreate(t, a.Tasks, alice, task(id, "c", s, 0))
		if slices.Contains(a2asrv.OrphanStates(), s) {
			want = append(want, id)
		}
	}
	mustCreate(t, b.Tasks, alice, task("b-working", "c", a2a.TaskStateWorking, 0))
	// Written by b, then by a: the last writer owns it.
	mustCreate(t, b.Tasks, alice, task("moved", "c", a2a.TaskStateSubmitted, 0))
	moved := task("moved", "c", a2a.TaskStateWorking, time.Second)
	if _, err := a.Tasks.Update(ctxT(t), alice, moved, 1); err != nil {
		t.Fatal(err)
	}
	want = append(want, "moved")
	slices.Sort(want)

	// Live instances renew their leases: after several expiries, nobody's
	// tasks are orphans, and an instance never reports its own.
	time.Sleep(3 * LeaseOptions.Expiry)
	if got := orphanIDs(t, b.Recoverer); len(got) != 0 {
		t.Fatalf("orphans while every instance lives: %v", got)
	}
	if got := orphanIDs(t, a.Recoverer); len(got) != 0 {
		t.Fatalf("orphans while every instance lives: %v", got)
	}

	a.Crash()
	awaitOrphans(t, b.Recoverer, want)
	found, _, err := b.Recoverer.Orphans(ctxT(t), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range found {
		wantV := a2asrv.Version(1)
		wantT := task(o.Task.ID, "c", a2a.TaskState(0), 0)
		if o.Task.ID == "moved" {
			wantV, wantT = 2, moved
		} else {
			wantT.Status.State = o.Task.Status.State
		}
		if o.Scope != alice || o.Version != wantV {
			t.Errorf("orphan %s: scope %+v version %d, want %+v version %d", o.Task.ID, o.Scope, o.Version, alice, wantV)
		}
		if diff := gocmp.Diff(stored(wantT), o.Task); diff != "" {
			t.Errorf("orphan %s (-want +got):\n%s", o.Task.ID, diff)
		}
	}
	// Pages of two walk every orphan once, in id order.
	var paged []string
	after := ""
	for range len(want) {
		got, next, err := b.Recoverer.Orphans(ctxT(t), after, 2)
		if err != nil || len(got) > 2 {
			t.Fatalf("Orphans(after %q, limit 2) = %d orphans, %v", after, len(got), err)
		}
		for _, o := range got {
			paged = append(paged, o.Task.ID)
		}
		if after = next; after == "" {
			break
		}
	}
	if !slices.Equal(paged, want) || after != "" {
		t.Errorf("paged orphans = %v (next %q), want %v in order", paged, after, want)
	}
}

func testSettle(t *testing.T, open func() Instance) {
	a, b := open(), open()
	// a1 is written by b, then streamed to by a (appended events, which
	// make a its writer): the orphan and the settled task carry them.
	submitted := task("a1", "c", a2a.TaskStateSubmitted, 0)
	mustCreate(t, b.Tasks, alice, submitted)
	evs := []*a2a.StreamResponse{
		statusEvent("a1", a2a.TaskStateWorking, time.Second, "on it"),
		chunkEvent("a1", "art", "one ", false),
		chunkEvent("a1", "art", "two", true),
	}
	mustAppend(t, a.Tasks, alice, "a1", 1, nil, evs...)
	working := applied(t, stored(submitted), evs...)
	mustCreate(t, b.Tasks, alice, task("b1", "c", a2a.TaskStateWorking, 0))
	a.Crash()
	awaitOrphans(t, b.Recoverer, []string{"a1"})
	found, _, err := b.Recoverer.Orphans(ctxT(t), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(working, found[0].Task); diff != "" || found[0].Version != 4 {
		t.Errorf("orphan at version %d (want 4), with its events applied (-want +got):\n%s", found[0].Version, diff)
	}

	now := base.Add(time.Hour)
	n, err := a2asrv.Recover(ctxT(t), b.Recoverer, &a2asrv.RecoverOptions{
		Now: func() time.Time { return now }, NewID: func() string { return "restart" },
	})
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	msg := a2a.Message{MessageID: "restart", Role: a2a.RoleAgent, TaskID: "a1", ContextID: "c", Parts: []a2a.Part{a2a.TextPart(a2asrv.RestartedText)}}
	want := stored(working)
	want.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &msg, Timestamp: now}
	want.History = append(slices.Clone(want.History), msg)
	settledV := 4 + a2asrv.RecoveryVersionGap
	wantTask(t, b.Tasks, alice, want, settledV)
	// The live instance's running task is untouched.
	wantTask(t, b.Tasks, alice, task("b1", "c", a2a.TaskStateWorking, 0), 1)
	if got := orphanIDs(t, b.Recoverer); len(got) != 0 {
		t.Errorf("orphans after Recover: %v", got)
	}
	// Versions go on from the settled one, and the settled body stands
	// alone: events appended after it apply to it, not to old ones.
	more := chunkEvent("a1", "art2", "late", false)
	mustAppend(t, b.Tasks, alice, "a1", settledV, nil, more)
	wantTask(t, b.Tasks, alice, applied(t, want, more), settledV+1)
}

func testSettleConflicts(t *testing.T, open func() Instance) {
	a, b, c := open(), open(), open()
	mustCreate(t, a.Tasks, alice, task("a1", "c", a2a.TaskStateWorking, 0))
	mustCreate(t, c.Tasks, alice, task("c1", "c", a2a.TaskStateWorking, 0))
	a.Crash()
	awaitOrphans(t, b.Recoverer, []string{"a1"})

	failed := task("a1", "c", a2a.TaskStateFailed, time.Minute)
	tests := []struct {
		name  string
		scope a2asrv.Scope
		task  *a2a.Task
		prev  a2asrv.Version
		want  error
	}{
		{"stale version", alice, failed, 2, a2asrv.ErrConcurrentModification},
		{"writer alive", alice, task("c1", "c", a2a.TaskStateFailed, time.Minute), 1, a2asrv.ErrConcurrentModification},
		{"missing task", alice, task("nope", "c", a2a.TaskStateFailed, 0), 1, a2asrv.ErrNotFound},
		{"other scope", others[0].scope, failed, 1, a2asrv.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.Recoverer.Settle(ctxT(t), tt.scope, tt.task, tt.prev); !errors.Is(err, tt.want) {
				t.Errorf("Settle = %v, want %v", err, tt.want)
			}
		})
	}
	wantTask(t, c.Tasks, alice, task("c1", "c", a2a.TaskStateWorking, 0), 1)

	// b and c race to settle a1: exactly one wins.
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, r := range []a2asrv.Recoverer{b.Recoverer, c.Recoverer} {
		wg.Go(func() { _, errs[i] = r.Settle(ctxT(t), alice, failed, 1) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, a2asrv.ErrConcurrentModification):
			t.Errorf("losing Settle = %v, want ErrConcurrentModification", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of two racing Settles won (%v), want exactly one", won, errs)
	}
	wantTask(t, b.Tasks, alice, failed, 1+a2asrv.RecoveryVersionGap)
}

func testClosedInstance(t *testing.T, open func() Instance) {
	a, b := open(), open()
	mustCreate(t, a.Tasks, alice, task("a1", "c", a2a.TaskStateWorking, 0))
	a.Close()
	// A released lease needs no expiry to pass.
	if got := orphanIDs(t, b.Recoverer); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("orphans right after a graceful close: %v, want [a1]", got)
	}
}

func testConcurrentRecover(t *testing.T, open func() Instance) {
	a, b, c := open(), open(), open()
	const n = 60
	var want []string
	for i := range n {
		id := fmt.Sprintf("a%02d", i)
		mustCreate(t, a.Tasks, alice, task(id, "c", a2a.TaskStateWorking, 0))
		want = append(want, id)
	}
	a.Crash()
	awaitOrphans(t, b.Recoverer, want)
	counts := make([]int, 2)
	var wg sync.WaitGroup
	for i, r := range []a2asrv.Recoverer{b.Recoverer, c.Recoverer} {
		wg.Go(func() {
			var err error
			if counts[i], err = a2asrv.Recover(context.Background(), r, &a2asrv.RecoverOptions{BatchSize: 7}); err != nil {
				t.Errorf("Recover: %v", err)
			}
		})
	}
	wg.Wait()
	if got := counts[0] + counts[1]; got != n {
		t.Errorf("settled %d + %d tasks, want %d in all", counts[0], counts[1], n)
	}
	for _, id := range want {
		got, v := mustGet(t, b.Tasks, alice, id)
		restarts := 0
		for _, m := range got.History {
			if m.Text() == a2asrv.RestartedText {
				restarts++
			}
		}
		if got.Status.State != a2a.TaskStateFailed || v != 1+a2asrv.RecoveryVersionGap || restarts != 1 {
			t.Errorf("%s: %s at version %d with %d restart messages; want FAILED at %d with one", id, got.Status.State, v, restarts, 1+a2asrv.RecoveryVersionGap)
		}
	}
}

// testUnreadable: rows a store cannot read, ahead of readable orphans in id
// order and filling whole batches, are passed over, and every orphan behind
// them is settled in one Recover.
func testUnreadable(t *testing.T, open func() Instance) {
	a, b := open(), open()
	if b.WriteRaw == nil {
		t.Fatal("Instance.WriteRaw is nil; the contract needs it")
	}
	// A body that names another task would make Settle write a row other
	// than the one found; the store must not report it either.
	other, err := a2astore.EncodeTask(alice.Tenant, alice.Owner, task("elsewhere", "c", a2a.TaskStateWorking, 0))
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{[]byte("{not json"), []byte(`{"id":`), other, []byte("null"), {0xff, 0x00}}
	for i, body := range bodies {
		b.WriteRaw(t, alice, fmt.Sprintf("0-bad-%d", i), a2a.TaskStateWorking, body)
	}
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("1-good-%d", i)
		mustCreate(t, a.Tasks, alice, task(id, "c", a2a.TaskStateWorking, 0))
		want = append(want, id)
	}
	a.Crash()
	awaitOrphans(t, b.Recoverer, want)
	n, err := a2asrv.Recover(ctxT(t), b.Recoverer, &a2asrv.RecoverOptions{BatchSize: 2})
	if err != nil || n != len(want) {
		t.Fatalf("Recover = %d, %v; want %d settled", n, err, len(want))
	}
	for _, id := range want {
		if got, _ := mustGet(t, b.Tasks, alice, id); got.Status.State != a2a.TaskStateFailed {
			t.Errorf("%s behind unreadable rows: %s, want FAILED", id, got.Status.State)
		}
	}
}
