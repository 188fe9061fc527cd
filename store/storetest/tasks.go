package storetest

import (
	"cmp"
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
)

// Base is the status time the fixtures are built around. It has a
// sub-millisecond part on purpose: stores keep milliseconds.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	alice = a2asrv.Scope{Tenant: "acme", Owner: "alice"}
	// others are scopes that must never see alice's tasks; the last two
	// catch a store that joins tenant and owner into one key.
	others = []struct {
		name  string
		scope a2asrv.Scope
	}{
		{"same tenant other owner", a2asrv.Scope{Tenant: "acme", Owner: "bob"}},
		{"other tenant same owner", a2asrv.Scope{Tenant: "globex", Owner: "alice"}},
		{"empty scope", a2asrv.Scope{}},
		{"same tenant empty owner", a2asrv.Scope{Tenant: "acme"}},
		{"tenant and owner shifted", a2asrv.Scope{Tenant: "acmea", Owner: "lice"}},
		{"tenant and owner swapped", a2asrv.Scope{Tenant: "alice", Owner: "acme"}},
	}
)

// task returns a small task; ts is an offset from base.
func task(id, contextID string, state a2a.TaskState, ts time.Duration) *a2a.Task {
	return &a2a.Task{
		ID:        id,
		ContextID: contextID,
		Status: a2a.TaskStatus{
			State:     state,
			Timestamp: base.Add(ts),
			Message: &a2a.Message{
				MessageID: "status-" + id, Role: a2a.RoleAgent,
				Parts: []a2a.Part{a2a.TextPart("state of " + id)},
			},
		},
		History: []a2a.Message{{
			MessageID: "m-" + id, ContextID: contextID, TaskID: id, Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart("do " + id)},
		}},
		Metadata: map[string]any{"n": 1.0},
	}
}

// stored is how a task reads back: timestamps cut to milliseconds.
func stored(t *a2a.Task) *a2a.Task {
	c := *t
	c.Status.Timestamp = t.Status.Timestamp.Truncate(time.Millisecond)
	return &c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s a2asrv.TaskStore, scope a2asrv.Scope, tasks ...*a2a.Task) {
	t.Helper()
	for _, tk := range tasks {
		v, err := s.Create(ctxT(t), scope, tk)
		if err != nil {
			t.Fatalf("Create(%s): %v", tk.ID, err)
		}
		if v != 1 {
			t.Fatalf("Create(%s) = version %d, want 1", tk.ID, v)
		}
	}
}

func mustGet(t *testing.T, s a2asrv.TaskStore, scope a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version) {
	t.Helper()
	got, v, err := s.Get(ctxT(t), scope, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return got, v
}

func wantTask(t *testing.T, s a2asrv.TaskStore, scope a2asrv.Scope, want *a2a.Task, wantV a2asrv.Version) {
	t.Helper()
	got, v := mustGet(t, s, scope, want.ID)
	if v != wantV {
		t.Errorf("Get(%s) version = %d, want %d", want.ID, v, wantV)
	}
	if diff := gocmp.Diff(stored(want), got); diff != "" {
		t.Errorf("Get(%s) (-want +got):\n%s", want.ID, diff)
	}
}

func ids(tasks []*a2a.Task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.ID
	}
	return out
}

