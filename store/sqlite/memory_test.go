package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestMemoryStore(t, func(t *testing.T) memory.Store { return tempDB(t).MemoryStore() })
}

func TestMemoryReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestMemoryReopen(t, func(t *testing.T) (memory.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db.MemoryStore(), func() { db.Close() }
	})
}

// The forget audit trail is append-only in the schema itself: a trigger
// refuses every UPDATE and DELETE, whoever runs them.
func TestMemoryAuditIsAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	db := open(t, path)
	s := db.MemoryStore()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	p := memory.Partition{Scope: memory.ScopeRun, Owner: "r1"}
	if _, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: p, Content: "x", Version: 1, CreatedAt: now}, ""); err != nil {
		t.Fatal(err)
	}
	if r, _, err := s.Forget(ctx, "acme", p, "m1", memory.Audit{EventID: "del-1", Actor: "agent-a", Reason: "superseded", At: now}); err != nil || r.DeletedCount != 1 {
		t.Fatalf("Forget = %+v, %v", r, err)
	}
	raw := rawOpen(t, path)
	var reason, actor string
	if err := raw.QueryRow(`SELECT reason, actor FROM memory_audit WHERE tenant = 'acme' AND memory_id = 'm1'`).Scan(&reason, &actor); err != nil {
		t.Fatalf("audit row: %v", err)
	}
	if reason != "superseded" || actor != "agent-a" {
		t.Errorf("audit row reason %q actor %q", reason, actor)
	}
	for _, q := range []string{`UPDATE memory_audit SET reason = 'edited'`, `DELETE FROM memory_audit`} {
		if _, err := raw.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
}

func BenchmarkMemoryWrite(b *testing.B) {
	db := tempDB(b)
	storetest.BenchmarkMemoryWrite(b, db.MemoryStore(), db.TaskStore())
}

func BenchmarkMemoryQuery(b *testing.B) {
	storetest.BenchmarkMemoryQuery(b, tempDB(b).MemoryStore(), 10_000)
}
