package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// PushStores are a task store and the push-config store and outbox that
// share its writes (a2asrv.PushOutbox). Configs must implement
// a2asrv.PushDeliveryStore, and Outbox a2asrv.PushQueue.
type PushStores struct {
	Tasks   a2asrv.TaskStore
	Configs a2asrv.PushConfigStore
	Outbox  a2asrv.PushOutbox
}

// TestPushOutbox runs the push outbox contract. newStores must return new,
// empty stores each time it is called.
func TestPushOutbox(t *testing.T, newStores func(t *testing.T) PushStores) {
	t.Run("QueuesEveryWrite", func(t *testing.T) { testPushQueues(t, newStores(t)) })
	t.Run("StreamsPerConfig", func(t *testing.T) { testPushStreams(t, newStores(t)) })
	t.Run("HeadOnly", func(t *testing.T) { testPushHeadOnly(t, newStores(t)) })
	t.Run("LeaseExpiry", func(t *testing.T) { testPushLease(t, newStores(t)) })
	t.Run("ConcurrentClaimers", func(t *testing.T) { testPushConcurrentClaims(t, newStores(t)) })
	t.Run("Retry", func(t *testing.T) { testPushRetry(t, newStores(t)) })
	t.Run("DeadLetter", func(t *testing.T) { testPushDead(t, newStores(t)) })
	t.Run("FailedWriteQueuesNothing", func(t *testing.T) { testPushAtomic(t, newStores(t)) })
	t.Run("DeleteDrops", func(t *testing.T) { testPushDelete(t, newStores(t)) })
	t.Run("BadSettlement", func(t *testing.T) { testPushBadSettlement(t, newStores(t)) })
	t.Run("Continue", func(t *testing.T) { testPushContinue(t, newStores(t)) })
	t.Run("QueueDepth", func(t *testing.T) { testPushQueueDepth(t, newStores(t)) })
}

// Claims run at a time after every write a test made, with a lease long
// enough that no claim lapses unless a test means it to.
const pushLease = time.Hour

func later() time.Time { return time.Now().Add(time.Second) }

func claim(t *testing.T, s PushStores, now time.Time, max int) []*a2asrv.PushDelivery {
	t.Helper()
	ds, err := s.Outbox.ClaimPush(ctxT(t), now, max, pushLease)
	if err != nil {
		t.Fatalf("ClaimPush: %v", err)
	}
	return ds
}

func settle(t *testing.T, s PushStores, d *a2asrv.PushDelivery, o a2asrv.PushOutcome, next time.Time, msg string) {
	t.Helper()
	if _, err := s.Outbox.SettlePush(ctxT(t), d, a2asrv.PushSettlement{Outcome: o, At: time.Now(), Next: next, Error: msg}); err != nil {
		t.Fatalf("SettlePush(%s/%s #%d, %d): %v", d.Config.TaskID, d.Config.ID, d.Seq, o, err)
	}
}

// note is what a test compares of a notification: which stream it is on
// and what it carries.
type note struct {
	Stream string
	Kind   string // task, status or artifact
	State  string // the task's or the status update's state
	Text   string // the artifact chunk's text
}

func noteOf(t *testing.T, d *a2asrv.PushDelivery) note {
	t.Helper()
	var r a2a.StreamResponse
	if err := a2a.Unmarshal(d.Body, &r); err != nil {
		t.Fatalf("notification %s is not a StreamResponse: %v", d.Body, err)
	}
	n := note{Stream: d.Config.TaskID + "/" + d.Config.ID}
	switch {
	case r.Task != nil:
		n.Kind, n.State = "task", r.Task.Status.State.String()
	case r.StatusUpdate != nil:
		n.Kind, n.State = "status", r.StatusUpdate.Status.State.String()
	case r.ArtifactUpdate != nil:
		n.Kind = "artifact"
		if ps := r.ArtifactUpdate.Artifact.Parts; len(ps) > 0 {
			n.Text = ps[0].Text
		}
	default:
		t.Fatalf("notification %s carries nothing", d.Body)
	}
	return n
}

// drain delivers everything due, one claim of up to max at a time, and
// returns the notifications in delivery order.
func drain(t *testing.T, s PushStores, max int) []note {
	t.Helper()
	var out []note
	for range 1000 {
		ds := claim(t, s, later(), max)
		if len(ds) == 0 {
			return out
		}
		for _, d := range ds {
			out = append(out, noteOf(t, d))
			settle(t, s, d, a2asrv.PushDelivered, time.Time{}, "")
		}
	}
	t.Fatal("drain: the outbox never emptied")
	return nil
}

