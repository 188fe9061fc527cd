package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/keyset"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

// Several handles on one file stand for several processes: a file is
// normally used by one process at a time, but recovery must not assume it.
func TestRecovererContract(t *testing.T) {
	storetest.TestRecoverer(t, func(t *testing.T) func() storetest.Instance {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() storetest.Instance {
			db, err := sqlite.Open(context.Background(), path, &sqlite.Options{Lease: &storetest.LeaseOptions})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var once sync.Once
			end := func(f func()) func() { return func() { once.Do(f) } }
			t.Cleanup(end(func() { db.Close() }))
			return storetest.Instance{
				Tasks: db.TaskStore(), Recoverer: db.Recoverer(),
				Crash: end(func() { sqlite.Crash(db) }),
				Close: end(func() { db.Close() }),
			}
		}
	})
}

func TestOpenRefusesAShortLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	o := storetest.LeaseOptions
	o.Expiry = o.Heartbeat
	if db, err := sqlite.Open(context.Background(), path, &sqlite.Options{Lease: &o}); err == nil {
		db.Close()
		t.Fatal("Open accepted a lease expiry no longer than its heartbeat")
	}
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