// TestTaskStore runs the TaskStore contract. newStore must return a new,
// empty store each time it is called; it is called once per subtest.
func TestTaskStore(t *testing.T, newStore func(t *testing.T) a2asrv.TaskStore) {
	t.Run("CreateGet", func(t *testing.T) { testCreateGet(t, newStore(t)) })
	t.Run("CreateInvalid", func(t *testing.T) { testCreateInvalid(t, newStore(t)) })
	t.Run("CreateExists", func(t *testing.T) { testCreateExists(t, newStore(t)) })
	t.Run("GetMissing", func(t *testing.T) { testGetMissing(t, newStore(t)) })
	t.Run("Update", func(t *testing.T) { testUpdate(t, newStore(t)) })
	t.Run("UpdateConflicts", func(t *testing.T) { testUpdateConflicts(t, newStore(t)) })
	t.Run("ConcurrentUpdatersOneWins", func(t *testing.T) { testConcurrentOneWins(t, newStore(t)) })
	t.Run("ConcurrentRetryingUpdaters", func(t *testing.T) { testConcurrentRetry(t, newStore(t)) })
	t.Run("ScopeIsolation", func(t *testing.T) { testScopeIsolation(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("ListOrderAndFilters", func(t *testing.T) { testListFilters(t, newStore(t)) })
	t.Run("ListFollowsUpdates", func(t *testing.T) { testListFollowsUpdates(t, newStore(t)) })
	t.Run("ListPaging", func(t *testing.T) { testListPaging(t, newStore) })
	t.Run("ListPageTokenSurvivesChanges", func(t *testing.T) { testListTokenSurvives(t, newStore(t)) })
	t.Run("ListBadPageToken", func(t *testing.T) { testListBadToken(t, newStore(t)) })
	t.Run("ReturnsCopies", func(t *testing.T) { testTaskCopies(t, newStore(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("Append", func(t *testing.T) { TestAppend(t, newStore) })
}

func testCreateGet(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateSubmitted, 1500*time.Microsecond)
	mustCreate(t, s, alice, tk)
	wantTask(t, s, alice, tk, 1)
}

func testCreateInvalid(t *testing.T, s a2asrv.TaskStore) {
	tests := []struct {
		name string
		task *a2a.Task
	}{
		{"nil task", nil},
		{"empty id", task("", "c1", a2a.TaskStateSubmitted, 0)},
		{"nul in id", task("a\x00b", "c1", a2a.TaskStateSubmitted, 0)},
		{"invalid utf-8 in id", task("a\xffb", "c1", a2a.TaskStateSubmitted, 0)},
		{"nul in context id", task("t1", "c\x00", a2a.TaskStateSubmitted, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := s.Create(ctxT(t), alice, tt.task)
			if err == nil || errors.Is(err, a2asrv.ErrExists) {
				t.Errorf("Create() = %d, %v; want a validation error", v, err)
			}
		})
	}
	if res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{}); err != nil || res.TotalSize != 0 {
		t.Errorf("List() after invalid creates = %+v, %v; want nothing stored", res, err)
	}
	t.Run("update with nul in context id", func(t *testing.T) {
		ok := task("t1", "c1", a2a.TaskStateSubmitted, 0)
		mustCreate(t, s, alice, ok)
		bad := ok.Clone()
		bad.ContextID = "c\x00"
		if v, err := s.Update(ctxT(t), alice, bad, 1); err == nil {
			t.Errorf("Update() = %d, nil; want an error", v)
		}
		wantTask(t, s, alice, ok, 1)
	})
}

func testCreateExists(t *testing.T, s a2asrv.TaskStore) {
	orig := task("t1", "c1", a2a.TaskStateSubmitted, 0)
	mustCreate(t, s, alice, orig)
	scopes := append([]struct {
		name  string
		scope a2asrv.Scope
	}{{"same scope", alice}}, others...)
	for _, sc := range scopes {
		t.Run(sc.name, func(t *testing.T) {
			dup := task("t1", "other", a2a.TaskStateWorking, time.Hour)
			if v, err := s.Create(ctxT(t), sc.scope, dup); !errors.Is(err, a2asrv.ErrExists) {
				t.Errorf("Create(existing id) = %d, %v; want ErrExists", v, err)
			}
		})
	}
	wantTask(t, s, alice, orig, 1)
}

func testGetMissing(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	for _, id := range []string{"t2", "", "T1", "t1 ", "t\x00", "\xff"} {
		if got, v, err := s.Get(ctxT(t), alice, id); !errors.Is(err, a2asrv.ErrNotFound) {
			t.Errorf("Get(%q) = %v, %d, %v; want ErrNotFound", id, got, v, err)
		}
	}
}

func testUpdate(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateSubmitted, 0)
	mustCreate(t, s, alice, tk)
	for want := a2asrv.Version(2); want <= 4; want++ {
		tk = tk.Clone()
		tk.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: base.Add(time.Duration(want) * time.Second)}
		tk.History = append(tk.History, a2a.Message{
			MessageID: fmt.Sprintf("m%d", want), Role: a2a.RoleAgent,
			Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("step %d", want))},
		})
		v, err := s.Update(ctxT(t), alice, tk, want-1)
		if err != nil || v != want {
			t.Fatalf("Update(prev %d) = %d, %v; want %d", want-1, v, err, want)
		}
		wantTask(t, s, alice, tk, want)
	}
}

func testUpdateConflicts(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateSubmitted, 0)
	mustCreate(t, s, alice, tk)
	next := tk.Clone()
	next.Status.State = a2a.TaskStateWorking
	if _, err := s.Update(ctxT(t), alice, next, 1); err != nil {
		t.Fatalf("Update(prev 1): %v", err)
	}
	tests := []struct {
		name string
		prev a2asrv.Version
	}{{"stale", 1}, {"zero", 0}, {"future", 3}, {"negative", -1}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tk.Clone()
			bad.Status.State = a2a.TaskStateFailed
			if v, err := s.Update(ctxT(t), alice, bad, tt.prev); !errors.Is(err, a2asrv.ErrConcurrentModification) {
				t.Errorf("Update(prev %d) = %d, %v; want ErrConcurrentModification", tt.prev, v, err)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		if v, err := s.Update(ctxT(t), alice, task("nope", "c1", a2a.TaskStateWorking, 0), 1); !errors.Is(err, a2asrv.ErrNotFound) {
			t.Errorf("Update(missing) = %d, %v; want ErrNotFound", v, err)
		}
	})
	wantTask(t, s, alice, next, 2)
}

