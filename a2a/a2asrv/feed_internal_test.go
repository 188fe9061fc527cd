package a2asrv

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
)

// stubFeed is a TaskFeed whose reports the test makes itself, by calling
// followLocked; CatchUp reads the store, or answers with bad when set.
type stubFeed struct {
	store    *MemoryTaskStore
	catchUps int
	bad      *TaskChange
}

func (f *stubFeed) Watch(string, func(TaskChange)) func() { return func() {} }

func (f *stubFeed) CatchUp(ctx context.Context, scope Scope, id string, after Version) (TaskChange, error) {
	f.catchUps++
	if f.bad != nil {
		return *f.bad, nil
	}
	return f.store.Feed().CatchUp(ctx, scope, id, after)
}

// A change a hub cannot apply as it stands (one that starts past the
// version the hub holds, or whose events do not add up to the versions it
// spans) is caught up from the store, never applied; a change that fits
// is applied without a read.
func TestFeedChangesCaughtUpUnlessWhole(t *testing.T) {
	ctx := context.Background()
	scope := Scope{Tenant: "acme", Owner: "alice"}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	working := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at.Add(time.Second)}}}
	chunk := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
		Artifact: a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("chunk")}}}}
	renamed := func() *a2a.Task {
		return &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: at.Add(time.Minute)}}
	}

	tests := []struct {
		name string
		// elsewhere is what another process writes after version 1.
		elsewhere func(s *MemoryTaskStore) error
		change    TaskChange
		catchUps  int
		frames    []Version // the versions the subscriber is sent
	}{
		{
			name:      "fits: applied",
			elsewhere: appendEvents(scope, working, chunk),
			change:    TaskChange{ID: "t1", Prev: 1, Version: 3, Events: []*a2a.StreamResponse{working, chunk}},
			frames:    []Version{2, 3},
		},
		{
			name:      "whole task: applied",
			elsewhere: func(s *MemoryTaskStore) error { _, err := s.Update(ctx, scope, renamed(), 1); return err },
			change:    TaskChange{ID: "t1", Prev: 1, Version: 2, Task: renamed()},
			frames:    []Version{2},
		},
		{
			name:      "skips a version: caught up",
			elsewhere: appendEvents(scope, working, chunk),
			change:    TaskChange{ID: "t1", Prev: 2, Version: 3, Events: []*a2a.StreamResponse{chunk}},
			catchUps:  1,
			frames:    []Version{2, 3},
		},
		{
			name:      "fewer events than versions: caught up",
			elsewhere: appendEvents(scope, working, chunk),
			change:    TaskChange{ID: "t1", Prev: 1, Version: 3, Events: []*a2a.StreamResponse{working}},
			catchUps:  1,
			frames:    []Version{2, 3},
		},
		{
			name:      "more events than versions: caught up",
			elsewhere: appendEvents(scope, working),
			change:    TaskChange{ID: "t1", Prev: 1, Version: 2, Events: []*a2a.StreamResponse{working, chunk}},
			catchUps:  1,
			frames:    []Version{2},
		},
		{
			name:      "too large for the feed: caught up",
			elsewhere: appendEvents(scope, working, chunk),
			change:    TaskChange{ID: "t1", Prev: 1, Version: 3},
			catchUps:  1,
			frames:    []Version{2, 3},
		},
		{
			name:      "lost: caught up",
			elsewhere: appendEvents(scope, working, chunk),
			change:    TaskChange{ID: "t1", Lost: true},
			catchUps:  1,
			frames:    []Version{2, 3},
		},
		{
			name:      "already held: ignored",
			elsewhere: func(*MemoryTaskStore) error { return nil },
			change:    TaskChange{ID: "t1", Prev: 0, Version: 1, Events: []*a2a.StreamResponse{working}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := NewMemoryTaskStore(nil)
			feed := &stubFeed{store: store}
			h, sub := followedTask(t, store, feed, scope, at)
			if err := tc.elsewhere(store); err != nil {
				t.Fatal(err)
			}
			h.mu.Lock()
			h.followLocked(tc.change)
			held, version, stored := h.snapshotLocked(), h.version, h.stored
			h.mu.Unlock()

			if feed.catchUps != tc.catchUps {
				t.Errorf("%d catch-ups, want %d", feed.catchUps, tc.catchUps)
			}
			want, v, err := store.Get(ctx, scope, "t1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(taskJSON(t, want), taskJSON(t, held)); diff != "" {
				t.Errorf("the hub's task against the store's (-want +got)\n%s", diff)
			}
			if version != v || stored != v {
				t.Errorf("the hub holds version %d (stored %d), the store %d", version, stored, v)
			}
			if diff := cmp.Diff(tc.frames, frameVersions(sub)); diff != "" {
				t.Errorf("frames sent (-want +got)\n%s", diff)
			}
		})
	}
}

// A catch-up whose change does not add up is not applied either: the hub
// forgets the task, to read it whole next time, and sends nothing.
func TestFeedBadCatchUpDropsTheCache(t *testing.T) {
	ctx := context.Background()
	scope := Scope{Tenant: "acme", Owner: "alice"}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	working := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at.Add(time.Second)}}}
	store := NewMemoryTaskStore(nil)
	feed := &stubFeed{store: store, bad: &TaskChange{ID: "t1", Prev: 1, Version: 3, Events: []*a2a.StreamResponse{working}}}
	h, sub := followedTask(t, store, feed, scope, at)
	if err := appendEvents(scope, working, working)(store); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.followLocked(TaskChange{ID: "t1", Lost: true})
	held := h.task
	h.mu.Unlock()
	if held != nil || feed.catchUps != 1 {
		t.Errorf("after a bad catch-up (%d reads) the hub holds %+v, want nothing", feed.catchUps, held)
	}
	if got := frameVersions(sub); len(got) != 0 {
		t.Errorf("frames %v sent from a bad catch-up", got)
	}
	if _, _, err := store.Get(ctx, scope, "t1"); err != nil {
		t.Fatal(err)
	}
}

