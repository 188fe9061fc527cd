package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
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

// A ledger total is a range of a covering index, whichever form it
// takes: its cost follows the entries it counts, not the ledger.
func TestGateAggregatePlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, tt := range []struct {
		name  string
		q     gate.LedgerQuery
		index string
	}{
		{"one subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: time.Now()}, "gate_ledger_subject"},
		{"any subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Since: time.Now()}, "gate_ledger_type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, args := sqlite.AggregateSQL(tt.q)
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
			want := "SEARCH gate_ledger USING COVERING INDEX " + tt.index
			if len(plan) != 1 || !strings.HasPrefix(plan[0], want) {
				t.Errorf("plan %q, want one step %q", plan, want)
			}
		})
	}
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
