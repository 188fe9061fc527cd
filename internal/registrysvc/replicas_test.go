package registrysvc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// openReplica opens the store of one more replica on the test's database:
// each call is a replica of its own (its own connection pool or file
// handle), as separate processes would have.
type openReplica func(t *testing.T) registrysvc.Store

// forEachDatabase runs test once per kind of database replicas can share:
// process memory (replicas in one process), one SQLite file and one
// PostgreSQL database. PostgreSQL comes from pgtest: skipped without
// NOVAOS_TEST_POSTGRES_URL, failed when NOVAOS_REQUIRE_POSTGRES=1 and the
// server is missing or unreachable (scripts/test sets both).
func forEachDatabase(t *testing.T, test func(t *testing.T, open openReplica)) {
	t.Run("memory", func(t *testing.T) {
		store := registrysvc.NewMemoryStore()
		test(t, func(*testing.T) registrysvc.Store { return store })
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "novaos.db")
		test(t, func(t *testing.T) registrysvc.Store {
			db, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.RegistryStore()
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		test(t, func(t *testing.T) registrysvc.Store {
			db, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.RegistryStore()
		})
	})
}

// Replicas starting together on one database all record the hosted agents.
func TestPutConcurrently(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, open openReplica) {
		const n = 8
		svcs := make([]*registrysvc.Service, n)
		for i := range svcs {
			svcs[i] = registrysvc.New(open(t), nil)
		}
		errs := make(chan error, n)
		for i, svc := range svcs {
			go func() {
				_, err := svc.Put(t.Context(), &registry.Agent{Name: "echo", URL: fmt.Sprintf("http://127.0.0.1:%d/agents/echo", 8000+i)})
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		for i, svc := range svcs {
			p, err := svc.List(t.Context(), registry.ListQuery{})
			if err != nil || len(p.Agents) != 1 || p.Agents[0].Name != "echo" {
				t.Errorf("replica %d: List = %+v, %v; want one echo", i, p, err)
			}
		}
	})
}

// Two replicas on one database see each other's writes in Find at once,
// although each keeps a snapshot.
func TestFindSeesOtherReplicasWrites(t *testing.T) {
	forEachDatabase(t, testFindSeesOtherReplicasWrites)
}

func testFindSeesOtherReplicasWrites(t *testing.T, open openReplica) {
	ctx := t.Context()
	a, b := registrysvc.New(open(t), nil), registrysvc.New(open(t), nil)
	find := func(svc *registrysvc.Service) []string {
		t.Helper()
		res, err := svc.Find(ctx, registry.FindQuery{Capabilities: []string{"web scraping"}, Fuzzy: true})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, m := range res {
			out = append(out, m.Agent.Name+" "+m.Agent.Description)
		}
		return out
	}
	if got := find(b); len(got) != 0 {
		t.Fatalf("empty registry: %v", got)
	}
	rec, err := a.Register(ctx, &registry.Agent{Name: "s", URL: "https://s.example.com/", Capabilities: []string{"Web Scraping"}, Description: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(b); !cmp.Equal(got, []string{"s v1"}) {
		t.Fatalf("after a's Register, b finds %v", got)
	}
	// Results are copies: changing one does not change the snapshot.
	res, err := b.Find(ctx, registry.FindQuery{Capabilities: []string{"web scraping"}})
	if err != nil || len(res) != 1 {
		t.Fatalf("Find = %v, %v", res, err)
	}
	res[0].Agent.Description = "mutated"
	if got := find(b); !cmp.Equal(got, []string{"s v1"}) {
		t.Errorf("after changing a result, b finds %v", got)
	}
	if _, err := a.Update(ctx, rec.ID, &registry.Agent{URL: rec.URL, Capabilities: []string{"Web Scraping"}, Description: "v2"}); err != nil {
		t.Fatal(err)
	}
	if got := find(b); !cmp.Equal(got, []string{"s v2"}) {
		t.Fatalf("after a's Update, b finds %v", got)
	}
	if p, err := b.Search(ctx, "v2", registry.ListQuery{}); err != nil || len(p.Agents) != 1 {
		t.Errorf("after a's Update, b's search = %+v, %v", p, err)
	} else if p.Agents[0].Description = "mutated"; find(b)[0] != "s v2" {
		t.Error("a search result shares the snapshot's record")
	}
	if err := a.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if got := find(b); len(got) != 0 {
		t.Errorf("after a's Delete, b finds %v", got)
	}
}
