package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// benchSeq keeps task ids unique across the benchmark's repeated runs on
// one store.
var benchSeq atomic.Int64

// BenchmarkTaskStore measures a store: "CreateUpdateGet" is one task's
// life in brief (create, one optimistic update, one read) per op, run
// serially and from parallel goroutines; "List" reads a 50-task page out of
// 1000 tasks, with and without a context filter.
func BenchmarkTaskStore(b *testing.B, s a2asrv.TaskStore) {
	ctx := context.Background()
	lifecycle := func(b *testing.B) {
		id := fmt.Sprintf("bench-%d", benchSeq.Add(1))
		tk := richTask(id)
		v, err := s.Create(ctx, alice, tk)
		if err != nil {
			b.Fatal(err)
		}
		tk.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: time.Now()}
		if _, err := s.Update(ctx, alice, tk, v); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Get(ctx, alice, id); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("CreateUpdateGet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lifecycle(b)
		}
	})
	b.Run("CreateUpdateGetParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				lifecycle(b)
			}
		})
	})

	listScope := a2asrv.Scope{Tenant: "bench", Owner: fmt.Sprintf("lister-%d", benchSeq.Add(1))}
	for i := range 1000 {
		tk := task(fmt.Sprintf("list-%s-%04d", listScope.Owner, i), fmt.Sprintf("c%d", i%10), a2a.TaskStateWorking, time.Duration(i)*time.Second)
		if _, err := s.Create(ctx, listScope, tk); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []struct {
		name string
		q    a2asrv.ListQuery
	}{
		{"List", a2asrv.ListQuery{PageSize: 50}},
		{"ListByContext", a2asrv.ListQuery{PageSize: 50, ContextID: "c3"}},
	} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.List(ctx, listScope, q.q)
				if err != nil || len(res.Tasks) != 50 {
					b.Fatalf("List = %v, %v", res, err)
				}
			}
		})
	}
}