// testConcurrentOneWins races updaters that all start from version 1:
// exactly one may win.
func testConcurrentOneWins(t *testing.T, s a2asrv.TaskStore) {
	const n = 16
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateSubmitted, 0))
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		errs    = make([]error, n)
		written = make([]*a2a.Task, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := task("t1", "c1", a2a.TaskStateWorking, time.Duration(i)*time.Millisecond)
			tk.Metadata = map[string]any{"writer": float64(i)}
			written[i] = tk
			<-start
			var v a2asrv.Version
			v, errs[i] = s.Update(context.Background(), alice, tk, 1)
			if errs[i] == nil && v != 2 {
				errs[i] = fmt.Errorf("won with version %d, want 2", v)
			}
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("updaters %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, a2asrv.ErrConcurrentModification):
			t.Errorf("updater %d: %v; want ErrConcurrentModification", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no updater won")
	}
	wantTask(t, s, alice, written[winner], 2)
}

// testConcurrentRetryingUpdaters runs read-modify-write loops that retry on
// conflicts: no update may be lost.
func testConcurrentRetry(t *testing.T, s a2asrv.TaskStore) {
	const workers, each = 6, 5
	tk := task("t1", "c1", a2a.TaskStateWorking, 0)
	tk.History = nil
	mustCreate(t, s, alice, tk)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; i < each; {
				cur, v, err := s.Get(ctx, alice, "t1")
				if err != nil {
					errs <- err
					return
				}
				cur.History = append(cur.History, a2a.Message{
					MessageID: fmt.Sprintf("w%d-%d", w, i), Role: a2a.RoleAgent,
					Parts: []a2a.Part{a2a.TextPart("x")},
				})
				_, err = s.Update(ctx, alice, cur, v)
				switch {
				case errors.Is(err, a2asrv.ErrConcurrentModification):
					continue
				case err != nil:
					errs <- err
					return
				}
				i++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, v := mustGet(t, s, alice, "t1")
	if v != 1+workers*each {
		t.Errorf("version = %d, want %d", v, 1+workers*each)
	}
	seen := map[string]bool{}
	for _, m := range got.History {
		if seen[m.MessageID] {
			t.Errorf("message %s recorded twice", m.MessageID)
		}
		seen[m.MessageID] = true
	}
	if len(seen) != workers*each {
		t.Errorf("history has %d distinct messages, want %d (lost updates)", len(seen), workers*each)
	}
}

func testScopeIsolation(t *testing.T, s a2asrv.TaskStore) {
	tk := task("t1", "c1", a2a.TaskStateWorking, 0)
	mustCreate(t, s, alice, tk)
	for _, o := range others {
		t.Run(o.name, func(t *testing.T) {
			ctx := ctxT(t)
			if got, v, err := s.Get(ctx, o.scope, "t1"); !errors.Is(err, a2asrv.ErrNotFound) {
				t.Errorf("Get = %v, %d, %v; want ErrNotFound", got, v, err)
			}
			bad := tk.Clone()
			bad.Status.State = a2a.TaskStateCanceled
			if v, err := s.Update(ctx, o.scope, bad, 1); !errors.Is(err, a2asrv.ErrNotFound) {
				t.Errorf("Update = %d, %v; want ErrNotFound", v, err)
			}
			for _, q := range []a2asrv.ListQuery{{}, {ContextID: "c1"}, {State: a2a.TaskStateWorking}} {
				res, err := s.List(ctx, o.scope, q)
				if err != nil {
					t.Fatalf("List(%+v): %v", q, err)
				}
				if len(res.Tasks) != 0 || res.TotalSize != 0 || res.NextPageToken != "" {
					t.Errorf("List(%+v) = %v, total %d; want nothing", q, ids(res.Tasks), res.TotalSize)
				}
			}
			if err := s.Delete(ctx, o.scope, "t1"); err != nil {
				t.Errorf("Delete = %v, want nil", err)
			}
			wantTask(t, s, alice, tk, 1)
		})
	}
	// The owner's page token is no key to anyone else's tasks.
	mustCreate(t, s, alice, task("t0", "c1", a2a.TaskStateWorking, -time.Second))
	res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{PageSize: 1})
	if err != nil || res.NextPageToken == "" {
		t.Fatalf("List(PageSize 1) = %+v, %v; want a next page", res, err)
	}
	for _, o := range others {
		got, err := s.List(ctxT(t), o.scope, a2asrv.ListQuery{PageSize: 1, PageToken: res.NextPageToken})
		if err == nil && len(got.Tasks) != 0 {
			t.Errorf("%s: List(alice's token) = %v; want nothing", o.name, ids(got.Tasks))
		}
	}
}

func testDelete(t *testing.T, s a2asrv.TaskStore) {
	mustCreate(t, s, alice, task("t1", "c1", a2a.TaskStateWorking, 0), task("t2", "c1", a2a.TaskStateWorking, 0))
	ctx := ctxT(t)
	for i := range 2 {
		if err := s.Delete(ctx, alice, "t1"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if err := s.Delete(ctx, alice, "never-existed"); err != nil {
		t.Errorf("Delete(never existed) = %v, want nil", err)
	}
	if _, _, err := s.Get(ctx, alice, "t1"); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("Get(deleted) error = %v, want ErrNotFound", err)
	}
	if _, err := s.Update(ctx, alice, task("t1", "c1", a2a.TaskStateWorking, 0), 1); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("Update(deleted) error = %v, want ErrNotFound", err)
	}
	res, err := s.List(ctx, alice, a2asrv.ListQuery{})
	if err != nil || res.TotalSize != 1 || !slices.Equal(ids(res.Tasks), []string{"t2"}) {
		t.Errorf("List after delete = %+v, %v; want only t2", res, err)
	}
	// A deleted id is free again and starts over at version 1.
	again := task("t1", "c2", a2a.TaskStateSubmitted, time.Second)
	mustCreate(t, s, alice, again)
	wantTask(t, s, alice, again, 1)
}

// listFixture is alice's tasks for the listing tests, plus tasks of other
// scopes that must never show up. Sorted by status time desc, id desc:
// g c b e d a f h.
func listFixture(t *testing.T, s a2asrv.TaskStore) {
	t.Helper()
	mustCreate(t, s, alice,
		task("a", "c1", a2a.TaskStateWorking, 1*time.Second),
		task("b", "c1", a2a.TaskStateCompleted, 3*time.Second),
		task("c", "c2", a2a.TaskStateWorking, 3*time.Second+400*time.Microsecond), // same millisecond as b
		task("d", "c2", a2a.TaskStateFailed, 2*time.Second),
		task("e", "c1", a2a.TaskStateWorking, 2*time.Second),
		task("f", "c2", a2a.TaskStateSubmitted, 0),
		task("g", "c1", a2a.TaskStateInputRequired, 4*time.Second),
	)
	h := task("h", "c1", a2a.TaskStateWorking, 0)
	h.Status.Timestamp = time.Time{} // no timestamp sorts last
	mustCreate(t, s, alice, h)
	mustCreate(t, s, others[0].scope, task("x", "c1", a2a.TaskStateWorking, 5*time.Second))
	mustCreate(t, s, others[1].scope, task("y", "c1", a2a.TaskStateWorking, 6*time.Second))
}

func testListFilters(t *testing.T, s a2asrv.TaskStore) {
	listFixture(t, s)
	tests := []struct {
		name string
		q    a2asrv.ListQuery
		want []string
	}{
		{"all", a2asrv.ListQuery{}, []string{"g", "c", "b", "e", "d", "a", "f", "h"}},
		{"context c1", a2asrv.ListQuery{ContextID: "c1"}, []string{"g", "b", "e", "a", "h"}},
		{"context c2", a2asrv.ListQuery{ContextID: "c2"}, []string{"c", "d", "f"}},
		{"unknown context", a2asrv.ListQuery{ContextID: "c3"}, nil},
		{"state working", a2asrv.ListQuery{State: a2a.TaskStateWorking}, []string{"c", "e", "a", "h"}},
		{"state completed", a2asrv.ListQuery{State: a2a.TaskStateCompleted}, []string{"b"}},
		{"state canceled", a2asrv.ListQuery{State: a2a.TaskStateCanceled}, nil},
		{"context and state", a2asrv.ListQuery{ContextID: "c1", State: a2a.TaskStateWorking}, []string{"e", "a", "h"}},
		{"after, inclusive", a2asrv.ListQuery{StatusAfter: base.Add(2 * time.Second)}, []string{"g", "c", "b", "e", "d"}},
		{"after, sub-millisecond", a2asrv.ListQuery{StatusAfter: base.Add(2*time.Second + time.Nanosecond)}, []string{"g", "c", "b"}},
		{"after, other zone", a2asrv.ListQuery{StatusAfter: base.Add(3 * time.Second).In(time.FixedZone("UTC+5", 5*3600))}, []string{"g", "c", "b"}},
		{"after, before all", a2asrv.ListQuery{StatusAfter: base.Add(-time.Hour)}, []string{"g", "c", "b", "e", "d", "a", "f"}},
		{"after, past all", a2asrv.ListQuery{StatusAfter: base.Add(time.Hour)}, nil},
		{"every filter", a2asrv.ListQuery{ContextID: "c2", State: a2a.TaskStateWorking, StatusAfter: base.Add(time.Second)}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.PageSize = 100
			res, err := s.List(ctxT(t), alice, tt.q)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if diff := gocmp.Diff(tt.want, ids(res.Tasks), emptyEqual); diff != "" {
				t.Errorf("List ids (-want +got):\n%s", diff)
			}
			if res.TotalSize != len(tt.want) || res.NextPageToken != "" {
				t.Errorf("List total = %d, next = %q; want %d, \"\"", res.TotalSize, res.NextPageToken, len(tt.want))
			}
		})
	}
}

