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
	"github.com/jackc/pgx/v5/pgxpool"

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

// BenchmarkGateLedger times ledger totals against the recount stores
// ran before running totals, on the same database with 0008's covering
// indexes put back for it.
func BenchmarkGateLedger(b *testing.B) {
	url := pgtest.URL(b)
	s := open(b, url).GateStore()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`CREATE INDEX gate_ledger_subject ON gate_ledger (tenant, action_type, subject, at_us) INCLUDE (amount)`,
		`CREATE INDEX gate_ledger_type ON gate_ledger (tenant, action_type, at_us) INCLUDE (amount)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	const recount = `SELECT count(*), coalesce(sum(amount), 0) FROM gate_ledger WHERE tenant = $1 AND action_type = $2 AND at_us >= $3`
	storetest.BenchmarkGateLedger(b, s, &storetest.GateLedgerOptions{
		Recount: func(ctx context.Context, q gate.LedgerQuery) (gate.LedgerTotal, error) {
			var t gate.LedgerTotal
			var err error
			if q.Subject != "" {
				err = pool.QueryRow(ctx, recount+` AND subject = $4`, q.TenantID, q.ActionType, q.Since.UnixMicro(), q.Subject).Scan(&t.Count, &t.Sum)
			} else {
				err = pool.QueryRow(ctx, recount, q.TenantID, q.ActionType, q.Since.UnixMicro()).Scan(&t.Count, &t.Sum)
			}
			return t, err
		},
		Settle: func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `VACUUM ANALYZE gate_ledger`)
			return err
		},
	})
}

// A ledger total reads two entries whatever the window: its series'
// head by key and the last entry before the window from the end of the
// series' index range (a backward scan), never the ledger's rows in the
// window or a sequential scan.
func TestGateAggregatePlan(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url).GateStore()
	ctx := context.Background()
	now := time.Now()
	ledger := make([]gate.LedgerEntry, 20_000)
	for i := range ledger {
		ledger[i] = gate.LedgerEntry{TenantID: fmt.Sprintf("t%d", i%20), ActionType: []string{"refund", "payment"}[i%2],
			Subject: fmt.Sprintf("c-%d", i%500), Amount: 1, At: now.Add(-time.Duration(len(ledger)-i) * time.Second)}
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
	q, args := postgres.AggregateSQL([]gate.LedgerQuery{
		{TenantID: "t3", ActionType: "payment", Subject: "c-3", Since: now.Add(-time.Hour)},
		{TenantID: "t3", ActionType: "payment", Since: now.Add(-time.Hour)},
	})
	rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// The planner picks an index-only or index scan by the visibility
	// map; either is a backward range of the series' index, bounded by
	// the time, stopped by the LIMIT after one entry.
	plan := strings.Join(lines, "\n")
	for _, index := range []string{"gate_ledger_subject_totals", "gate_ledger_wide_totals"} {
		ranged := false
		for _, scan := range []string{"Index Only Scan Backward using ", "Index Scan Backward using "} {
			ranged = ranged || strings.Contains(plan, scan+index)
		}
		if !ranged {
			t.Errorf("plan:\n%s\nwant a backward range of %s", plan, index)
		}
	}
	if !strings.Contains(plan, "AND (at_us < ") || strings.Contains(plan, "Seq Scan on gate_ledger ") || strings.Contains(plan, "Sort") {
		t.Errorf("plan:\n%s\nwant the time in the index condition, no sequential scan of the ledger and no sort", plan)
	}
}

// Entries stored before running totals are numbered and summed by the
// migration that adds them.
func TestGateLedgerBackfill(t *testing.T) {
	storetest.TestGateLedgerBackfill(t, func(t *testing.T, old []gate.LedgerEntry) gate.Store {
		url := pgtest.URL(t)
		ctx := context.Background()
		if err := postgres.MigrateTo(ctx, url, 8); err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, e := range old {
			if _, err := conn.Exec(ctx, `INSERT INTO gate_ledger (tenant, action_type, subject, amount, at_us, session_id, action_id)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.TenantID, e.ActionType, e.Subject, e.Amount, e.At.UnixMicro(), e.SessionID, e.ActionID); err != nil {
				t.Fatal(err)
			}
		}
		return open(t, url).GateStore()
	})
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
	if tot, err := s.Aggregate(ctx, []gate.LedgerQuery{{TenantID: "acme", ActionType: "refund", Subject: "\x00"},
		{TenantID: "acme", ActionType: "refund"}, {TenantID: "acme\xff", ActionType: "refund"}}); err != nil || len(tot) != 3 {
		t.Errorf("Aggregate with NUL = %+v, %v; want three zero totals", tot, err)
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
