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

// The Append contract: events are writes of their own, applied on read by
// a2asrv.ApplyEvent, compacted by whole-task writes.

func statusEvent(id string, state a2a.TaskState, ts time.Duration, text string) *a2a.StreamResponse {
	ev := &a2a.TaskStatusUpdateEvent{TaskID: id, Status: a2a.TaskStatus{State: state, Timestamp: base.Add(ts)}}
	if text != "" {
		ev.Status.Message = &a2a.Message{MessageID: "s-" + text, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	return &a2a.StreamResponse{StatusUpdate: ev}
}

func chunkEvent(id, artifactID, text string, appendChunk bool) *a2a.StreamResponse {
	return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
		TaskID: id, Artifact: a2a.Artifact{ArtifactID: artifactID, Parts: []a2a.Part{a2a.TextPart(text)}},
		Append: appendChunk,
	}}
}

// applied is want with events applied, as the store must return it.
func applied(t *testing.T, want *a2a.Task, events ...*a2a.StreamResponse) *a2a.Task {
	t.Helper()
	w := want.Clone()
	for _, ev := range events {
		if err := a2asrv.ApplyEvent(w, ev); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func mustAppend(t *testing.T, s a2asrv.TaskStore, scope a2asrv.Scope, id string, prev a2asrv.Version, compact *a2a.Task, events ...*a2a.StreamResponse) a2asrv.Version {
	t.Helper()
	v, err := s.Append(ctxT(t), scope, id, prev, events, compact)
	if err != nil {
		t.Fatalf("Append(%s, %d, %d events): %v", id, prev, len(events), err)
	}
	if want := prev + a2asrv.Version(len(events)); v != want {
		t.Fatalf("Append(%s, %d, %d events) = version %d, want %d", id, prev, len(events), v, want)
	}
	return v
}

// TestAppend runs the Append part of the TaskStore contract.
func TestAppend(t *testing.T, newStore func(t *testing.T) a2asrv.TaskStore) {
	t.Run("EventsApplyInOrder", func(t *testing.T) { testAppendApplies(t, newStore(t)) })
	t.Run("Conflicts", func(t *testing.T) { testAppendConflicts(t, newStore(t)) })
	t.Run("UpdateCompacts", func(t *testing.T) { testAppendThenUpdate(t, newStore(t)) })
	t.Run("Compact", func(t *testing.T) { testAppendCompact(t, newStore(t)) })
	t.Run("ListSeesEvents", func(t *testing.T) { testAppendList(t, newStore(t)) })
	t.Run("DeleteDropsEvents", func(t *testing.T) { testAppendDelete(t, newStore(t)) })
	t.Run("ConcurrentAppendersOneWins", func(t *testing.T) { testAppendRace(t, newStore(t)) })
	t.Run("ManyChunks", func(t *testing.T) { testAppendMany(t, newStore(t)) })
}

func testAppendApplies(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateSubmitted, 0)
	mustCreate(t, s, alice, tk)
	evs := []*a2a.StreamResponse{
		statusEvent("t1", a2a.TaskStateWorking, time.Second, "on it"),
		chunkEvent("t1", "a1", "one ", false),
		chunkEvent("t1", "a1", "two ", true),
	}
	v := mustAppend(t, s, alice, "t1", 1, nil, evs[0])
	v = mustAppend(t, s, alice, "t1", v, nil, evs[1:]...)
	want := applied(t, tk, evs...)
	wantTask(t, s, alice, want, 4)
	// The status message each status update replaced is in the history.
	got, _ := mustGet(t, s, alice, "t1")
	if n := len(got.History); n != 2 || got.History[1].MessageID != "status-t1" {
		t.Errorf("history after a status update = %d messages, last %+v; want the replaced status message last", n, got.History[n-1])
	}
	if got.Artifacts[0].Parts[1].Text != "two " {
		t.Errorf("artifact parts = %+v, want the chunk appended", got.Artifacts[0].Parts)
	}
	// Another scope sees nothing and cannot append.
	for _, o := range others {
		if _, err := s.Append(ctxT(t), o.scope, "t1", v, []*a2a.StreamResponse{chunkEvent("t1", "a1", "x", true)}, nil); !errors.Is(err, a2asrv.ErrNotFound) {
			t.Errorf("%s: Append = %v, want ErrNotFound", o.name, err)
		}
	}
	wantTask(t, s, alice, want, 4)
}

func testAppendConflicts(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0))
	ctx := ctxT(t)
	ev := chunkEvent("t1", "a1", "x", false)
	for _, prev := range []a2asrv.Version{0, 2, 7} {
		if _, err := s.Append(ctx, alice, "t1", prev, []*a2a.StreamResponse{ev}, nil); !errors.Is(err, a2asrv.ErrConcurrentModification) {
			t.Errorf("Append at version %d of a task at 1 = %v, want ErrConcurrentModification", prev, err)
		}
	}
	if _, err := s.Append(ctx, alice, "missing", 1, []*a2a.StreamResponse{ev}, nil); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("Append(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.Append(ctx, alice, "t1", 1, []*a2a.StreamResponse{{Message: &a2a.Message{}}}, nil); err == nil {
		t.Error("Append of a Message frame succeeded; only status and artifact updates are events")
	}
	wantTask(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0), 1)
}

