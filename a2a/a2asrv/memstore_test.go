package a2asrv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryTaskStoreContract(t *testing.T) {
	storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore {
		return a2asrv.NewMemoryTaskStore(nil)
	})
}

func TestMemoryPushConfigStoreContract(t *testing.T) {
	storetest.TestPushConfigStore(t, func(t *testing.T) a2asrv.PushConfigStore {
		return a2asrv.NewMemoryPushConfigStore(nil)
	})
}

func TestMemoryPushOutboxContract(t *testing.T) {
	storetest.TestPushOutbox(t, func(t *testing.T) storetest.PushStores {
		tasks := a2asrv.NewMemoryTaskStore(nil)
		return storetest.PushStores{Tasks: tasks, Configs: tasks.PushConfigStore(), Outbox: tasks.PushOutbox()}
	})
}

func memTask(id string) *a2a.Task {
	return &a2a.Task{ID: id, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
}

// present lists which of ids the store still holds.
func present(t *testing.T, s a2asrv.TaskStore, scope a2asrv.Scope, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		_, _, err := s.Get(context.Background(), scope, id)
		switch {
		case err == nil:
			out = append(out, id)
		case !errors.Is(err, a2asrv.ErrNotFound):
			t.Fatalf("Get(%s): %v", id, err)
		}
	}
	return out
}

func TestMemoryTaskStoreEvictsLeastRecentlyWritten(t *testing.T) {
	ctx := context.Background()
	sc := a2asrv.Scope{Tenant: "t", Owner: "o"}
	tests := []struct {
		name string
		run  func(s *a2asrv.MemoryTaskStore) // after creating a, b, c
		want []string
	}{
		{"oldest goes first", func(s *a2asrv.MemoryTaskStore) {}, []string{"b", "c", "d"}},
		{"update refreshes", func(s *a2asrv.MemoryTaskStore) {
			if _, err := s.Update(ctx, sc, memTask("a"), 1); err != nil {
				t.Fatal(err)
			}
		}, []string{"a", "c", "d"}},
		{"reads do not refresh", func(s *a2asrv.MemoryTaskStore) {
			present(t, s, sc, "a")
			if _, err := s.List(ctx, sc, a2asrv.ListQuery{}); err != nil {
				t.Fatal(err)
			}
		}, []string{"b", "c", "d"}},
		{"failed update does not refresh", func(s *a2asrv.MemoryTaskStore) {
			if _, err := s.Update(ctx, sc, memTask("a"), 7); !errors.Is(err, a2asrv.ErrConcurrentModification) {
				t.Fatalf("Update(stale) = %v", err)
			}
		}, []string{"b", "c", "d"}},
		{"delete frees a slot", func(s *a2asrv.MemoryTaskStore) {
			if err := s.Delete(ctx, sc, "b"); err != nil {
				t.Fatal(err)
			}
		}, []string{"a", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := a2asrv.NewMemoryTaskStore(&a2asrv.MemoryOptions{MaxTasks: 3})
			for _, id := range []string{"a", "b", "c"} {
				if _, err := s.Create(ctx, sc, memTask(id)); err != nil {
					t.Fatal(err)
				}
			}
			tt.run(s)
			if _, err := s.Create(ctx, sc, memTask("d")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, present(t, s, sc, "a", "b", "c", "d")); diff != "" {
				t.Errorf("tasks kept (-want +got):\n%s", diff)
			}
			if s.Len() != 3 {
				t.Errorf("Len() = %d, want 3", s.Len())
			}
		})
	}
}

func TestMemoryTaskStoreStaysBounded(t *testing.T) {
	ctx := context.Background()
	s := a2asrv.NewMemoryTaskStore(&a2asrv.MemoryOptions{MaxTasks: 50})
	for i := range 1000 {
		sc := a2asrv.Scope{Owner: fmt.Sprint(i % 7)}
		if _, err := s.Create(ctx, sc, memTask(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 50 {
		t.Errorf("Len() = %d, want 50", s.Len())
	}
	total := 0
	for o := range 7 {
		res, err := s.List(ctx, a2asrv.Scope{Owner: fmt.Sprint(o)}, a2asrv.ListQuery{PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		total += res.TotalSize
	}
	if total != 50 {
		t.Errorf("listed %d tasks over all scopes, want 50", total)
	}
	if got := a2asrv.NewMemoryTaskStore(nil); got.Len() != 0 {
		t.Errorf("new store Len() = %d", got.Len())
	}
}

func TestMemoryPushConfigStoreEvicts(t *testing.T) {
	ctx := context.Background()
	sc := a2asrv.Scope{Tenant: "t", Owner: "o"}
	s := a2asrv.NewMemoryPushConfigStore(&a2asrv.MemoryOptions{MaxPushConfigs: 2})
	put := func(task, id, url string) {
		t.Helper()
		if err := s.Put(ctx, sc, &a2a.TaskPushNotificationConfig{TaskID: task, ID: id, URL: url}); err != nil {
			t.Fatal(err)
		}
	}
	put("t1", "a", "u1")
	put("t2", "b", "u2")
	put("t1", "a", "u3") // a replacement refreshes a
	put("t3", "c", "u4") // evicts t2/b
	var kept []string
	for _, k := range [][2]string{{"t1", "a"}, {"t2", "b"}, {"t3", "c"}} {
		if _, err := s.Get(ctx, sc, k[0], k[1]); err == nil {
			kept = append(kept, k[0]+"/"+k[1])
		}
	}
	if diff := cmp.Diff([]string{"t1/a", "t3/c"}, kept); diff != "" {
		t.Errorf("configs kept (-want +got):\n%s", diff)
	}
	cfgs, _, err := s.List(ctx, sc, "t2", 10, "")
	if err != nil || len(cfgs) != 0 {
		t.Errorf("List(evicted task) = %v, %v", cfgs, err)
	}
}

func BenchmarkMemoryTaskStore(b *testing.B) {
	storetest.BenchmarkTaskStore(b, a2asrv.NewMemoryTaskStore(nil))
}

func ExampleNewMemoryTaskStore() {
	ctx := context.Background()
	store := a2asrv.NewMemoryTaskStore(&a2asrv.MemoryOptions{MaxTasks: 1000})
	scope := a2asrv.Scope{Tenant: "acme", Owner: "alice"}

	task := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{
		State: a2a.TaskStateSubmitted, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}}
	v, _ := store.Create(ctx, scope, task)

	task.Status.State = a2a.TaskStateWorking
	v, _ = store.Update(ctx, scope, task, v)
	_, err := store.Update(ctx, scope, task, v-1) // someone else's stale write
	fmt.Println(v, errors.Is(err, a2asrv.ErrConcurrentModification))

	_, _, err = store.Get(ctx, a2asrv.Scope{Tenant: "acme", Owner: "bob"}, "task-1")
	fmt.Println(errors.Is(err, a2asrv.ErrNotFound))

	res, _ := store.List(ctx, scope, a2asrv.ListQuery{State: a2a.TaskStateWorking, PageSize: 10})
	fmt.Println(res.TotalSize, res.Tasks[0].ID, res.Tasks[0].Status.State)
	// Output:
	// 2 true
	// true
	// 1 task-1 TASK_STATE_WORKING
}
