package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts prepares each hot read once per database handle: SQLite
// compiles a statement on every call otherwise, which was half the CPU of
// a gate ledger total. database/sql re-prepares a statement per read
// connection on first use and keeps it.
type readStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// stmt returns query prepared on the read pool.
func (db *DB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	db.reads.mu.Lock()
	defer db.reads.mu.Unlock()
	if s, ok := db.reads.m[query]; ok {
		return s, nil
	}
	s, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if db.reads.m == nil {
		db.reads.m = map[string]*sql.Stmt{}
	}
	db.reads.m[query] = s
	return s, nil
}

// queryRow runs a prepared read returning one row.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := db.stmt(ctx, query)
	if err != nil {
		// QueryRowContext reports the preparation's error through Scan.
		return db.r.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// query runs a prepared read returning rows.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := db.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// closeStmts closes the prepared reads before the pool.
func (db *DB) closeStmts() {
	db.reads.mu.Lock()
	defer db.reads.mu.Unlock()
	for _, s := range db.reads.m {
		s.Close()
	}
	db.reads.m = nil
}
