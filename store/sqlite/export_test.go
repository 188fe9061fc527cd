package sqlite

import (
	"context"
	"log/slog"
	"time"

	"novaos.dev/novaos/gate"
)

// Crash closes db as kill -9 would end its process: the heartbeat stops,
// the lease is not given up, and the connections close.
func Crash(db *DB) {
	db.lease.Stop()
	db.lease = nil // Close then skips releasing it
	db.Close()
}

// AggregateSQL is the statement and arguments GateStore.Aggregate runs
// for qs.
func AggregateSQL(qs []gate.LedgerQuery) (string, []any) { return aggregateSQL(qs, 0) }

// MigrateTo creates or upgrades the database file at path (absolute) to
// schema version v and no further, as a release that knew only v would
// leave it.
func MigrateTo(ctx context.Context, path string, v int) error {
	w, err := openPool(path, 5*time.Second, true)
	if err != nil {
		return err
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	return (&DB{w: w, log: slog.New(slog.DiscardHandler)}).migrateTo(ctx, v)
}
