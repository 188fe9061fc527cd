package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL caches a plan for each prepared statement, and after a few
// executions settles on a generic one, made from the table statistics of the
// moment. In a new database those say the tables are empty, so the plans
// scan them sequentially; each write then costs more with every row, until
// autovacuum's first ANALYZE (it looks every autovacuum_naptime, a minute by
// default) makes PostgreSQL plan again. Under load that minute is the
// slowest of the database's life: streamed SendMessage ran at 0.4× of a
// warmed database's rate in our runs.
//
// So for a while after Open, the DB analyzes itself every table of its
// schema whose rows changed more since its last ANALYZE than that ANALYZE
// counted (and more than a floor, so that tiny tables are left alone). Once tables are past their first growth, a table
// that doubles is rare and autovacuum's own thresholds take over. Replicas
// may all do it: ANALYZE (SKIP_LOCKED) passes over a table another one is
// analyzing.

// Analyzer timing: how often it looks, and for how long after Open.
var (
	analyzeEvery = 2 * time.Second
	analyzeFor   = 2 * time.Minute
)

// analyzeFloor is how many changed rows a table needs before it is
// analyzed at all.
var analyzeFloor = 1000

// youngTablesSQL finds them: reltuples is the row count the last ANALYZE
// (or VACUUM) saw, -1 before the first.
const youngTablesSQL = `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
	WHERE s.schemaname = current_schema() AND s.n_mod_since_analyze > greatest($1::float8, c.reltuples)
	ORDER BY s.relname`

// startAnalyzer analyzes young tables in the background until Close or
// analyzeFor has passed.
func (db *DB) startAnalyzer() {
	t := time.NewTicker(analyzeEvery)
	db.runAnalyzer(t.C, t.Stop, time.Now, nil)
}

// runAnalyzer makes a pass on each tick from ticks until Close, or until a
// tick comes when now says analyzeFor has passed since the start; then it
// calls stopTicks. passed, when not nil, is told what each pass analyzed.
// The returned channel is closed when the analyzer has stopped.
func (db *DB) runAnalyzer(ticks <-chan time.Time, stopTicks func(), now func() time.Time, passed func(tables []string, err error)) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	db.stopAnalyzer = func() {
		cancel()
		<-done
	}
	until := now().Add(analyzeFor)
	go func() {
		defer close(done)
		defer stopTicks()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
			if !now().Before(until) {
				return
			}
			tables, err := db.analyzeYoung(ctx)
			if err != nil && ctx.Err() == nil {
				db.log.Debug("postgres: analyze young tables", "err", err)
			}
			db.analyzerPasses.Add(1)
			if passed != nil {
				passed(tables, err)
			}
		}
	}()
	return done
}

// analyzeYoung analyzes every table whose rows changed more than it holds,
// and returns their names.
func (db *DB) analyzeYoung(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, youngTablesSQL, analyzeFloor)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for i, name := range tables {
		if _, err := db.pool.Exec(ctx, `ANALYZE (SKIP_LOCKED) `+pgx.Identifier{name}.Sanitize()); err != nil {
			return tables[:i], err
		}
	}
	return tables, nil
}
