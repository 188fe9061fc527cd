package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

// Environment variables of the pgvector tests. scripts/test starts PGlite
// (PostgreSQL in WebAssembly) with pgvector, from testdata/pglite, and sets
// both.
const (
	envPGVectorURL     = "NOVAOS_TEST_PGVECTOR_URL"
	envRequirePGVector = "NOVAOS_REQUIRE_PGVECTOR"
)

// pgvectorMu serializes the tests on the pgvector server: PGlite has one
// database, whatever the connection string names, so tests cannot each
// have their own.
var pgvectorMu sync.Mutex

// pgvectorURL returns the address of the pgvector server with its public
// schema emptied, held by t until it ends. Without a server configured it
// skips t, or fails it when NOVAOS_REQUIRE_PGVECTOR is 1 (as pgtest.URL
// does for PostgreSQL).
func pgvectorURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(envPGVectorURL)
	if url == "" {
		if os.Getenv(envRequirePGVector) == "1" {
			t.Fatalf("%s=1 but %s is not set", envRequirePGVector, envPGVectorURL)
		}
		t.Skipf("%s is not set; run ./scripts/test, which starts PGlite with pgvector", envPGVectorURL)
	}
	pgvectorMu.Lock()
	t.Cleanup(pgvectorMu.Unlock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgvector server (%s, started by scripts/test): %v", envPGVectorURL, err)
	}
	defer conn.Close(context.Background())
	// Dropping the schema drops the extension's objects with it, so each
	// test also sees Open create the extension.
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatalf("pgvector server: empty the schema: %v", err)
	}
	// PGlite runs one backend for every connection, so pgx's named
	// prepared statements of two connections collide; unnamed ones with
	// cached descriptions do not. The pool stays within the server's
	// connection limit (scripts/test: -m 8) with room for a test's own.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "default_query_exec_mode=cache_describe&pool_max_conns=4"
}

func openPGVector(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db := open(t, url)
	if on, _ := postgres.UsesPGVector(db); !on {
		t.Fatalf("the server at %s has no usable vector extension", envPGVectorURL)
	}
	return db
}

func TestMemoryStoreContractPGVector(t *testing.T) {
	var dbs []*postgres.DB
	storetest.TestMemoryStore(t, func(t *testing.T) memory.Store {
		db := openPGVector(t, pgvectorURL(t))
		dbs = append(dbs, db)
		return db.MemoryStore()
	})
	var n int64
	for _, db := range dbs {
		n += postgres.PGVectorSearches(db)
	}
	if n == 0 {
		t.Error("no vector search of the contract went through pgvector")
	}
}

func TestMemoryReopenPGVector(t *testing.T) {
	url := pgvectorURL(t)
	storetest.TestMemoryReopen(t, func(t *testing.T) (memory.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db.MemoryStore(), func() { db.Close() }
	})
}

// The plain PostgreSQL of scripts/test has no pgvector: the store scores
// in the process there, and through pgvector on a server with it.
func TestMemoryWithoutPGVector(t *testing.T) {
	db := open(t, pgtest.URL(t))
	on, _ := postgres.UsesPGVector(db)
	s := db.MemoryStore()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	p := memory.Partition{Scope: memory.ScopeAgent, Owner: "a"}
	e := &memory.Embedding{Model: "m", Vector: []float32{1, 0}}
	if _, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: p, Content: "x", CreatedAt: now, Embedding: e}, ""); err != nil {
		t.Fatal(err)
	}
	hs, err := s.SearchVector(ctx, "acme", memory.Filter{Partition: p, Now: now}, *e, 5)
	if err != nil || len(hs) != 1 {
		t.Fatalf("SearchVector = %v, %v", hs, err)
	}
	if got := postgres.PGVectorSearches(db); on != (got == 1) {
		t.Errorf("pgvector on: %v, searches through it: %d", on, got)
	}
}

// vecData is a partition of random unit vectors and queries.
type vecData struct {
	p       memory.Partition
	model   string
	vecs    [][]float32
	queries [][]float32
}

