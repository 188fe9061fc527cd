package postgres_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/keyset"
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

// The partial index that finds unsettled tasks must name the states the
// orphan query asks for, or the query cannot use it.
func TestUnsettledIndexNamesTheOrphanStates(t *testing.T) {
	b, err := os.ReadFile("migrations/0005_task_leases.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := "WHERE state IN " + keyset.StateList(a2asrv.OrphanStates()); !strings.Contains(string(b), want) {
		t.Errorf("migration 0005 does not contain %q", want)
	}
}
