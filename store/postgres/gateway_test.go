package postgres_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestGatewayStoreContract(t *testing.T) {
	storetest.TestGatewayStore(t, func(t *testing.T) gateway.Store { return open(t, pgtest.URL(t)).GatewayStore() })
}

// Several handles on one database are several replicas: claims stay
// exclusive across their connections, and each handle's watchers hear of
// every handle's appends.
func TestGatewayStoreReplicas(t *testing.T) {
	storetest.TestGatewayReplicas(t, func(t *testing.T) func() gateway.Store {
		url := pgtest.URL(t)
		return func() gateway.Store { return open(t, url).GatewayStore() }
	}, true)
}

func TestGatewayStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestGatewayReopen(t, func(t *testing.T) (gateway.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.GatewayStore(), func() { db.Close() }
	})
}

func TestStoresGateway(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Gateway.(*postgres.GatewayStore); !ok {
		t.Fatalf("Stores().Gateway = %T, want *postgres.GatewayStore", db.Stores().Gateway)
	}
}

// waitCall waits for a call of fn matching want; a minute only bounds a
// failure.
func waitCall(t *testing.T, calls <-chan [2]any, want [2]any) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case c := <-calls:
			if c == want {
				return
			}
		case <-deadline:
			t.Fatalf("no call %v within a minute", want)
		}
	}
}

