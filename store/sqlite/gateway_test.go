package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestGatewayStoreContract(t *testing.T) {
	storetest.TestGatewayStore(t, func(t *testing.T) gateway.Store { return tempDB(t).GatewayStore() })
}

// Two handles on one file stand for two processes sharing it: claims stay
// exclusive across them. A handle watches only its own writes.
func TestGatewayStoreReplicas(t *testing.T) {
	storetest.TestGatewayReplicas(t, func(t *testing.T) func() gateway.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() gateway.Store { return open(t, path).GatewayStore() }
	}, false)
}

func TestGatewayStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestGatewayReopen(t, func(t *testing.T) (gateway.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.GatewayStore(), func() { db.Close() }
	})
}

// The Stores of a database serve the gateway from the same handle.
func TestStoresGateway(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Gateway.(*sqlite.GatewayStore); !ok {
		t.Fatalf("Stores().Gateway = %T, want *sqlite.GatewayStore", db.Stores().Gateway)
	}
}

func BenchmarkGatewayStore(b *testing.B) {
	storetest.BenchmarkGatewayStore(b, tempDB(b).GatewayStore())
}

// sqlitePlan is SQLite's plan of q, one step a line.
func sqlitePlan(t *testing.T, raw *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := raw.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "\n")
}

// Listings, claims and event pages read the rows they return from an
// index in order: no table scan, no sort. Claims read the index of the
// runs still live, however many runs ended.
func TestGatewayPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	at := time.Now()
	for _, c := range []struct {
		name string
		q    string
		args []any
		want string
		sort bool
	}{
		{"a tenant's runs", "", nil, "gateway_runs_tenant", false},
		{"a tenant's runs, a page on", "", nil, "gateway_runs_tenant", false},
		{"a thread's runs", "", nil, "gateway_runs_thread", false},
		{"every tenant's runs", "", nil, "gateway_runs_created", false},
		{"claims", sqlite.ClaimRunsSQL, []any{"o", 1, 2, 3, 4, 5}, "gateway_runs_claim", false},
		{"events", sqlite.EventsSQL, []any{"r", 0, 100}, "PRIMARY KEY", false},
	} {
		switch c.name {
		case "a tenant's runs":
			c.q, c.args = sqlite.ListRunsSQL(gateway.RunFilter{TenantID: "acme", Statuses: []gateway.Status{gateway.StatusQueued}})
		case "a tenant's runs, a page on":
			c.q, c.args = sqlite.ListRunsSQL(gateway.RunFilter{TenantID: "acme", AfterCreated: at, AfterID: "r"})
		case "a thread's runs":
			c.q, c.args = sqlite.ListRunsSQL(gateway.RunFilter{TenantID: "acme", ThreadID: "th", Limit: 50})
		case "every tenant's runs":
			c.q, c.args = sqlite.ListRunsSQL(gateway.RunFilter{UserID: "alice", AfterCreated: at, AfterID: "r"})
		}
		plan := sqlitePlan(t, raw, c.q, c.args...)
		t.Logf("%s:\n%s", c.name, plan)
		if !strings.Contains(plan, c.want) || strings.Contains(plan, "SCAN gateway_runs\n") || strings.HasSuffix(plan, "SCAN gateway_runs") ||
			strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") != c.sort {
			t.Errorf("%s: plan\n%s\nwant %s, no table scan, and a sort: %v", c.name, plan, c.want, c.sort)
		}
	}
}
