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
	if _, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: p, Content: "x", Version: 1, CreatedAt: now}, memory.Key{}); err != nil {
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

// The vector cache follows every write, including one made through
// another handle on the same file (another process, as far as this handle
// can tell).
func TestMemoryVectorCacheFollowsWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	s, other := open(t, path).MemoryStore(), open(t, path).MemoryStore()
	ctx := context.Background()
	emb := memory.NewHashEmbedder(0)
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	p := memory.Partition{Scope: memory.ScopeAgent, Owner: "a"}
	put := func(s *sqlite.MemoryStore, id, text string, expires time.Time) {
		t.Helper()
		m := &memory.Memory{ID: id, Partition: p, Content: text, Version: 1, CreatedAt: now, ExpiresAt: expires,
			Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(text)}}
		if _, _, err := s.Put(ctx, "acme", m, memory.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(text string, at time.Time) []string {
		t.Helper()
		hs, err := s.SearchVector(ctx, "acme", memory.Filter{Partition: p, Now: at}, memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(text)}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hs {
			if h.Score > 0.99 {
				ids = append(ids, h.Memory.ID)
			}
		}
		return ids
	}
	put(s, "m1", "blue whale", time.Time{})
	if got := search("blue whale", now); len(got) != 1 || got[0] != "m1" {
		t.Fatalf("first search = %v", got)
	}
	steps := []struct {
		name  string
		write func()
		query string
		want  string // the id found with the query's exact text, "" for none
	}{
		{"put through this handle", func() { put(s, "m2", "red panda", time.Time{}) }, "red panda", "m2"},
		{"put through another handle", func() { put(other, "m3", "green turtle", now.Add(time.Hour)) }, "green turtle", "m3"},
		{"update through another handle", func() {
			c := "grey seal"
			if _, err := other.Update(ctx, "acme", p, "m1", 1, memory.Change{Content: &c, Now: now,
				Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(c)}}); err != nil {
				t.Fatal(err)
			}
		}, "grey seal", "m1"},
		{"the old vector is gone", func() {}, "blue whale", ""},
		{"forget through another handle", func() {
			if _, _, err := other.Forget(ctx, "acme", p, "m2", memory.Audit{EventID: "e", Reason: "r", At: now}); err != nil {
				t.Fatal(err)
			}
		}, "red panda", ""},
		{"sweep through another handle", func() {
			if _, err := other.Sweep(ctx, now.Add(2*time.Hour), 100); err != nil {
				t.Fatal(err)
			}
		}, "green turtle", ""},
	}
	for _, st := range steps {
		st.write()
		got := search(st.query, now)
		if st.want == "" && len(got) != 0 || st.want != "" && (len(got) != 1 || got[0] != st.want) {
			t.Errorf("%s: search %q = %v, want %q", st.name, st.query, got, st.want)
		}
	}
	// Expiry applies to cached vectors without a sweep.
	put(s, "m4", "snow owl", now.Add(time.Minute))
	if got := search("snow owl", now); len(got) != 1 {
		t.Errorf("before expiry: %v", got)
	}
	if got := search("snow owl", now.Add(time.Minute)); len(got) != 0 {
		t.Errorf("at expiry: %v", got)
	}
}
