package postgres_test

import (
	"context"
	"sync"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

// Several handles on one database are several replicas: when one dies, the
// others settle its tasks and only its tasks.
func TestRecovererContract(t *testing.T) {
	storetest.TestRecoverer(t, func(t *testing.T) func() storetest.Instance {
		url := pgtest.URL(t)
		return func() storetest.Instance {
			db, err := postgres.Open(context.Background(), url, &postgres.Options{Lease: &storetest.LeaseOptions})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var once sync.Once
			end := func(f func()) func() { return func() { once.Do(f) } }
			t.Cleanup(end(func() { db.Close() }))
			return storetest.Instance{
				Tasks: db.TaskStore(), Recoverer: db.Recoverer(),
				Crash: end(func() { postgres.Crash(db) }),
				Close: end(func() { db.Close() }),
			}
		}
	})
}
