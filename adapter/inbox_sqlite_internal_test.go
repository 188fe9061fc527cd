package adapter

import (
	"path/filepath"
	"testing"
)

// TestSQLiteStorePragmas: the write connection of both stores commits
// with synchronous=FULL in WAL mode (pragmas hold per connection, so only
// the store's own connection can tell).
func TestSQLiteStorePragmas(t *testing.T) {
	dir := t.TempDir()
	in, err := OpenSQLiteInbox(filepath.Join(dir, "inbox.sqlite3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := OpenSQLiteOutbox(filepath.Join(dir, "outbox.sqlite3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for name, db := range map[string]*inboxDB{"inbox": in.db, "outbox": out.db} {
		var sync int
		var mode string
		var busy int
		w := db.w.conn
		if err := w.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := w.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if sync != 2 || mode != "wal" || busy != 5000 {
			t.Errorf("%s: synchronous %d, journal mode %s, busy timeout %d; want 2 (FULL), wal, 5000", name, sync, mode, busy)
		}
	}
}
