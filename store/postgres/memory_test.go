package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestMemoryStore(t, func(t *testing.T) memory.Store { return open(t, pgtest.URL(t)).MemoryStore() })
}

func TestMemoryReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestMemoryReopen(t, func(t *testing.T) (memory.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db.MemoryStore(), func() { db.Close() }
	})
}

// The forget audit trail is append-only in the schema itself.
func TestMemoryAuditIsAppendOnly(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url).MemoryStore()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	p := memory.Partition{Scope: memory.ScopeRun, Owner: "r1"}
	if _, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: p, Content: "x", Version: 1, CreatedAt: now}, memory.Key{}); err != nil {
		t.Fatal(err)
	}
	if r, _, err := s.Forget(ctx, "acme", p, "m1", memory.Audit{EventID: "del-1", Actor: "agent-a", Reason: "superseded", At: now}); err != nil || r.DeletedCount != 1 {
		t.Fatalf("Forget = %+v, %v", r, err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var reason string
	if err := conn.QueryRow(ctx, `SELECT reason FROM memory_audit WHERE tenant = 'acme' AND memory_id = 'm1'`).Scan(&reason); err != nil || reason != "superseded" {
		t.Fatalf("audit row: %q, %v", reason, err)
	}
	for _, q := range []string{`UPDATE memory_audit SET reason = 'edited'`, `DELETE FROM memory_audit`} {
		if _, err := conn.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
}

// Text PostgreSQL cannot hold names nothing: reads find nothing and
// writes are refused as invalid, never a driver error.
func TestMemoryBadText(t *testing.T) {
	s := open(t, pgtest.URL(t)).MemoryStore()
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Get(ctx, "acme\x00", "m1", now); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Get with NUL = %v", err)
	}
	_, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: memory.Partition{Scope: memory.ScopeRun}, Content: "a\xffb", CreatedAt: now}, memory.Key{})
	if err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("Put of invalid UTF-8 = %v", err)
	}
	if hs, err := s.SearchKeyword(ctx, "acme", memory.Filter{Partition: memory.Partition{Scope: memory.ScopeRun, Owner: "\x00"}}, []string{"x"}, 10); err != nil || len(hs) != 0 {
		t.Errorf("search with NUL = %v, %v", hs, err)
	}
}