func randomVectors(n, queries, dims int, seed uint64) vecData {
	r := rand.New(rand.NewPCG(seed, 1))
	gen := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	d := vecData{p: memory.Partition{Scope: memory.ScopeAgent, Owner: "agent-v"}, model: fmt.Sprintf("rand-%d", dims)}
	for range n {
		d.vecs = append(d.vecs, gen())
	}
	for range queries {
		d.queries = append(d.queries, gen())
	}
	return d
}

func loadVectors(tb testing.TB, s memory.Store, d vecData, from int) {
	tb.Helper()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for i := from; i < len(d.vecs); i++ {
		m := &memory.Memory{ID: fmt.Sprintf("v%d", i), Partition: d.p, Content: "vector " + fmt.Sprint(i),
			CreatedAt: now, Embedding: &memory.Embedding{Model: d.model, Vector: d.vecs[i]}}
		if _, _, err := s.Put(ctx, "acme", m, ""); err != nil {
			tb.Fatal(err)
		}
	}
}

// exactTop is the ids of the k vectors nearest q by exact cosine.
func exactTop(d vecData, q []float32, k int) []string {
	top := memory.NewTopK[int](k)
	for i, v := range d.vecs {
		top.Offer(i, memory.Cosine(q, v))
	}
	ids, _ := top.Sorted()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("v%d", id)
	}
	return out
}

// The pgvector path uses the HNSW index of the vectors' dimension on a
// partition of thousands, and finds nearly what an exact scan finds.
func TestPGVectorRecall(t *testing.T) {
	const n, queries, dims, k = 2000, 50, 64, 10
	url := pgvectorURL(t)
	db := openPGVector(t, url)
	s := db.MemoryStore()
	ctx := context.Background()
	d := randomVectors(n, queries, dims, 7)
	start := time.Now()
	loadVectors(t, s, d, 0)
	t.Logf("stored %d vectors in %v", n, time.Since(start).Round(time.Millisecond))

	// PGlite has no autovacuum to gather the statistics the planner
	// weighs the index against the partition's btree with.
	analyze(t, url)
	f := memory.Filter{Partition: d.p, Now: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)}
	plan := explain(t, url, f, memory.Embedding{Model: d.model, Vector: d.queries[0]}, k)
	if !strings.Contains(plan, postgres.VectorIndexName(dims)) {
		t.Errorf("the plan does not use %s:\n%s", postgres.VectorIndexName(dims), plan)
	}

	before := postgres.PGVectorSearches(db)
	found, want := 0, 0
	for _, q := range d.queries {
		hs, err := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: d.model, Vector: q}, k)
		if err != nil {
			t.Fatal(err)
		}
		exact := exactTop(d, q, k)
		want += len(exact)
		for _, h := range hs {
			for _, id := range exact {
				if h.Memory.ID == id {
					found++
				}
			}
		}
		for i := 1; i < len(hs); i++ {
			if hs[i].Score > hs[i-1].Score {
				t.Fatalf("hits out of order: %v then %v", hs[i-1].Score, hs[i].Score)
			}
		}
	}
	if got := postgres.PGVectorSearches(db) - before; got != queries {
		t.Errorf("%d of %d searches went through pgvector", got, queries)
	}
	recall := float64(found) / float64(want)
	t.Logf("recall@%d of pgvector (HNSW) against exact cosine: %.3f (%d vectors, %d dimensions, %d queries)", k, recall, n, dims, queries)
	if recall < 0.9 {
		t.Errorf("recall@%d = %.3f, want at least 0.9", k, recall)
	}
}

// explain is the plan of the pgvector search, with the settings the store
// sets for it.
func explain(t testing.TB, url string, f memory.Filter, q memory.Embedding, k int) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sql, args := postgres.SearchVectorSQL("acme", f, q, k)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = strict_order`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func analyze(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ANALYZE memories`); err != nil {
		t.Fatal(err)
	}
}