func deliveryState(t *testing.T, s PushStores, scope a2asrv.Scope, taskID, id string) *a2asrv.PushDeliveryState {
	t.Helper()
	ds, ok := s.Configs.(a2asrv.PushDeliveryStore)
	if !ok {
		t.Fatalf("%T is not an a2asrv.PushDeliveryStore", s.Configs)
	}
	st, err := ds.PushDeliveryState(ctxT(t), scope, taskID, id)
	if err != nil {
		t.Fatalf("PushDeliveryState(%s/%s): %v", taskID, id, err)
	}
	return st
}

func hook(taskID, id string) *a2a.TaskPushNotificationConfig {
	return &a2a.TaskPushNotificationConfig{ID: id, TaskID: taskID, URL: "https://hooks.example.com/" + id}
}

func testPushQueues(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	if got := drain(t, s, 10); len(got) != 0 {
		t.Fatalf("a task without configs queued %v", got)
	}
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	v := mustAppend(t, s.Tasks, alice, "t1", 1, nil,
		statusEvent("t1", a2a.TaskStateWorking, time.Second, "working"), chunkEvent("t1", "a1", "one", false))
	v = mustAppend(t, s.Tasks, alice, "t1", v, nil, chunkEvent("t1", "a1", "two", true))
	// A compacted append queues its events all the same.
	cur, _ := mustGet(t, s.Tasks, alice, "t1")
	last := statusEvent("t1", a2a.TaskStateInputRequired, 2*time.Second, "more?")
	v = mustAppend(t, s.Tasks, alice, "t1", v, applied(t, cur, last), last)
	cur, _ = mustGet(t, s.Tasks, alice, "t1")
	cur.Status.State = a2a.TaskStateCompleted
	if _, err := s.Tasks.Update(ctxT(t), alice, cur, v); err != nil {
		t.Fatal(err)
	}
	want := []note{
		{Stream: "t1/h1", Kind: "task", State: "TASK_STATE_SUBMITTED"}, // the task as it stood when the config was put
		{Stream: "t1/h1", Kind: "status", State: "TASK_STATE_WORKING"},
		{Stream: "t1/h1", Kind: "artifact", Text: "one"},
		{Stream: "t1/h1", Kind: "artifact", Text: "two"},
		{Stream: "t1/h1", Kind: "status", State: "TASK_STATE_INPUT_REQUIRED"},
		{Stream: "t1/h1", Kind: "task", State: "TASK_STATE_COMPLETED"},
	}
	if diff := gocmp.Diff(want, drain(t, s, 10)); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	st := deliveryState(t, s, alice, "t1", "h1")
	if st.State != a2asrv.PushStateActive || st.Pending != 0 || st.Attempts != 0 || st.LastDelivered.IsZero() {
		t.Errorf("after delivery: %+v", st)
	}
	// The scope is the config's: another scope's task of that id queues
	// nothing to it.
	bob := others[0].scope
	mustCreate(t, s.Tasks, alice, task("t2", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, bob, hook("t2", "h1"))
	if _, err := s.Tasks.Update(ctxT(t), alice, task("t2", "c1", a2a.TaskStateWorking, time.Second), 1); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s, 10); len(got) != 0 {
		t.Errorf("another scope's config got %v", got)
	}
}

func testPushStreams(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0), task("t2", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "a"), hook("t1", "b"), hook("t2", "a"))
	mustAppend(t, s.Tasks, alice, "t1", 1, nil, statusEvent("t1", a2a.TaskStateWorking, time.Second, ""))
	got := drain(t, s, 10)
	count := map[string][]string{}
	for _, n := range got {
		count[n.Stream] = append(count[n.Stream], n.Kind)
	}
	want := map[string][]string{"t1/a": {"task", "status"}, "t1/b": {"task", "status"}, "t2/a": {"task"}}
	if diff := gocmp.Diff(want, count); diff != "" {
		t.Errorf("notifications per stream (-want +got):\n%s", diff)
	}
}