// emptyEqual lets a nil want match an empty result.
var emptyEqual = gocmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, gocmp.Ignore())

func testListFollowsUpdates(t *testing.T, s a2asrv.TaskStore) {
	listFixture(t, s)
	a, v := mustGet(t, s, alice, "a")
	a.ContextID = "c2"
	a.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: base.Add(10 * time.Second)}
	if _, err := s.Update(ctxT(t), alice, a, v); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q    a2asrv.ListQuery
		want []string
	}{
		{a2asrv.ListQuery{}, []string{"a", "g", "c", "b", "e", "d", "f", "h"}},
		{a2asrv.ListQuery{State: a2a.TaskStateCompleted}, []string{"a", "b"}},
		{a2asrv.ListQuery{ContextID: "c1"}, []string{"g", "b", "e", "h"}},
		{a2asrv.ListQuery{StatusAfter: base.Add(5 * time.Second)}, []string{"a"}},
	}
	for _, tt := range tests {
		res, err := s.List(ctxT(t), alice, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(tt.want, ids(res.Tasks)); diff != "" {
			t.Errorf("List(%+v) (-want +got):\n%s", tt.q, diff)
		}
	}
}

// walk lists every page of q and returns the ids in order, checking each
// page's size and TotalSize on the way.
func walk(t *testing.T, s a2asrv.TaskStore, q a2asrv.ListQuery, total int) []string {
	t.Helper()
	var got []string
	for page := 0; ; page++ {
		if page > total+1 {
			t.Fatalf("more pages than tasks; ids so far %v", got)
		}
		res, err := s.List(ctxT(t), alice, q)
		if err != nil {
			t.Fatalf("List page %d: %v", page, err)
		}
		if res.TotalSize != total {
			t.Errorf("page %d TotalSize = %d, want %d", page, res.TotalSize, total)
		}
		if res.NextPageToken != "" && len(res.Tasks) != q.PageSize {
			t.Errorf("page %d has %d tasks and a next page, want full pages of %d", page, len(res.Tasks), q.PageSize)
		}
		if len(res.Tasks) > q.PageSize {
			t.Errorf("page %d has %d tasks, more than PageSize %d", page, len(res.Tasks), q.PageSize)
		}
		got = append(got, ids(res.Tasks)...)
		if res.NextPageToken == "" {
			return got
		}
		q.PageToken = res.NextPageToken
	}
}

