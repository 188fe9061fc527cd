package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/internal/sqlstore"
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
				WriteRaw: func(t *testing.T, scope a2asrv.Scope, id string, state a2a.TaskState, body []byte) {
					writeRaw(t, path, scope, id, state, body)
				},
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
	if want := "WHERE state IN " + sqlstore.StateList(a2asrv.OrphanStates()); !strings.Contains(string(b), want) {
		t.Errorf("migration 0005 does not contain %q", want)
	}
}

// writeRaw inserts a task row with a connection of its own, past the
// store's encoding.
func writeRaw(t *testing.T, path string, scope a2asrv.Scope, id string, state a2a.TaskState, body []byte) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, err = raw.ExecContext(t.Context(), `INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body)
		VALUES (?, ?, ?, 'c', ?, 0, 1, ?)`, id, scope.Tenant, scope.Owner, state.String(), body)
	if err != nil {
		t.Fatalf("write raw row %s: %v", id, err)
	}
}

// A heartbeat renews the instance's own lease and drops lapsed ones, in
// one write.
func TestHeartbeatPurgesLapsedLeases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	db, err := sqlite.Open(context.Background(), path, &sqlite.Options{Lease: &storetest.LeaseOptions})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO a2a_instances (id, heartbeat_ms, expires_ms) VALUES ('lapsed', 0, 1)`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * storetest.LeaseOptions.Expiry)
	for {
		var lapsed, live int
		err := raw.QueryRow(`SELECT count(*) FILTER (WHERE id = 'lapsed'), count(*) FILTER (WHERE expires_ms > ?) FROM a2a_instances`,
			time.Now().UnixMilli()).Scan(&lapsed, &live)
		if err != nil {
			t.Fatal(err)
		}
		if lapsed == 0 && live == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after heartbeats: %d lapsed leases kept, %d live, want 0 and 1", lapsed, live)
		}
		time.Sleep(storetest.LeaseOptions.Heartbeat / 2)
	}
}
