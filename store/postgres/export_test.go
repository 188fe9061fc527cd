package postgres

// Crash closes db as kill -9 would end its replica: the heartbeat stops,
// the lease is not given up, and the connections close.
func Crash(db *DB) {
	db.closeOnce.Do(db.lease.Stop)
	db.Close()
}
