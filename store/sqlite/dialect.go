package sqlite

import (
	"context"
	"database/sql"

	"novaos.dev/novaos/store/internal/sqlstore"
)

// dialect is what the stores sqlstore builds (ScheduleStore, GatewayStore,
// LLMStore) need to know of SQLite.
var dialect = sqlstore.Dialect{Name: "sqlite", NoRows: sql.ErrNoRows}

// queryAll runs query with run (DB.query for a prepared read) and reads
// every row with scan.
func queryAll[T any](ctx context.Context, run func(context.Context, string, ...any) (*sql.Rows, error),
	scan func(sqlstore.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := run(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scan)
}

// affected reports whether a statement's result, res, changed one row;
// err is the statement's.
func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// changeOne runs one write statement through the writer (prepared when
// Open prepared it) and reports whether it changed one row.
func (db *DB) changeOne(ctx context.Context, query string, args ...any) (bool, error) {
	var changed bool
	err := db.wr.do(ctx, func(tx *sql.Tx) (err error) {
		changed, err = affected(db.wr.exec(tx, query, args...))
		return err
	})
	return changed, err
}
