package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Vector search through pgvector, used when the server has the `vector`
// extension and this database may create it.
//
// A memory's vector is kept twice: as bytes in memories.vec (what every
// server can hold, and what the in-process scan reads) and, with pgvector,
// as memories.embedding of type vector, written by the same statement. The
// embedding column is added by setupVector, not by a numbered migration,
// because the type exists only where the extension does. An HNSW index
// needs a fixed dimension, so each dimension gets its own partial
// expression index, memories_embedding_<dims>, created the first time a
// vector of that length is stored.

// hnswMaxDims is the largest vector an HNSW index on the vector type takes.
const hnswMaxDims = 2000

// vectorIndex is what setupVector found; the zero value means pgvector is
// not used and vectors are scored in the process.
type vectorIndex struct {
	on        bool
	hnsw      bool // pgvector >= 0.5: HNSW indexes exist
	iterative bool // pgvector >= 0.8: hnsw.iterative_scan keeps filtered scans complete
	version   string

	mu      sync.Mutex
	indexed map[int]bool // dimensions whose index this handle has seen to
}

// setupVector enables pgvector when it can and brings memories.embedding up
// to date. A server without the extension, or a role that may not create
// it, leaves the store scoring vectors in the process, which is logged once
// and is not an error.
func (db *DB) setupVector(ctx context.Context) error {
	var available bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
		return fmt.Errorf("postgres: pgvector: %w", err)
	}
	if !available {
		db.log.InfoContext(ctx, "postgres: the vector extension is not installed on the server; vector search scores every vector of a partition in the process")
		return nil
	}
	var version string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := withoutStatementTimeout(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding vector`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42501" || strings.HasPrefix(pgErr.Code, "58") || pgErr.Code == "0A000") {
		// 42501 insufficient privilege, 58P01 missing files of a listed
		// extension, 0A000 not supported (e.g. a trusted-extension rule).
		db.log.InfoContext(ctx, "postgres: the vector extension cannot be created by this role; vector search scores every vector of a partition in the process",
			"code", pgErr.Code)
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: pgvector: %w", err)
	}
	vi := &db.vector
	vi.on, vi.version, vi.indexed = true, version, map[int]bool{}
	vi.hnsw = !versionBelow(version, 0, 5)
	vi.iterative = !versionBelow(version, 0, 8)
	if err := db.backfillVectors(ctx); err != nil {
		return err
	}
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT vector_dims(embedding) FROM memories WHERE embedding IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("postgres: pgvector: %w", err)
	}
	dims, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("postgres: pgvector: %w", err)
	}
	for _, d := range dims {
		db.ensureVectorIndex(ctx, d)
	}
	db.log.InfoContext(ctx, "postgres: vector search uses pgvector", "version", version, "hnsw", vi.hnsw, "iterative_scan", vi.iterative)
	return nil
}

// versionBelow reports whether extversion v is older than major.minor.
func versionBelow(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	ma, err1 := strconv.Atoi(parts[0])
	mi := 0
	var err2 error
	if len(parts) > 1 {
		mi, err2 = strconv.Atoi(parts[1])
	}
	if err1 != nil || err2 != nil {
		return true
	}
	return ma < major || ma == major && mi < minor
}

// backfillVectors gives rows written before pgvector was enabled their
// embedding, a batch at a time so no transaction grows with the table.
// Replicas doing it at once write the same values. A vector that does not
// decode stays without an embedding, as the in-process scan leaves it out.
func (db *DB) backfillVectors(ctx context.Context) error {
	const batch = 500
	var after int64
	total := 0
	for {
		rows, err := db.pool.Query(ctx, `SELECT seq, vec FROM memories WHERE seq > $1 AND embedding IS NULL
			AND vec IS NOT NULL AND octet_length(vec) > 0 ORDER BY seq LIMIT $2`, after, batch)
		if err != nil {
			return fmt.Errorf("postgres: pgvector backfill: %w", err)
		}
		var seqs []int64
		var texts []string
		n := 0
		for rows.Next() {
			var seq int64
			var b []byte
			if err := rows.Scan(&seq, &b); err != nil {
				rows.Close()
				return fmt.Errorf("postgres: pgvector backfill: %w", err)
			}
			n++
			after = seq
			if v, err := memory.DecodeVector(b); err == nil {
				if t, ok := vectorText(v); ok {
					seqs, texts = append(seqs, seq), append(texts, t)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres: pgvector backfill: %w", err)
		}
		if len(seqs) > 0 {
			if _, err := db.pool.Exec(ctx, `UPDATE memories m SET embedding = u.e::vector FROM unnest($1::bigint[], $2::text[]) u(seq, e)
				WHERE m.seq = u.seq AND m.embedding IS NULL`, seqs, texts); err != nil {
				return fmt.Errorf("postgres: pgvector backfill: %w", err)
			}
			total += len(seqs)
		}
		if n < batch {
			break
		}
	}
	if total > 0 {
		db.log.InfoContext(ctx, "postgres: pgvector: stored vectors backfilled", "count", total)
	}
	return nil
}

// vectorText is v in pgvector's text form, or false when pgvector cannot
// hold it (empty, or not finite): such a vector has no embedding.
func vectorText(v []float32) (string, bool) {
	if len(v) == 0 || len(v) > memory.MaxDims {
		return "", false
	}
	b := make([]byte, 0, len(v)*10+2)
	b = append(b, '[')
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return "", false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']')), true
}

// embeddingArg is the value of memories.embedding for e: nil (NULL) when
// pgvector cannot hold it.
func embeddingArg(e *memory.Embedding) any {
	if e == nil {
		return nil
	}
	if t, ok := vectorText(e.Vector); ok {
		return t
	}
	return nil
}

// vectorIndexName is the HNSW index of vectors of dims dimensions.
func vectorIndexName(dims int) string { return "memories_embedding_" + strconv.Itoa(dims) }

// ensureVectorIndex creates the HNSW index of dims-dimensional vectors
// unless this handle already saw to it. It runs after the write that
// brought the dimension, outside its transaction, so a write never waits
// for an index build; a failure is logged and leaves that dimension to
// exact scans, which are correct, only slower.
func (db *DB) ensureVectorIndex(ctx context.Context, dims int) {
	vi := &db.vector
	if !vi.hnsw || dims <= 0 || dims > hnswMaxDims {
		return
	}
	vi.mu.Lock()
	defer vi.mu.Unlock()
	if vi.indexed[dims] {
		return
	}
	// Replicas seeing a new dimension at once take turns: CREATE INDEX IF
	// NOT EXISTS is not safe against a concurrent creation of the same name.
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := withoutStatementTimeout(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		d := strconv.Itoa(dims)
		_, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+vectorIndexName(dims)+` ON memories
			USING hnsw ((embedding::vector(`+d+`)) vector_cosine_ops) WHERE vector_dims(embedding) = `+d)
		return err
	})
	if err != nil {
		db.log.WarnContext(ctx, "postgres: pgvector: cannot create the HNSW index; vectors of this dimension are scanned exactly",
			"dims", dims, "err", err)
		return
	}
	vi.indexed[dims] = true
}

// afterVectorWrite sees to the index of a vector just stored.
func (db *DB) afterVectorWrite(ctx context.Context, e *memory.Embedding) {
	if db.vector.on && e != nil && embeddingArg(e) != nil {
		db.ensureVectorIndex(ctx, len(e.Vector))
	}
}

// usePGVector reports whether a search for q goes through pgvector. A
// query pgvector cannot hold, or of zero length (cosine undefined; the
// in-process scan scores it 0 against everything), is scanned in the
// process.
func (db *DB) usePGVector(q []float32) bool {
	if !db.vector.on {
		return false
	}
	if _, ok := vectorText(q); !ok {
		return false
	}
	var n float64
	for _, x := range q {
		n += float64(x) * float64(x)
	}
	return n > 0
}

// searchVectorSQL is the pgvector search: memories of f with a vector of
// q's model and length, nearest first by cosine distance. The dimension is
// written into the statement, not bound, so the planner can match the
// partial index of that dimension; whether it takes the index or the
// partition's btree and an exact sort is its cost-based choice.
func searchVectorSQL(tenant string, f memory.Filter, model string, dims int, qtext string, limit int) (string, []any) {
	where, args := filterSQL(tenant, f, 3)
	d := strconv.Itoa(dims)
	dist := `(m.embedding::vector(` + d + `) <=> $1::text::vector(` + d + `))`
	q := `SELECT ` + sqlstore.MemoryCols + `, ` + dist + ` FROM memories m WHERE ` + where +
		` AND m.model = $2 AND m.embedding IS NOT NULL AND vector_dims(m.embedding) = ` + d +
		` ORDER BY ` + dist + ` LIMIT ` + strconv.Itoa(limit)
	return q, append([]any{qtext, model}, args...)
}

// searchPGVector is SearchVector through pgvector. Scores are cosine
// similarity, 1 - cosine distance, as the in-process scan computes them.
func (s *MemoryStore) searchPGVector(ctx context.Context, tenant string, f memory.Filter, q memory.Embedding, limit int) ([]memory.Hit, error) {
	qtext, _ := vectorText(q.Vector)
	sql, args := searchVectorSQL(tenant, f, q.Model, len(q.Vector), qtext, limit)
	var out []memory.Hit
	err := pgx.BeginTxFunc(ctx, s.db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = nil
		// An HNSW scan yields at most ef_search candidates, counted before
		// the filter; the iterative scan (pgvector 0.8) goes on until the
		// limit is met, still in distance order. SET LOCAL ends with the
		// transaction.
		if s.db.vector.hnsw {
			ef := min(max(100, 2*limit), 1000)
			if _, err := tx.Exec(ctx, `SET LOCAL hnsw.ef_search = `+strconv.Itoa(ef)); err != nil {
				return err
			}
		}
		if s.db.vector.iterative {
			if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = strict_order`); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dist float64
			m, _, err := sqlstore.ScanMemory(rows, &dist)
			if err != nil {
				return err
			}
			score := 1 - dist
			if math.IsNaN(score) {
				score = 0 // a stored zero vector, which the in-process scan scores 0
			}
			out = append(out, memory.Hit{Memory: *m, Score: score})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: vector search: %w", err)
	}
	s.db.vectorSearches.Add(1)
	return out, nil
}
