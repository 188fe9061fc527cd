package postgres_test

import (
	"context"
	"sync"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestStatsContract(t *testing.T) {
	storetest.TestStats(t, func(t *testing.T) storetest.StatsStores {
		var mu sync.Mutex
		var sizes []int
		db, err := postgres.Open(context.Background(), pgtest.URL(t), &postgres.Options{ObserveBatch: func(n int) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return storetest.StatsStores{Stores: db.Stores(), Batches: func() []int {
			mu.Lock()
			defer mu.Unlock()
			return append([]int(nil), sizes...)
		}}
	})
}
