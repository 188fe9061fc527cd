package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestGateStoreContract(t *testing.T) {
	storetest.TestGateStore(t, func(t *testing.T) gate.Store { return open(t, pgtest.URL(t)).GateStore() })
}

func BenchmarkGateStore(b *testing.B) {
	storetest.BenchmarkGateStore(b, open(b, pgtest.URL(b)).GateStore())
}

// A ledger total is a range of a covering index, whichever form it
// takes: its cost follows the entries it counts, not the ledger.
func TestGateAggregatePlan(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url).GateStore()
	ctx := context.Background()
	now := time.Now()
	ledger := make([]gate.LedgerEntry, 20_000)
	for i := range ledger {
		ledger[i] = gate.LedgerEntry{TenantID: fmt.Sprintf("t%d", i%20), ActionType: []string{"refund", "payment"}[i%2],
			Subject: fmt.Sprintf("c-%d", i%500), Amount: 1, At: now.Add(-time.Duration(i) * time.Second)}
	}
	if _, err := s.WriteAction(ctx, gate.ActionWrite{Record: gate.ActionRecord{TenantID: "t0", SessionID: "s", ActionID: "a",
		State: gate.ActionExecuted}, Now: now, Ledger: ledger}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE gate_ledger`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		q     gate.LedgerQuery
		index string
	}{
		{"one subject", gate.LedgerQuery{TenantID: "t3", ActionType: "payment", Subject: "c-3", Since: now.Add(-time.Hour)}, "gate_ledger_subject"},
		{"any subject", gate.LedgerQuery{TenantID: "t3", ActionType: "payment", Since: now.Add(-time.Hour)}, "gate_ledger_type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, args := postgres.AggregateSQL(tt.q)
			rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			// The planner picks an index-only, index or bitmap scan by
			// the visibility map and statistics; any of them is a range
			// of the index with the time as its bound, not a filter.
			plan := strings.Join(lines, "\n")
			ranged := false
			for _, scan := range []string{"Index Only Scan using ", "Index Scan using ", "Bitmap Index Scan on "} {
				ranged = ranged || strings.Contains(plan, scan+tt.index)
			}
			if !ranged || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index Cond: ((tenant = ") ||
				!strings.Contains(plan, "(at_us >= ") || strings.Contains(plan, "Filter:") {
				t.Errorf("plan:\n%s\nwant a range of %s bounded by the time", plan, tt.index)
			}
		})
	}
}

// The audit log is append-only in the schema itself.
func TestGateAuditAppendOnly(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url).GateStore()
	ctx := context.Background()
	if _, err := s.AppendAudit(ctx, gate.AuditEntry{Kind: "restart", Body: json.RawMessage(`{"a" : 1}`)}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`UPDATE gate_audit SET kind = 'edited'`, `DELETE FROM gate_audit`} {
		if _, err := conn.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
}

// Text PostgreSQL cannot hold names nothing: reads find nothing and
// writes are refused, never a driver error.
func TestGateBadText(t *testing.T) {
	s := open(t, pgtest.URL(t)).GateStore()
	ctx := context.Background()
	if _, err := s.GetSession(ctx, "acme\x00", "s1"); !errors.Is(err, gate.ErrNotFound) {
		t.Errorf("GetSession with NUL = %v, want ErrNotFound", err)
	}
	if _, err := s.GetAction(ctx, "acme", "s\xff", "a1"); !errors.Is(err, gate.ErrNotFound) {
		t.Errorf("GetAction with invalid UTF-8 = %v, want ErrNotFound", err)
	}
	if _, err := s.RuleSet(ctx, "\x00", 0); !errors.Is(err, gate.ErrNotFound) {
		t.Errorf("RuleSet with NUL = %v, want ErrNotFound", err)
	}
	if tot, err := s.Aggregate(ctx, gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "\x00"}); err != nil || tot != (gate.LedgerTotal{}) {
		t.Errorf("Aggregate with NUL = %+v, %v", tot, err)
	}
	if as, err := s.ListActions(ctx, gate.ActionFilter{TenantID: "a\x00"}); err != nil || len(as) != 0 {
		t.Errorf("ListActions with NUL = %v, %v", as, err)
	}
	writes := map[string]func() error{
		"session": func() error {
			_, err := s.CreateSession(ctx, gate.SessionRecord{TenantID: "acme", ID: "s\x00"})
			return err
		},
		"action": func() error {
			_, err := s.WriteAction(ctx, gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a", Rationale: "\xff"}})
			return err
		},
		"ledger": func() error {
			_, err := s.WriteAction(ctx, gate.ActionWrite{Record: gate.ActionRecord{TenantID: "acme", SessionID: "s", ActionID: "a"},
				Ledger: []gate.LedgerEntry{{Subject: "\x00"}}})
			return err
		},
		"audit": func() error {
			_, err := s.AppendAudit(ctx, gate.AuditEntry{Kind: "k", Actor: "\x00"})
			return err
		},
	}
	for name, w := range writes {
		if err := w(); err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Errorf("%s with bad text = %v, want the refusal", name, err)
		}
	}
	if _, err := s.GetAction(ctx, "acme", "s", "a"); !errors.Is(err, gate.ErrNotFound) {
		t.Errorf("a refused action was stored: %v", err)
	}
}
