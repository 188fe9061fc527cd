package postgres_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/internal/sqlstore"
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
				WriteRaw: func(t *testing.T, scope a2asrv.Scope, id string, state a2a.TaskState, body []byte) {
					writeRaw(t, url, scope, id, state, body)
				},
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
	if want := "WHERE state IN " + sqlstore.StateList(a2asrv.OrphanStates()); !strings.Contains(string(b), want) {
		t.Errorf("migration 0005 does not contain %q", want)
	}
}

// writeRaw inserts a task row with a connection of its own, past the
// store's encoding.
func writeRaw(t *testing.T, url string, scope a2asrv.Scope, id string, state a2a.TaskState, body []byte) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body)
		VALUES ($1, $2, $3, 'c', $4, 0, 1, $5)`, id, scope.Tenant, scope.Owner, state.String(), body)
	if err != nil {
		t.Fatalf("write raw row %s: %v", id, err)
	}
}

// A heartbeat renews the replica's own lease and drops lapsed ones, in one
// statement.
func TestHeartbeatPurgesLapsedLeases(t *testing.T) {
	url := pgtest.URL(t)
	db, err := postgres.Open(context.Background(), url, &postgres.Options{Lease: &storetest.LeaseOptions})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO a2a_instances (id, heartbeat_at, expires_at) VALUES ('lapsed', now() - interval '1 hour', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * storetest.LeaseOptions.Expiry)
	for {
		var lapsed, live int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE id = 'lapsed'), count(*) FILTER (WHERE expires_at > clock_timestamp()) FROM a2a_instances`).Scan(&lapsed, &live)
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