func testPushHeadOnly(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	mustAppend(t, s.Tasks, alice, "t1", 1, nil, statusEvent("t1", a2a.TaskStateWorking, time.Second, ""))
	ds := claim(t, s, later(), 10)
	if len(ds) != 1 || noteOf(t, ds[0]).Kind != "task" {
		t.Fatalf("first claim: want the stream's head (the task) alone, got %d", len(ds))
	}
	if more := claim(t, s, later(), 10); len(more) != 0 {
		t.Fatalf("a leased stream was claimed again: %d", len(more))
	}
	settle(t, s, ds[0], a2asrv.PushDelivered, time.Time{}, "")
	ds2 := claim(t, s, later(), 10)
	if len(ds2) != 1 || noteOf(t, ds2[0]).Kind != "status" || ds2[0].Seq <= ds[0].Seq {
		t.Fatalf("after the head was delivered: want the next notification, got %d", len(ds2))
	}
	// Receivers tell repeats by seq: one is never used again, even once
	// every notification before it is delivered and gone.
	settle(t, s, ds2[0], a2asrv.PushDelivered, time.Time{}, "")
	mustAppend(t, s.Tasks, alice, "t1", 2, nil, statusEvent("t1", a2a.TaskStateCompleted, 2*time.Second, ""))
	ds3 := claim(t, s, later(), 10)
	if len(ds3) != 1 || ds3[0].Seq <= ds2[0].Seq {
		t.Fatalf("a notification after the outbox emptied: want a seq above %d, got %d heads", ds2[0].Seq, len(ds3))
	}
}

func testPushLease(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	now := later()
	first, err := s.Outbox.ClaimPush(ctxT(t), now, 10, time.Minute)
	if err != nil || len(first) != 1 {
		t.Fatalf("claim: %d, %v", len(first), err)
	}
	if ds, _ := s.Outbox.ClaimPush(ctxT(t), now.Add(30*time.Second), 10, time.Minute); len(ds) != 0 {
		t.Fatal("claimed again before the lease ran out")
	}
	second, err := s.Outbox.ClaimPush(ctxT(t), now.Add(2*time.Minute), 10, time.Minute)
	if err != nil || len(second) != 1 || second[0].Seq != first[0].Seq {
		t.Fatalf("after the lease ran out: want the same head again, got %d, %v", len(second), err)
	}
	_, err = s.Outbox.SettlePush(ctxT(t), first[0], a2asrv.PushSettlement{Outcome: a2asrv.PushDelivered, At: time.Now()})
	if !errors.Is(err, a2asrv.ErrPushLeaseLost) {
		t.Fatalf("settling a lapsed lease: got %v, want ErrPushLeaseLost", err)
	}
	settle(t, s, second[0], a2asrv.PushDelivered, time.Time{}, "")
	if st := deliveryState(t, s, alice, "t1", "h1"); st.Pending != 0 {
		t.Errorf("pending after delivery: %d", st.Pending)
	}
}

