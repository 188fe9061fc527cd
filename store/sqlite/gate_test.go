package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestGateStoreContract(t *testing.T) {
	storetest.TestGateStore(t, func(t *testing.T) gate.Store { return tempDB(t).GateStore() })
}

func BenchmarkGateStore(b *testing.B) {
	storetest.BenchmarkGateStore(b, tempDB(b).GateStore())
}

// BenchmarkGateLedger times ledger totals against the recount stores
// ran before running totals, on the same file with 0008's covering
// indexes put back for it.
func BenchmarkGateLedger(b *testing.B) {
	path := filepath.Join(b.TempDir(), "novaos.db")
	s := open(b, path).GateStore()
	raw := rawOpen(b, path)
	defer raw.Close()
	for _, q := range []string{
		`CREATE INDEX gate_ledger_subject ON gate_ledger (tenant, action_type, subject, at_us, amount)`,
		`CREATE INDEX gate_ledger_type ON gate_ledger (tenant, action_type, at_us, amount)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	const recount = `SELECT count(*), total(amount) FROM gate_ledger WHERE tenant = ? AND action_type = ? AND at_us >= ?`
	subject, err := raw.Prepare(recount + ` AND subject = ?`)
	if err != nil {
		b.Fatal(err)
	}
	wide, err := raw.Prepare(recount)
	if err != nil {
		b.Fatal(err)
	}
	storetest.BenchmarkGateLedger(b, s, &storetest.GateLedgerOptions{
		Recount: func(ctx context.Context, q gate.LedgerQuery) (gate.LedgerTotal, error) {
			var t gate.LedgerTotal
			var err error
			if q.Subject != "" {
				err = subject.QueryRowContext(ctx, q.TenantID, q.ActionType, q.Since.UnixMicro(), q.Subject).Scan(&t.Count, &t.Sum)
			} else {
				err = wide.QueryRowContext(ctx, q.TenantID, q.ActionType, q.Since.UnixMicro()).Scan(&t.Count, &t.Sum)
			}
			return t, err
		},
	})
}

// A ledger total reads two entries whatever the window: its series'
// head by key and the last entry before the window from the end of a
// covering index's range, with no sort.
func TestGateAggregatePlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	q, args := sqlite.AggregateSQL([]gate.LedgerQuery{
		{TenantID: "acme", ActionType: "refund", Since: time.Now()},
		{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: time.Now()},
	})
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
	all := strings.Join(plan, "\n")
	for _, want := range []string{
		"SEARCH h USING PRIMARY KEY (tenant=? AND action_type=? AND subject=?)",
		"SEARCH gate_ledger USING COVERING INDEX gate_ledger_subject_totals (tenant=? AND action_type=? AND subject=? AND at_us<?)",
		"SEARCH h USING PRIMARY KEY (tenant=? AND action_type=?)",
		"SEARCH gate_ledger USING COVERING INDEX gate_ledger_wide_totals (tenant=? AND action_type=? AND at_us<?)",
	} {
		if !slices.ContainsFunc(plan, func(step string) bool { return strings.HasPrefix(step, want) }) {
			t.Errorf("plan lacks %q:\n%s", want, all)
		}
	}
	for _, bad := range []string{"SCAN gate_ledger", "TEMP B-TREE"} {
		if strings.Contains(all, bad) {
			t.Errorf("plan has %q:\n%s", bad, all)
		}
	}
}

// Entries stored before running totals are numbered and summed by the
// migration that adds them.
func TestGateLedgerBackfill(t *testing.T) {
	storetest.TestGateLedgerBackfill(t, func(t *testing.T, old []gate.LedgerEntry) gate.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		ctx := context.Background()
		if err := sqlite.MigrateTo(ctx, path, 8); err != nil {
			t.Fatal(err)
		}
		raw := rawOpen(t, path)
		defer raw.Close()
		for _, e := range old {
			if _, err := raw.Exec(`INSERT INTO gate_ledger (tenant, action_type, subject, amount, at_us, session_id, action_id)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, e.TenantID, e.ActionType, e.Subject, e.Amount, e.At.UnixMicro(), e.SessionID, e.ActionID); err != nil {
				t.Fatal(err)
			}
		}
		return open(t, path).GateStore()
	})
}

// The audit log is append-only in the schema itself, and its entries and
// head survive reopening the file.
func TestGateAuditAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.GateStore().AppendAudit(ctx, gate.AuditEntry{Kind: "restart", Body: json.RawMessage(`{"a" : 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, q := range []string{`UPDATE gate_audit SET kind = 'edited'`, `DELETE FROM gate_audit`} {
		if _, err := raw.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
	s := open(t, path).GateStore()
	if seq, hash, err := s.AuditHead(ctx); err != nil || seq != 1 || hash != e.Hash {
		t.Errorf("AuditHead after reopening = %d %s %v, want 1 %s", seq, hash, err, e.Hash)
	}
	got, err := s.Audit(ctx, 0, 0)
	if err != nil || len(got) != 1 || string(got[0].Body) != `{"a" : 1}` || got[0].Hash != e.Hash {
		t.Errorf("Audit after reopening = %+v, %v", got, err)
	}
}
