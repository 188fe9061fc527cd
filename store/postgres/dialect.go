package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/store/internal/sqlstore"
)

// dialect is what the stores sqlstore builds (ScheduleStore, GatewayStore,
// LLMStore) need to know of PostgreSQL: its text holds no NUL or invalid
// UTF-8.
var dialect = sqlstore.Dialect{Name: "postgres", NoRows: pgx.ErrNoRows, StrictText: true}

// querier is what a pool and a transaction have in common for reads.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryAll runs query on q and reads every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(sqlstore.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scan)
}

// changeOne runs one write statement and reports whether it changed one
// row.
func (db *DB) changeOne(ctx context.Context, query string, args ...any) (bool, error) {
	tag, err := db.pool.Exec(ctx, query, args...)
	return tag.RowsAffected() == 1, err
}