func testPushConcurrentClaims(t *testing.T, s PushStores) {
	const n = 24
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		mustCreate(t, s.Tasks, alice, task(id, "c1", a2a.TaskStateSubmitted, 0))
		mustPut(t, s.Configs, alice, hook(id, "h"))
	}
	var (
		mu   sync.Mutex
		seen []string
		wg   sync.WaitGroup
	)
	now := later()
	for range 4 {
		wg.Go(func() {
			for {
				ds, err := s.Outbox.ClaimPush(ctxT(t), now, 3, pushLease)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen = append(seen, d.Config.TaskID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(seen)
	if len(seen) != n || len(slices.Compact(slices.Clone(seen))) != n {
		t.Errorf("concurrent claimers got %d heads (%d distinct), want %d disjoint", len(seen), len(slices.Compact(seen)), n)
	}
}

func testPushRetry(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	now := later()
	ds := claim(t, s, now, 10)
	next := now.Add(10 * time.Minute)
	settle(t, s, ds[0], a2asrv.PushRetry, next, "HTTP 503")
	if again := claim(t, s, now.Add(time.Minute), 10); len(again) != 0 {
		t.Fatal("claimed before the retry was due")
	}
	st := deliveryState(t, s, alice, "t1", "h1")
	if st.State != a2asrv.PushStateActive || st.Attempts != 1 || st.LastError != "HTTP 503" || st.Pending != 1 || st.LastAttempt.IsZero() {
		t.Errorf("after a failed attempt: %+v", st)
	}
	again := claim(t, s, next.Add(time.Millisecond), 10)
	if len(again) != 1 || again[0].Seq != ds[0].Seq || again[0].Attempts != 1 {
		t.Fatalf("when due again: want the same head with 1 attempt, got %d", len(again))
	}
	settle(t, s, again[0], a2asrv.PushDelivered, time.Time{}, "")
	if st := deliveryState(t, s, alice, "t1", "h1"); st.Attempts != 0 || st.LastError != "" {
		t.Errorf("a delivery clears the failures: %+v", st)
	}
}

func testPushDead(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"), hook("t1", "h2"))
	v := mustAppend(t, s.Tasks, alice, "t1", 1, nil, statusEvent("t1", a2a.TaskStateWorking, time.Second, ""))
	for _, d := range claim(t, s, later(), 10) {
		if d.Config.ID == "h1" {
			settle(t, s, d, a2asrv.PushDead, time.Time{}, "HTTP 410")
		}
	}
	mustAppend(t, s.Tasks, alice, "t1", v, nil, statusEvent("t1", a2a.TaskStateCompleted, 2*time.Second, ""))
	st := deliveryState(t, s, alice, "t1", "h1")
	if st.State != a2asrv.PushStateDead || st.Pending != 0 || st.LastError != "HTTP 410" || st.Attempts != 1 {
		t.Errorf("dead stream: %+v", st)
	}
	// h2's lease still holds; let it lapse.
	var got []note
	for range 10 {
		ds, err := s.Outbox.ClaimPush(ctxT(t), later().Add(2*pushLease), 10, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			got = append(got, noteOf(t, d))
			settle(t, s, d, a2asrv.PushDelivered, time.Time{}, "")
		}
	}
	want := []note{
		{Stream: "t1/h2", Kind: "task", State: "TASK_STATE_SUBMITTED"},
		{Stream: "t1/h2", Kind: "status", State: "TASK_STATE_WORKING"},
		{Stream: "t1/h2", Kind: "status", State: "TASK_STATE_COMPLETED"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("the live stream goes on, the dead one stops (-want +got):\n%s", diff)
	}
	// Putting the config again starts it afresh from the task as it is.
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	if st := deliveryState(t, s, alice, "t1", "h1"); st.State != a2asrv.PushStateActive || st.Pending != 1 {
		t.Errorf("put again: %+v", st)
	}
	want = []note{{Stream: "t1/h1", Kind: "task", State: "TASK_STATE_COMPLETED"}}
	if diff := gocmp.Diff(want, drain(t, s, 10)); diff != "" {
		t.Errorf("after the config was put again (-want +got):\n%s", diff)
	}
}

func testPushAtomic(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	drain(t, s, 10)
	ctx := ctxT(t)
	if _, err := s.Tasks.Create(ctx, alice, task("t1", "c1", a2a.TaskStateWorking, 0)); !errors.Is(err, a2asrv.ErrExists) {
		t.Fatalf("Create of an existing task: %v", err)
	}
	if _, err := s.Tasks.Update(ctx, alice, task("t1", "c1", a2a.TaskStateWorking, 0), 7); !errors.Is(err, a2asrv.ErrConcurrentModification) {
		t.Fatalf("Update at a stale version: %v", err)
	}
	if _, err := s.Tasks.Append(ctx, alice, "t1", 7, []*a2a.StreamResponse{statusEvent("t1", a2a.TaskStateWorking, 0, "")}, nil); !errors.Is(err, a2asrv.ErrConcurrentModification) {
		t.Fatalf("Append at a stale version: %v", err)
	}
	if _, err := s.Tasks.Update(ctx, others[0].scope, task("t1", "c1", a2a.TaskStateWorking, 0), 1); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Fatalf("Update in another scope: %v", err)
	}
	if got := drain(t, s, 10); len(got) != 0 {
		t.Errorf("failed writes queued %v", got)
	}
	if st := deliveryState(t, s, alice, "t1", "h1"); st.Pending != 0 {
		t.Errorf("failed writes counted %d pending", st.Pending)
	}
}

func testPushDelete(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0), task("t2", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"), hook("t1", "h2"), hook("t2", "h1"))
	if err := s.Configs.Delete(ctxT(t), alice, "t1", "h1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Tasks.Delete(ctxT(t), alice, "t2"); err != nil {
		t.Fatal(err)
	}
	want := []note{{Stream: "t1/h2", Kind: "task", State: "TASK_STATE_SUBMITTED"}}
	if diff := gocmp.Diff(want, drain(t, s, 10)); diff != "" {
		t.Errorf("after deleting a config and a task (-want +got):\n%s", diff)
	}
	// The deleted task's configs went with it: a task made again under its
	// id starts with none.
	if _, err := s.Configs.Get(ctxT(t), alice, "t2", "h1"); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("a deleted task's config: %v, want ErrNotFound", err)
	}
	mustCreate(t, s.Tasks, alice, task("t2", "c1", a2a.TaskStateSubmitted, 0))
	if _, err := s.Tasks.Update(ctxT(t), alice, task("t2", "c1", a2a.TaskStateWorking, 0), 1); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s, 10); len(got) != 0 {
		t.Errorf("the task made again queued %v for its deleted namesake's configs", got)
	}
}

func testPushBadSettlement(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	ds := claim(t, s, later(), 10)
	for _, st := range []a2asrv.PushSettlement{
		{Outcome: 0, At: time.Now()},
		{Outcome: a2asrv.PushDelivered},
		{Outcome: a2asrv.PushRetry, At: time.Now()},
		{Outcome: a2asrv.PushDelivered, At: time.Now(), Continue: -time.Second},
	} {
		if _, err := s.Outbox.SettlePush(ctxT(t), ds[0], st); err == nil {
			t.Errorf("SettlePush(%+v) took it", st)
		}
	}
	// A long error is cut, not refused.
	settle(t, s, ds[0], a2asrv.PushRetry, time.Now(), "é"+string(slices.Repeat([]byte("x"), 2*a2asrv.MaxPushError)))
	if st := deliveryState(t, s, alice, "t1", "h1"); len(st.LastError) > a2asrv.MaxPushError || st.LastError[:2] != "é" {
		t.Errorf("long error kept as %d bytes", len(st.LastError))
	}
}

func testPushContinue(t *testing.T, s PushStores) {
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	mustPut(t, s.Configs, alice, hook("t1", "h1"))
	mustAppend(t, s.Tasks, alice, "t1", 1, nil, statusEvent("t1", a2a.TaskStateWorking, time.Second, ""), chunkEvent("t1", "a1", "one", false))
	ds := claim(t, s, later(), 10)
	var got []note
	d := ds[0]
	for d != nil {
		got = append(got, noteOf(t, d))
		next, err := s.Outbox.SettlePush(ctxT(t), d, a2asrv.PushSettlement{Outcome: a2asrv.PushDelivered, At: time.Now(), Continue: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if next != nil {
			if next.Lease != d.Lease || next.Seq <= d.Seq || next.Attempts != 0 {
				t.Errorf("the next notification: lease kept %t, seq %d after %d, attempts %d", next.Lease == d.Lease, next.Seq, d.Seq, next.Attempts)
			}
			// Still leased: no claim sees the stream.
			if again := claim(t, s, later(), 10); len(again) != 0 {
				t.Fatal("a continued stream was claimed by another")
			}
		}
		d = next
	}
	want := []note{
		{Stream: "t1/h1", Kind: "task", State: "TASK_STATE_SUBMITTED"},
		{Stream: "t1/h1", Kind: "status", State: "TASK_STATE_WORKING"},
		{Stream: "t1/h1", Kind: "artifact", Text: "one"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if st := deliveryState(t, s, alice, "t1", "h1"); st.Pending != 0 || st.State != a2asrv.PushStateActive {
		t.Errorf("after the run: %+v", st)
	}
	// The stream is free again: a new notification is claimable.
	mustAppend(t, s.Tasks, alice, "t1", 3, nil, statusEvent("t1", a2a.TaskStateCompleted, 2*time.Second, ""))
	if ds := claim(t, s, later(), 10); len(ds) != 1 {
		t.Fatalf("after the run: %d claimable", len(ds))
	}
}

func testPushQueueDepth(t *testing.T, s PushStores) {
	q, ok := s.Outbox.(a2asrv.PushQueue)
	if !ok {
		t.Fatalf("%T is not an a2asrv.PushQueue", s.Outbox)
	}
	depth := func(want int64, when string) {
		t.Helper()
		got, err := q.PushQueued(ctxT(t))
		if err != nil {
			t.Fatalf("PushQueued: %v", err)
		}
		if got != want {
			t.Errorf("%s: %d queued, want %d", when, got, want)
		}
	}
	depth(0, "empty")
	mustCreate(t, s.Tasks, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	depth(0, "a task without configs")
	mustPut(t, s.Configs, alice, hook("t1", "h1"), hook("t1", "h2"))
	depth(2, "two configs put (each queues the task as it stands)")
	mustAppend(t, s.Tasks, alice, "t1", 1, nil,
		statusEvent("t1", a2a.TaskStateWorking, time.Second, ""), chunkEvent("t1", "a1", "one", true))
	depth(6, "two events for two configs")
	ds := claim(t, s, later(), 10)
	depth(6, "claimed heads are still queued")
	for _, d := range ds {
		if d.Config.ID == "h1" {
			settle(t, s, d, a2asrv.PushDelivered, time.Time{}, "")
		} else {
			settle(t, s, d, a2asrv.PushDead, time.Time{}, "HTTP 410")
		}
	}
	depth(2, "h1 delivered one, h2 dead-lettered with its three")
	drain(t, s, 10)
	depth(0, "drained")
}
