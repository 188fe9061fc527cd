package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestLLMStoreContract(t *testing.T) {
	storetest.TestLLMStore(t, func(t *testing.T) llm.Store { return open(t, pgtest.URL(t)).LLMStore() })
}

func TestLLMStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestLLMReopen(t, func(t *testing.T) (llm.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.LLMStore(), func() { db.Close() }
	})
}

// Two handles on one database are two replicas: the suite's calls
// alternate between them, and leases through both never pass a limit
// together.
func TestLLMStoreReplicas(t *testing.T) {
	storetest.TestLLMStore(t, func(t *testing.T) llm.Store {
		url := pgtest.URL(t)
		return &replicas{s: [2]llm.Store{open(t, url).LLMStore(), open(t, url).LLMStore()}}
	})
}

// replicas sends each call to the next of two stores.
type replicas struct {
	s [2]llm.Store
	n atomic.Uint64
}

func (r *replicas) next() llm.Store { return r.s[r.n.Add(1)%2] }

func (r *replicas) PutProvider(ctx context.Context, p llm.Provider, e int64) (llm.Provider, error) {
	return r.next().PutProvider(ctx, p, e)
}
func (r *replicas) GetProvider(ctx context.Context, t, n string) (llm.Provider, error) {
	return r.next().GetProvider(ctx, t, n)
}
func (r *replicas) ListProviders(ctx context.Context, t string) ([]llm.Provider, error) {
	return r.next().ListProviders(ctx, t)
}
func (r *replicas) DeleteProvider(ctx context.Context, t, n string) error {
	return r.next().DeleteProvider(ctx, t, n)
}
func (r *replicas) PutRoute(ctx context.Context, x llm.Route, e int64) (llm.Route, error) {
	return r.next().PutRoute(ctx, x, e)
}
func (r *replicas) GetRoute(ctx context.Context, t, n string) (llm.Route, error) {
	return r.next().GetRoute(ctx, t, n)
}
func (r *replicas) ListRoutes(ctx context.Context, t string) ([]llm.Route, error) {
	return r.next().ListRoutes(ctx, t)
}
func (r *replicas) DeleteRoute(ctx context.Context, t, n string) error {
	return r.next().DeleteRoute(ctx, t, n)
}
func (r *replicas) PutBudget(ctx context.Context, b llm.Budget, e int64) (llm.Budget, error) {
	return r.next().PutBudget(ctx, b, e)
}
func (r *replicas) GetBudget(ctx context.Context, t, i string) (llm.Budget, error) {
	return r.next().GetBudget(ctx, t, i)
}
func (r *replicas) ListBudgets(ctx context.Context, t string) ([]llm.Budget, error) {
	return r.next().ListBudgets(ctx, t)
}
func (r *replicas) DeleteBudget(ctx context.Context, t, i string) error {
	return r.next().DeleteBudget(ctx, t, i)
}
func (r *replicas) Lease(ctx context.Context, x llm.LeaseRequest) ([]llm.Grant, error) {
	return r.next().Lease(ctx, x)
}
func (r *replicas) Commit(ctx context.Context, b llm.Batch) ([]llm.LeaseResult, error) {
	return r.next().Commit(ctx, b)
}
func (r *replicas) Spent(ctx context.Context, k llm.Keys) (llm.Spending, error) {
	return r.next().Spent(ctx, k)
}
func (r *replicas) Usage(ctx context.Context, q llm.UsageQuery) ([]llm.UsageRow, error) {
	return r.next().Usage(ctx, q)
}
func (r *replicas) Sweep(ctx context.Context, a, b time.Time) error { return r.next().Sweep(ctx, a, b) }

func TestStoresLLM(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().LLM.(*postgres.LLMStore); !ok {
		t.Fatalf("Stores().LLM = %T, want *postgres.LLMStore", db.Stores().LLM)
	}
}
