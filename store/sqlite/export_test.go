package sqlite

import "novaos.dev/novaos/gate"

// Crash closes db as kill -9 would end its process: the heartbeat stops,
// the lease is not given up, and the connections close.
func Crash(db *DB) {
	db.lease.Stop()
	db.lease = nil // Close then skips releasing it
	db.Close()
}

// AggregateSQL is the statement and arguments GateStore.Aggregate runs.
func AggregateSQL(q gate.LedgerQuery) (string, []any) { return aggregateSQL(q) }