// When the listening connection breaks and comes back, every watcher is
// told notifications may have been lost, and hears of the other replicas'
// appends again.
func TestGatewayWatchAfterListenerDrop(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	calls := make(chan [2]any, 100)
	if err := b.GatewayStore().WatchEvents(t.Context(), func(run string, last int64) { calls <- [2]any{run, last} }); err != nil {
		t.Fatal(err)
	}
	if err := postgres.DropListener(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, [2]any{"", int64(0)})
	// Listening again: a's append reaches b.
	ev := []gateway.Event{{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"QUEUED"}`)}}
	if _, _, err := a.GatewayStore().CreateRun(t.Context(), gateway.RunWrite{Run: gateway.Run{ID: "r1", TenantID: "acme", Status: gateway.StatusQueued}, Events: ev}); err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, [2]any{"r1", int64(1)})
}

// Text PostgreSQL cannot hold is refused on writes and names nothing on
// reads; a run id too long to name in a notification is announced as a
// possible loss.
func TestGatewayText(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	s := a.GatewayStore()
	ctx := t.Context()
	for _, r := range []gateway.Run{
		{ID: "r\x00", TenantID: "acme", Status: gateway.StatusQueued},
		{ID: "r1", TenantID: "ac\xffme", Status: gateway.StatusQueued},
		{ID: "r1", TenantID: "acme", Status: gateway.StatusQueued, Caller: gateway.Caller{UserID: "\x00"}},
	} {
		if _, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: r}); err == nil {
			t.Errorf("CreateRun of %q/%q succeeded", r.TenantID, r.ID)
		}
	}
	if _, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: "r1", TenantID: "acme", Status: gateway.StatusQueued},
		Events: []gateway.Event{{Type: "st\x00tus"}}}); err == nil {
		t.Error("CreateRun with an event type holding NUL succeeded")
	}
	if _, err := s.CreateInstance(ctx, gateway.Instance{ID: "i1", TenantID: "acme", Name: "n\x00"}, time.Time{}); err == nil {
		t.Error("CreateInstance with a name holding NUL succeeded")
	}
	if _, err := s.GetRun(ctx, "", "r\x00"); err == nil {
		t.Error("GetRun of an id holding NUL succeeded")
	}
	if evs, err := s.Events(ctx, "r\xff", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("Events of an id with invalid UTF-8 = %v, %v", evs, err)
	}
	if runs, err := s.ListRuns(ctx, gateway.RunFilter{TenantID: "\x00"}); err != nil || len(runs) != 0 {
		t.Errorf("ListRuns of a tenant holding NUL = %v, %v", runs, err)
	}

	calls := make(chan [2]any, 10)
	if err := b.GatewayStore().WatchEvents(ctx, func(run string, last int64) { calls <- [2]any{run, last} }); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("r", 5000)
	if _, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: long, TenantID: "acme", Status: gateway.StatusQueued},
		Events: []gateway.Event{{Type: gateway.EventStatus}}}); err != nil {
		t.Fatalf("CreateRun with a long id: %v", err)
	}
	waitCall(t, calls, [2]any{"", int64(0)})
}

func BenchmarkGatewayStore(b *testing.B) {
	storetest.BenchmarkGatewayStore(b, open(b, pgtest.URL(b)).GatewayStore())
}

// Listings read the rows they return from an index in order, with no
// sort, and so do claims, from the index of the runs still live, however
// many runs ended; an event page reads its run's range of the primary key.
// The fixture is as a server's would be: the runs still live are the
// newest.
func TestGatewayPlans(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// 5,000 runs of 5 tenants, the newest 100 still QUEUED, each with 20
	// events.
	for _, q := range []string{
		`INSERT INTO gateway_runs (` + sqlstore.RunCols + `)
			SELECT 'r' || i, 't' || (i % 5), 'inst', 'u' || (i % 40), CASE WHEN i % 3 = 0 THEN 'th' || (i % 300) ELSE '' END,
				CASE WHEN i > 4900 THEN 'QUEUED' ELSE 'COMPLETED' END,
				'', 0, 0, 20, 1, i, i, 0, 0, NULL, NULL, NULL, '{}'::bytea, ''
			FROM generate_series(1, 5000) AS i`,
		`INSERT INTO gateway_run_events (` + sqlstore.EventCols + `)
			SELECT 'r' || i, s, 'status', '{}'::bytea, i, '', '' FROM generate_series(1, 5000) AS i, generate_series(1, 20) AS s`,
		`VACUUM ANALYZE gateway_runs`,
		`VACUUM ANALYZE gateway_run_events`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(q string, args []any) string {
		t.Helper()
		rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	list := func(f gateway.RunFilter) string { return plan(postgres.ListRunsSQL(f)) }
	for _, c := range []struct {
		name string
		plan string
		want []string // one of these indexes
		sort bool     // a sort is allowed
	}{
		{"a tenant's runs", list(gateway.RunFilter{TenantID: "t1", Limit: 50}), []string{"gateway_runs_tenant"}, false},
		// Either index reads in order: the planner weighs the tenant's
		// share of the page's range.
		{"a tenant's runs, a page on", list(gateway.RunFilter{TenantID: "t1", AfterCreated: time.UnixMicro(2500), AfterID: "r2500", Limit: 50}),
			[]string{"gateway_runs_tenant", "gateway_runs_created"}, false},
		// A thread's runs are few enough for a bitmap of its range and a
		// sort of what it finds.
		{"a thread's runs", list(gateway.RunFilter{TenantID: "t1", ThreadID: "th6", Limit: 50}), []string{"gateway_runs_thread"}, true},
		{"every tenant's runs", list(gateway.RunFilter{Limit: 50}), []string{"gateway_runs_created"}, false},
		{"claims", plan(postgres.ClaimRunsSQL, []any{int64(10_000), 10, "o", int64(20_000)}), []string{"gateway_runs_claim"}, false},
		// A run's events are few enough for a bitmap of its range and a
		// sort of what it finds.
		{"events", plan(`SELECT `+sqlstore.EventCols+` FROM gateway_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
			[]any{"r7", 3, 100}), []string{"gateway_run_events_pkey"}, true},
	} {
		t.Logf("%s:\n%s", c.name, c.plan)
		indexed := slices.ContainsFunc(c.want, func(index string) bool { return strings.Contains(c.plan, index) })
		if !indexed || strings.Contains(c.plan, "Seq Scan") || strings.Contains(c.plan, "Sort") && !c.sort {
			t.Errorf("%s: plan\n%s\nwant one of %v, no sequential scan, and a sort only if %v", c.name, c.plan, c.want, c.sort)
		}
	}
}