func testListPaging(t *testing.T, newStore func(t *testing.T) a2asrv.TaskStore) {
	s := newStore(t)
	type item struct {
		id, ctx string
		ms      int64
	}
	var all []item
	for i := range 23 {
		// Runs of three tasks share a timestamp, so the id tie-break is
		// exercised at page edges.
		it := item{id: fmt.Sprintf("task-%02d", (i*7)%23), ctx: []string{"c1", "c2"}[i%2], ms: int64(i / 3 * 1000)}
		all = append(all, it)
		mustCreate(t, s, alice, task(it.id, it.ctx, a2a.TaskStateWorking, time.Duration(it.ms)*time.Millisecond))
	}
	mustCreate(t, s, others[0].scope, task("foreign", "c1", a2a.TaskStateWorking, time.Minute))
	slices.SortFunc(all, func(a, b item) int { return cmp.Or(cmp.Compare(b.ms, a.ms), cmp.Compare(b.id, a.id)) })
	var want, wantC1 []string
	for _, it := range all {
		want = append(want, it.id)
		if it.ctx == "c1" {
			wantC1 = append(wantC1, it.id)
		}
	}
	for _, size := range []int{1, 2, 3, 5, 7, 22, 23, 24, 100} {
		t.Run(fmt.Sprintf("size %d", size), func(t *testing.T) {
			got := walk(t, s, a2asrv.ListQuery{PageSize: size}, len(want))
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("ids over all pages (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("filtered", func(t *testing.T) {
		got := walk(t, s, a2asrv.ListQuery{PageSize: 4, ContextID: "c1"}, len(wantC1))
		if diff := gocmp.Diff(wantC1, got); diff != "" {
			t.Errorf("ids over all pages (-want +got):\n%s", diff)
		}
	})
	t.Run("exact multiple has no empty last page", func(t *testing.T) {
		s := newStore(t)
		for i := range 6 {
			mustCreate(t, s, alice, task(fmt.Sprintf("t%d", i), "c1", a2a.TaskStateWorking, time.Duration(i)*time.Second))
		}
		got := walk(t, s, a2asrv.ListQuery{PageSize: 3}, 6)
		if diff := gocmp.Diff([]string{"t5", "t4", "t3", "t2", "t1", "t0"}, got); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
	})
	t.Run("page size zero uses a default", func(t *testing.T) {
		res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{})
		if err != nil || len(res.Tasks) != len(want) {
			t.Errorf("List(PageSize 0) = %d tasks, %v; want all %d", len(res.Tasks), err, len(want))
		}
	})
}

// testListTokenSurvivesChanges checks that a page token is a position, not an
// offset: tasks created before it or deleted (even the one it names) do not
// shift what comes next.
func testListTokenSurvives(t *testing.T, s a2asrv.TaskStore) {
	listFixture(t, s) // g c b e d a f h
	res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff([]string{"g", "c", "b"}, ids(res.Tasks)); diff != "" {
		t.Fatalf("first page (-want +got):\n%s", diff)
	}
	mustCreate(t, s, alice, task("newest", "c1", a2a.TaskStateWorking, time.Hour))
	for _, id := range []string{"b", "e"} {
		if err := s.Delete(ctxT(t), alice, id); err != nil {
			t.Fatal(err)
		}
	}
	next, err := s.List(ctxT(t), alice, a2asrv.ListQuery{PageSize: 3, PageToken: res.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff([]string{"d", "a", "f"}, ids(next.Tasks)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	if next.TotalSize != 7 {
		t.Errorf("TotalSize = %d, want 7", next.TotalSize)
	}
}

func testListBadToken(t *testing.T, s a2asrv.TaskStore) {
	listFixture(t, s)
	for _, tok := range []string{"garbage", "!!!", "AAAA", "eyJ0cyI6MSwiaWQiOiJhIn0", "\x00", "   "} {
		if res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{PageToken: tok}); !errors.Is(err, a2asrv.ErrBadPageToken) {
			t.Errorf("List(PageToken %q) = %+v, %v; want ErrBadPageToken", tok, res, err)
		}
	}
}

func testTaskCopies(t *testing.T, s a2asrv.TaskStore) {
	orig := richTask("t1")
	in := richTask("t1")
	mustCreate(t, s, alice, in)
	scribble(in)
	wantTask(t, s, alice, orig, 1)

	got, _ := mustGet(t, s, alice, "t1")
	scribble(got)
	wantTask(t, s, alice, orig, 1)

	res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("List = %+v, %v", res, err)
	}
	scribble(res.Tasks[0])
	wantTask(t, s, alice, orig, 1)

	upd := richTask("t1")
	upd.Status.State = a2a.TaskStateCompleted
	if _, err := s.Update(ctxT(t), alice, upd, 1); err != nil {
		t.Fatal(err)
	}
	want := richTask("t1")
	want.Status.State = a2a.TaskStateCompleted
	scribble(upd)
	wantTask(t, s, alice, want, 2)
}

// scribble changes every reachable part of t in place.
func scribble(t *a2a.Task) {
	t.ContextID = "scribbled"
	t.Status.State = a2a.TaskStateRejected
	t.Status.Message.Parts[0].Text = "scribbled"
	t.Status.Message.Metadata["k"] = "scribbled"
	t.History[0].Parts[0].Text = "scribbled"
	t.History[0].Parts[1].Raw[0] ^= 0xff
	t.History = append(t.History[:1], a2a.Message{MessageID: "extra"})
	t.Artifacts[0].Parts[0].Data[2] = 'Z'
	t.Artifacts[0].Metadata["k"] = "scribbled"
	t.Metadata["nested"].(map[string]any)["deep"] = "scribbled"
	t.Metadata["list"].([]any)[0] = "scribbled"
	t.Metadata["new"] = true
}

// richTask uses every part kind and field a task can carry. Metadata values
// are the types JSON decoding produces, so they compare equal after a trip
// through any store.
func richTask(id string) *a2a.Task {
	data, _ := a2a.DataPart(map[string]any{"answer": 42, "tags": []string{"x", "y"}})
	return &a2a.Task{
		ID:        id,
		ContextID: "ctx-" + id,
		Status: a2a.TaskStatus{
			State:     a2a.TaskStateWorking,
			Timestamp: time.Date(2026, 3, 1, 12, 34, 56, 789_654_321, time.UTC),
			Message: &a2a.Message{
				MessageID: "status-msg", ContextID: "ctx-" + id, TaskID: id, Role: a2a.RoleAgent,
				Parts:    []a2a.Part{a2a.TextPart("thinking…")},
				Metadata: map[string]any{"k": "v"},
			},
		},
		Artifacts: []a2a.Artifact{{
			ArtifactID: "art-1", Name: "report", Description: "the report",
			Parts: []a2a.Part{
				data,
				a2a.URLPart("https://example.com/r.pdf", "r.pdf", "application/pdf"),
			},
			Metadata:   map[string]any{"k": "v"},
			Extensions: []string{"https://example.com/ext/v1"},
		}},
		History: []a2a.Message{
			{
				MessageID: "m1", ContextID: "ctx-" + id, TaskID: id, Role: a2a.RoleUser,
				Parts: []a2a.Part{
					{Kind: a2a.PartText, Text: "hello <world> & \"you\" \u2028 ✓", MediaType: "text/plain", Metadata: map[string]any{"lang": "en"}},
					a2a.RawPart([]byte{0, 1, 2, 0xfe, 0xff}, "blob.bin", "application/octet-stream"),
				},
				Extensions:       []string{"https://example.com/ext/v1"},
				ReferenceTaskIDs: []string{"older-task"},
				Metadata:         map[string]any{"k": "v"},
			},
			{MessageID: "m2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("")}},
		},
		Metadata: map[string]any{
			"string": "s\x00nul and \u00e9",
			"number": 3.25,
			"big":    1e21,
			"bool":   false,
			"null":   nil,
			"nested": map[string]any{"deep": map[string]any{"x": "y"}},
			"list":   []any{"a", 1.0, map[string]any{}},
		},
	}
}

func testRoundTrip(t *testing.T, s a2asrv.TaskStore) {
	tests := []struct {
		name string
		task *a2a.Task
	}{
		{"every field", richTask("rich")},
		{"bare", &a2a.Task{ID: "bare", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}},
		{"unicode id", task("tâche/β ✓?#%", "c", a2a.TaskStateAuthRequired, time.Millisecond)},
		{"far timestamps", func() *a2a.Task {
			tk := task("far", "c", a2a.TaskStateRejected, 0)
			tk.Status.Timestamp = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
			return tk
		}()},
		{"before epoch", func() *a2a.Task {
			tk := task("old", "c", a2a.TaskStateCanceled, 0)
			tk.Status.Timestamp = time.Date(1969, 7, 20, 20, 17, 40, 123_000_000, time.UTC)
			return tk
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustCreate(t, s, alice, tt.task)
			wantTask(t, s, alice, tt.task, 1)
			res, err := s.List(ctxT(t), alice, a2asrv.ListQuery{ContextID: tt.task.ContextID, PageSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(res.Tasks, func(x *a2a.Task) bool { return x.ID == tt.task.ID })
			if i < 0 {
				t.Fatalf("List did not return %s", tt.task.ID)
			}
			if diff := gocmp.Diff(stored(tt.task), res.Tasks[i]); diff != "" {
				t.Errorf("List task (-want +got):\n%s", diff)
			}
		})
	}
}