func testAppendThenUpdate(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateWorking, 0)
	mustCreate(t, s, alice, tk)
	v := mustAppend(t, s, alice, "t1", 1, nil, chunkEvent("t1", "a1", "stale", false), chunkEvent("t1", "a1", "stale", true))
	// A whole-task write replaces the body and the events with it.
	next := task("t1", "c1", a2a.TaskStateCompleted, time.Second)
	next.Artifacts = []a2a.Artifact{{ArtifactID: "fresh", Parts: []a2a.Part{a2a.TextPart("whole")}}}
	nv, err := s.Update(ctxT(t), alice, next, v)
	if err != nil || nv != v+1 {
		t.Fatalf("Update after appends = %d, %v; want %d", nv, err, v+1)
	}
	wantTask(t, s, alice, next, v+1)
	// Appends go on from the new version.
	ev := chunkEvent("t1", "fresh", " more", true)
	mustAppend(t, s, alice, "t1", v+1, nil, ev)
	wantTask(t, s, alice, applied(t, next, ev), v+2)
}

func testAppendCompact(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateWorking, 0)
	mustCreate(t, s, alice, tk)
	evs := []*a2a.StreamResponse{chunkEvent("t1", "a1", "a", false), chunkEvent("t1", "a1", "b", true)}
	v := mustAppend(t, s, alice, "t1", 1, nil, evs...)
	final := statusEvent("t1", a2a.TaskStateCompleted, 2*time.Second, "done")
	whole := applied(t, tk, append(evs, final)...)
	v = mustAppend(t, s, alice, "t1", v, whole, final)
	wantTask(t, s, alice, whole, 4)
	res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{State: a2a.TaskStateCompleted})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("List(COMPLETED) after a compacting append = %+v, %v", res, err)
	}
	if _, err := s.Append(ctxT(t), alice, "t1", v, []*a2a.StreamResponse{final}, task("other", "c1", a2a.TaskStateCompleted, 0)); err == nil {
		t.Error("Append compacting to a task of another id succeeded")
	}
}

func testAppendList(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0), task("t2", "c1", a2a.TaskStateSubmitted, time.Second))
	// t1's appended status moves it to COMPLETED and after t2 in time.
	evs := []*a2a.StreamResponse{chunkEvent("t1", "a1", "out", false), statusEvent("t1", a2a.TaskStateCompleted, 5*time.Second, "")}
	mustAppend(t, s, alice, "t1", 1, nil, evs...)
	res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(res.Tasks), []string{"t1", "t2"}) {
		t.Fatalf("List order = %v, want t1 (newer status) first", ids(res.Tasks))
	}
	want := applied(t, task("t1", "c1", a2a.TaskStateSubmitted, 0), evs...)
	if diff := gocmp.Diff(stored(want), res.Tasks[0]); diff != "" {
		t.Errorf("listed task (-want +got):\n%s", diff)
	}
	for state, wantIDs := range map[a2a.TaskState][]string{a2a.TaskStateCompleted: {"t1"}, a2a.TaskStateSubmitted: {"t2"}} {
		res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{State: state})
		if err != nil || !slices.Equal(ids(res.Tasks), wantIDs) {
			t.Errorf("List(%v) = %v, %v; want %v", state, ids(res.Tasks), err, wantIDs)
		}
	}
}

func testAppendDelete(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0))
	mustAppend(t, s, alice, "t1", 1, nil, chunkEvent("t1", "a1", "old", false))
	if err := s.Delete(ctxT(t), alice, "t1"); err != nil {
		t.Fatal(err)
	}
	// A new task of the same id must not inherit the old one's events.
	again := task("t1", "c1", a2a.TaskStateWorking, 0)
	mustCreate(t, s, alice, again)
	wantTask(t, s, alice, again, 1)
	ev := chunkEvent("t1", "a2", "new", false)
	mustAppend(t, s, alice, "t1", 1, nil, ev)
	wantTask(t, s, alice, applied(t, again, ev), 2)
}

func testAppendRace(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0))
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []int
	)
	for i := range n {
		wg.Go(func() {
			_, err := s.Append(ctxT(t), alice, "t1", 1, []*a2a.StreamResponse{chunkEvent("t1", "a1", fmt.Sprint(i), false)}, nil)
			switch {
			case err == nil:
				mu.Lock()
				wins = append(wins, i)
				mu.Unlock()
			case !errors.Is(err, a2asrv.ErrConcurrentModification):
				t.Errorf("appender %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d appenders at version 1 succeeded, want exactly 1", len(wins))
	}
	got, v := mustGet(t, s, alice, "t1")
	if v != 2 || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text != fmt.Sprint(wins[0]) {
		t.Errorf("after the race: version %d, artifacts %+v; want the winner's chunk only", v, got.Artifacts)
	}
}

func testAppendMany(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0))
	v := mustAppend(t, s, alice, "t1", 1, nil, chunkEvent("t1", "a1", "0", false))
	const batches, per = 20, 25
	for b := range batches {
		evs := make([]*a2a.StreamResponse, per)
		for i := range evs {
			evs[i] = chunkEvent("t1", "a1", fmt.Sprint(1+b*per+i), true)
		}
		v = mustAppend(t, s, alice, "t1", v, nil, evs...)
	}
	got, gv := mustGet(t, s, alice, "t1")
	parts := got.Artifacts[0].Parts
	if gv != v || len(parts) != 1+batches*per {
		t.Fatalf("version %d (want %d), %d parts (want %d)", gv, v, len(parts), 1+batches*per)
	}
	for i, p := range parts {
		if p.Text != fmt.Sprint(i) {
			t.Fatalf("part %d = %q: chunks out of order", i, p.Text)
		}
	}
}
