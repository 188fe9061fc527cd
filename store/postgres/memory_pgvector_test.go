package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
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
	if len(dbs) > 0 && n == 0 { // none opened: skipped, no pgvector server
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
	if _, _, err := s.Put(ctx, "acme", &memory.Memory{ID: "m1", Partition: p, Content: "x", CreatedAt: now, Embedding: e}, memory.Key{}); err != nil {
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

// A role that may not create the extension leaves the store scoring in
// the process: Open succeeds and says so at info.
func TestPGVectorNotPermitted(t *testing.T) {
	url := pgvectorURL(t)
	ctx := context.Background()
	// PGlite serves every connection from one session, so the role set
	// here is the role of the store's connections too.
	setRole := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	setRole(`DROP ROLE IF EXISTS novaos_limited; CREATE ROLE novaos_limited NOSUPERUSER;
		GRANT ALL ON SCHEMA public TO novaos_limited; SET ROLE novaos_limited`)
	t.Cleanup(func() {
		setRole(`RESET ROLE; DROP SCHEMA public CASCADE; CREATE SCHEMA public; DROP ROLE novaos_limited`)
	})
	var logs strings.Builder
	var mu sync.Mutex
	db, err := postgres.Open(ctx, url, &postgres.Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatalf("Open as a role that may not create the extension: %v", err)
	}
	defer db.Close()
	if on, _ := postgres.UsesPGVector(db); on {
		t.Fatal("pgvector in use without the extension")
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "level=INFO") || !strings.Contains(out, "cannot be created") || strings.Contains(out, "level=ERROR") {
		t.Errorf("log:\n%s", out)
	}
	d := randomVectors(10, 1, 8, 5)
	s := db.MemoryStore()
	for i := range d.vecs {
		if _, _, err := s.Put(ctx, "acme", d.memory(i), memory.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := s.SearchVector(ctx, "acme", memory.Filter{Partition: d.p, Now: vecT0}, memory.Embedding{Model: d.model, Vector: d.queries[0]}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hitIDs(hs), exactTop(d, d.queries[0], "", 3); !slices.Equal(got, want) || postgres.PGVectorSearches(db) != 0 {
		t.Errorf("in-process search: %v, want %v (through pgvector: %d)", got, want, postgres.PGVectorSearches(db))
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// vecData is a partition of random vectors, every other one episodic (so
// a filtered search has half the partition to choose from), and queries.
type vecData struct {
	p       memory.Partition
	prefix  string // of the memories' ids
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
	d := vecData{p: memory.Partition{Scope: memory.ScopeAgent, Owner: "agent-v"}, prefix: "v", model: fmt.Sprintf("rand-%d", dims)}
	for range n {
		d.vecs = append(d.vecs, gen())
	}
	for range queries {
		d.queries = append(d.queries, gen())
	}
	return d
}

var vecT0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func (d vecData) memory(i int) *memory.Memory {
	typ := memory.TypeSemantic
	if i%2 == 1 {
		typ = memory.TypeEpisodic
	}
	return &memory.Memory{ID: d.prefix + fmt.Sprint(i), Partition: d.p, Content: "vector " + fmt.Sprint(i), Type: typ,
		CreatedAt: vecT0, Embedding: &memory.Embedding{Model: d.model, Vector: d.vecs[i]}}
}

// exactTop is the ids of the k vectors of type typ ("": any) nearest q by
// exact cosine.
func exactTop(d vecData, q []float32, typ memory.Type, k int) []string {
	top := memory.NewTopK[int](k)
	for i := range d.vecs {
		if typ == "" || d.memory(i).Type == typ {
			top.Offer(i, memory.Cosine(q, d.vecs[i]))
		}
	}
	ids, _ := top.Sorted()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = d.prefix + fmt.Sprint(id)
	}
	return out
}

// The pgvector path uses the HNSW index of the vectors' dimension on a
// partition of thousands, filtered or not, and finds nearly what an exact
// scan finds.
func TestPGVectorRecall(t *testing.T) {
	const n, queries, dims, k = 2000, 40, 64, 10
	url := pgvectorURL(t)
	db := openPGVector(t, url)
	s := db.MemoryStore()
	ctx := context.Background()
	d := randomVectors(n, queries, dims, 7)
	start := time.Now()
	for i := range d.vecs {
		if _, _, err := s.Put(ctx, "acme", d.memory(i), memory.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("stored %d vectors in %v", n, time.Since(start).Round(time.Millisecond))
	small := randomVectors(20, 5, dims, 8)
	small.p.Owner, small.prefix = "agent-small", "s"
	for i := range small.vecs {
		if _, _, err := s.Put(ctx, "acme", small.memory(i), memory.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	// PGlite has no autovacuum to gather the statistics the planner
	// weighs the index against the partition's btree with.
	analyze(t, url)

	// A small partition is sorted exactly, found through the partition's
	// btree: the HNSW scan would wade through the other partitions' vectors.
	t.Run("small partition", func(t *testing.T) {
		f := memory.Filter{Partition: small.p, Now: vecT0.Add(time.Hour)}
		plan := explain(t, url, f, memory.Embedding{Model: small.model, Vector: small.queries[0]}, k)
		if strings.Contains(plan, postgres.VectorIndexName(dims)) || !strings.Contains(plan, "memories_partition") {
			t.Errorf("the plan does not sort the partition exactly:\n%s", plan)
		}
		for _, q := range small.queries {
			hs, err := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: small.model, Vector: q}, k)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := hitIDs(hs), exactTop(small, q, "", k); !slices.Equal(got, want) {
				t.Errorf("small partition: %v, want %v", got, want)
			}
		}
	})
	for _, typ := range []memory.Type{"", memory.TypeEpisodic} {
		t.Run("type="+string(typ), func(t *testing.T) {
			f := memory.Filter{Partition: d.p, Type: typ, Now: vecT0.Add(time.Hour)}
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
				exact := exactTop(d, q, typ, k)
				if len(hs) != len(exact) {
					t.Fatalf("%d hits, want %d", len(hs), len(exact))
				}
				want += len(exact)
				for i, h := range hs {
					if typ != "" && h.Memory.Type != typ {
						t.Fatalf("hit %s is %s, outside the filter", h.Memory.ID, h.Memory.Type)
					}
					if i > 0 && h.Score > hs[i-1].Score {
						t.Fatalf("hits out of order: %v then %v", hs[i-1].Score, h.Score)
					}
					if slices.Contains(exact, h.Memory.ID) {
						found++
					}
				}
			}
			if got := postgres.PGVectorSearches(db) - before; got != queries {
				t.Errorf("%d of %d searches went through pgvector", got, queries)
			}
			recall := float64(found) / float64(want)
			t.Logf("recall@%d of pgvector (HNSW) against exact cosine: %.3f (%d vectors, %d dimensions, %d queries, filter type %q)",
				k, recall, n, dims, queries, typ)
			if recall < 0.95 {
				t.Errorf("recall@%d = %.3f, want at least 0.95", k, recall)
			}
		})
	}
}

// Vectors stored before pgvector was used get their pgvector copy when a
// handle with pgvector opens the database.
func TestPGVectorBackfill(t *testing.T) {
	url := pgvectorURL(t)
	ctx := context.Background()
	d := randomVectors(30, 1, 8, 3)
	old, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	postgres.SetPGVector(old, false) // writes as a server without pgvector would
	for i := range d.vecs {
		if _, _, err := old.MemoryStore().Put(ctx, "acme", d.memory(i), memory.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	db := openPGVector(t, url)
	f := memory.Filter{Partition: d.p, Now: vecT0}
	hs, err := db.MemoryStore().SearchVector(ctx, "acme", f, memory.Embedding{Model: d.model, Vector: d.queries[0]}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hitIDs(hs), exactTop(d, d.queries[0], "", 5); !slices.Equal(got, want) {
		t.Errorf("after the backfill: %v, want %v", got, want)
	}
	if postgres.PGVectorSearches(db) != 1 {
		t.Error("the search did not go through pgvector")
	}
}

func hitIDs(hs []memory.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Memory.ID)
	}
	return out
}

// BenchmarkSearchVectorPGVector compares, on one PGlite server, a search
// through pgvector's HNSW index with the in-process memory index's scan of
// the same partition (256 dimensions, top 10).
func BenchmarkSearchVectorPGVector(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			url := pgvectorURL(b)
			db := openPGVector(b, url)
			d := randomVectors(n, 64, 256, 11)
			ctx := context.Background()
			start := time.Now()
			const batch = 500
			for i := 0; i < n; i += batch {
				var ms []*memory.Memory
				for j := i; j < min(i+batch, n); j++ {
					ms = append(ms, d.memory(j))
				}
				if err := postgres.PutMany(ctx, db, "acme", ms); err != nil {
					b.Fatal(err)
				}
			}
			analyze(b, url)
			b.Logf("stored %d vectors in %v", n, time.Since(start).Round(time.Second))
			s := db.MemoryStore()
			f := memory.Filter{Partition: d.p, Now: vecT0}
			for _, path := range []struct {
				name string
				on   bool
			}{{"pgvector", true}, {"scan", false}} {
				b.Run(path.name, func(b *testing.B) {
					postgres.SetPGVector(db, path.on)
					defer postgres.SetPGVector(db, true)
					i := 0
					for b.Loop() {
						hs, err := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: d.model, Vector: d.queries[i%len(d.queries)]}, 10)
						if err != nil || len(hs) != 10 {
							b.Fatalf("%d hits, %v", len(hs), err)
						}
						i++
					}
				})
			}
		})
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
