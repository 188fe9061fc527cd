package postgres

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"novaos.dev/novaos/gate"

	"novaos.dev/novaos/memory"
)

// Crash closes db as kill -9 would end its replica: the heartbeat stops,
// the lease is not given up, and the connections close.
func Crash(db *DB) {
	db.closeOnce.Do(func() {
		db.stopAnalyzer()
		db.feed.stop()
		db.lease.Stop()
	})
	db.Close()
}

// DropListener ends the feed's listening connection from the server side,
// as a network fault or a restarted pooler would.
func DropListener(ctx context.Context, db *DB) error {
	db.feed.mu.Lock()
	pid := db.feed.conn.PgConn().PID()
	db.feed.mu.Unlock()
	var ok bool
	if err := db.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return errors.New("pg_terminate_backend: no such backend")
	}
	return nil
}

// UsesPGVector reports whether db found pgvector at Open, and its version.
func UsesPGVector(db *DB) (bool, string) { return db.vector.on, db.vector.version }

// PGVectorSearches counts the vector searches pgvector answered.
func PGVectorSearches(db *DB) int64 { return db.vectorSearches.Load() }

// SetPGVector turns pgvector search on or off for db's searches and
// writes, so one database can be searched both ways.
func SetPGVector(db *DB, on bool) { db.vector.on = on }

// SearchVectorSQL is the statement and arguments of a pgvector search.
func SearchVectorSQL(tenant string, f memory.Filter, q memory.Embedding, limit int) (string, []any) {
	t, _ := vectorText(q.Vector)
	return searchVectorSQL(tenant, f, q.Model, len(q.Vector), t, limit)
}

// VectorIndexName is the HNSW index of vectors of dims dimensions.
func VectorIndexName(dims int) string { return vectorIndexName(dims) }

// PutMany stores ms in one transaction, as Put would one by one, for
// benchmarks that load tens of thousands of memories.
func PutMany(ctx context.Context, db *DB, tenant string, ms []*memory.Memory) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		for _, m := range ms {
			if err := insertMemory(ctx, tx, tenant, m, db.vector.on); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && len(ms) > 0 {
		db.afterVectorWrite(ctx, ms[0].Embedding)
	}
	return err
}

// AggregateSQL is the statement and arguments GateStore.Aggregate runs
// for qs.
func AggregateSQL(qs []gate.LedgerQuery) (string, []any) {
	return aggregateSQL(len(qs)), aggregateArgs(qs)
}

// MigrateTo creates or upgrades the database at url to schema version v
// and no further, as a release that knew only v would leave it.
func MigrateTo(ctx context.Context, url string, v int) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	return (&DB{pool: pool, log: slog.New(slog.DiscardHandler)}).migrateTo(ctx, v)
}

// SetFeedPing changes how long a quiet listening connection goes
// unchecked, for the DBs opened afterwards; it returns the old value.
func SetFeedPing(d time.Duration) time.Duration {
	old := feedPing
	feedPing = d
	return old
}

// SetAnalyzeEvery changes how often the DBs opened afterwards look for
// young tables; it returns the old value.
func SetAnalyzeEvery(d time.Duration) time.Duration {
	old := analyzeEvery
	analyzeEvery = d
	return old
}

// SetAnalyzeFloor changes how many changed rows a table needs before the
// analyzer looks at it; it returns the old value.
func SetAnalyzeFloor(n int) int {
	old := analyzeFloor
	analyzeFloor = n
	return old
}

// AnalyzerPasses counts the passes db's analyzer has made.
func AnalyzerPasses(db *DB) int64 { return db.analyzerPasses.Load() }

// AnalyzerPass is what one pass of the young-table analyzer did.
type AnalyzerPass struct {
	Tables []string
	Err    error
}

// DriveAnalyzer stops db's analyzer and starts one that makes a pass on
// each value sent on ticks and reads the time from now. Each pass is
// reported on passes, which holds 64 unread; done is closed once the
// analyzer has stopped.
func DriveAnalyzer(db *DB, ticks <-chan time.Time, now func() time.Time) (passes <-chan AnalyzerPass, done <-chan struct{}) {
	db.stopAnalyzer()
	ch := make(chan AnalyzerPass, 64)
	done = db.runAnalyzer(ticks, func() {}, now, func(tables []string, err error) {
		ch <- AnalyzerPass{Tables: tables, Err: err}
	})
	return ch, done
}

// FlushStats makes every idle connection of db's pool hand its pending
// table statistics to the server now. PostgreSQL 15 and later otherwise
// hold them up to a minute (PGSTAT_MAX_INTERVAL), which is why a test that
// waits for the analyzer to notice rows must flush first.
func FlushStats(ctx context.Context, db *DB) error {
	conns := db.pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		// The flush happens when the backend goes idle, before it answers
		// ReadyForQuery, so it is done when Exec returns.
		if _, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return err
		}
	}
	return nil
}

// AnalyzeFor is how long after its start the analyzer makes passes.
func AnalyzeFor() time.Duration { return analyzeFor }

// FeedPings counts the quiet spells db's listener ended with a ping.
func FeedPings(db *DB) int64 { return db.feed.pings.Load() }