// followedTask stores task t1 at version 1 and returns its hub, holding
// it as a process that wrote it would, with a subscriber.
func followedTask(t *testing.T, store *MemoryTaskStore, feed TaskFeed, scope Scope, at time.Time) (*hub, *subscriber) {
	t.Helper()
	ctx := context.Background()
	if _, err := store.Create(ctx, scope, &a2a.Task{ID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: at}}); err != nil {
		t.Fatal(err)
	}
	hs := &hubs{store: store, feed: feed, log: discardLogger(), flushEvery: time.Hour}
	h := hs.acquire("t1")
	t.Cleanup(func() { hs.release(h) })
	sub := newSubscriber(0)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.scope = scope
	if err := h.loadLocked(ctx); err != nil {
		t.Fatal(err)
	}
	h.subscribeLocked(sub)
	return h, sub
}

func appendEvents(scope Scope, events ...*a2a.StreamResponse) func(*MemoryTaskStore) error {
	return func(s *MemoryTaskStore) error {
		_, err := s.Append(context.Background(), scope, "t1", 1, events, nil)
		return err
	}
}

func frameVersions(s *subscriber) []Version {
	frames, _ := s.take(nil)
	var out []Version
	for _, f := range frames {
		out = append(out, f.seq)
	}
	return out
}

func taskJSON(t *testing.T, task *a2a.Task) string {
	t.Helper()
	if task == nil {
		return "no task"
	}
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A catch-up that finds nothing new leaves the hub as it is.
func TestFeedCatchUpWithNothingNew(t *testing.T) {
	scope := Scope{Tenant: "acme", Owner: "alice"}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	store := NewMemoryTaskStore(nil)
	feed := &stubFeed{store: store}
	h, sub := followedTask(t, store, feed, scope, at)
	h.mu.Lock()
	h.followLocked(TaskChange{ID: "t1", Lost: true})
	held, stored := h.task, h.stored
	h.mu.Unlock()
	if held == nil || stored != 1 || feed.catchUps != 1 {
		t.Errorf("after an empty catch-up (%d reads): task %v at %d, want the task still held at 1", feed.catchUps, held, stored)
	}
	if got := frameVersions(sub); len(got) != 0 {
		t.Errorf("frames %v sent for nothing", got)
	}
}

// Artifact updates streamed here but not yet stored lose to a write made
// elsewhere: the hub catches up and drops them, as a crash would.
func TestFeedWriteOvertakesPendingUpdates(t *testing.T) {
	ctx := context.Background()
	scope := Scope{Tenant: "acme", Owner: "alice"}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	working := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at.Add(time.Second)}}}
	local := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
		Artifact: a2a.Artifact{ArtifactID: "mine", Parts: []a2a.Part{a2a.TextPart("not stored")}}}}
	store := NewMemoryTaskStore(nil)
	feed := &stubFeed{store: store}
	h, sub := followedTask(t, store, feed, scope, at)
	h.mu.Lock()
	if err := ApplyEvent(h.task, local); err != nil {
		t.Fatal(err)
	}
	h.pending, h.version = []*a2a.StreamResponse{local}, 2
	h.mu.Unlock()
	if err := appendEvents(scope, working)(store); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.followLocked(TaskChange{ID: "t1", Prev: 1, Version: 2, Events: []*a2a.StreamResponse{working}})
	held, pending, version := h.snapshotLocked(), len(h.pending), h.version
	h.mu.Unlock()
	want, v, err := store.Get(ctx, scope, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(taskJSON(t, want), taskJSON(t, held)); diff != "" || pending != 0 || version != v || feed.catchUps != 1 {
		t.Errorf("after %d catch-ups: %d pending at version %d (store %d); the task against the store's (-want +got)\n%s",
			feed.catchUps, pending, version, v, diff)
	}
	if diff := cmp.Diff([]Version{2}, frameVersions(sub)); diff != "" {
		t.Errorf("frames sent (-want +got)\n%s", diff)
	}
}

// A stopped watch hears nothing more; the others of its task still do.
func TestWatchersStop(t *testing.T) {
	var w Watchers
	heard := map[string]int{}
	watch := func(name, id string) func() {
		return w.Watch(id, func(TaskChange) { heard[name]++ })
	}
	stopA := watch("a", "t1")
	stopB := watch("b", "t1")
	watch("c", "t2")
	change := func() TaskChange { return TaskChange{ID: "t1", Prev: 1, Version: 2} }
	w.Announce("t1", change)
	stopA()
	w.Announce("t1", change)
	stopB()
	stopB() // a second stop is harmless
	w.Announce("t1", change)
	w.AnnounceLost()
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 2, "c": 1}, heard); diff != "" {
		t.Errorf("changes heard (-want +got)\n%s", diff)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.m["t1"]; ok || len(w.m) != 1 {
		t.Errorf("watches kept: %v", w.m)
	}
}
