package adapter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SQLiteOutbox is an OutboxStore in one SQLite file (the adapter keeps
// it at state_dir/outbox.sqlite3), owner-only, in WAL mode with
// synchronous=FULL, committed group-wise like SQLiteInbox.
type SQLiteOutbox struct {
	db      *inboxDB
	clock   Clock
	maxBody int

	get, pending, failed, threads *sql.Stmt // on the read pool
}

var _ OutboxStore = (*SQLiteOutbox)(nil)

// outboxSchemaVersion is the version of outboxSchema, the file's
// user_version.
const outboxSchemaVersion = 1

// outboxSchema is the outbox's schema. seq orders entries as they were
// put; AUTOINCREMENT never hands out a pruned entry's seq again. Times
// are Unix nanoseconds.
var outboxSchema = []string{
	`CREATE TABLE IF NOT EXISTS outbox_entries (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT NOT NULL UNIQUE,
		kind       TEXT NOT NULL,
		thread     TEXT NOT NULL,
		run_id     TEXT NOT NULL,
		method     TEXT NOT NULL,
		path       TEXT NOT NULL,
		body       BLOB,
		state      TEXT NOT NULL,
		attempts   INTEGER NOT NULL,
		problem    TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS outbox_entries_thread ON outbox_entries (thread, seq) WHERE state = 'pending'`,
	`CREATE INDEX IF NOT EXISTS outbox_entries_state ON outbox_entries (state, seq)`,
}

const outboxColumns = `id, kind, thread, run_id, method, path, body, state, attempts, problem, created_at, updated_at`

const (
	outboxInsert = `INSERT INTO outbox_entries (` + outboxColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	outboxSelectOne = `SELECT ` + outboxColumns + ` FROM outbox_entries WHERE id = ?`
	outboxUpdate    = `UPDATE outbox_entries SET state = ?, attempts = ?, problem = ?, updated_at = ? WHERE id = ?`
)

// OpenSQLiteOutbox opens the outbox store in the SQLite file at path,
// creating it (mode 0600; its directory must exist) when there is none.
// A file, or journal, that group or others may read or write is refused
// with ErrStoreFileMode. The store must be closed after use.
func OpenSQLiteOutbox(path string, opts *OutboxOptions) (*SQLiteOutbox, error) {
	c := opts.resolve()
	db, err := inboxOpenDB("outbox", path, c.busy, outboxSchemaVersion, outboxSchema, 256, nil,
		[]string{outboxInsert, outboxSelectOne, outboxUpdate})
	if err != nil {
		return nil, err
	}
	o := &SQLiteOutbox{db: db, clock: c.clock, maxBody: c.maxBody}
	for q, st := range map[string]**sql.Stmt{
		outboxSelectOne: &o.get,
		`SELECT ` + outboxColumns + ` FROM outbox_entries WHERE thread = ? AND state = 'pending' ORDER BY seq`: &o.pending,
		`SELECT ` + outboxColumns + ` FROM outbox_entries WHERE state = 'failed' ORDER BY seq`:                 &o.failed,
		`SELECT thread FROM outbox_entries WHERE state = 'pending' GROUP BY thread ORDER BY min(seq)`:          &o.threads,
	} {
		if *st, err = db.r.Prepare(q); err != nil {
			o.Close()
			return nil, fmt.Errorf("adapter: outbox: prepare: %w", err)
		}
	}
	return o, nil
}

// Close stops the writer and closes the file. Writes that returned are
// on disk; the store must not be used afterwards.
func (o *SQLiteOutbox) Close() error {
	for _, st := range []*sql.Stmt{o.get, o.pending, o.failed, o.threads} {
		if st != nil {
			st.Close()
		}
	}
	return o.db.close()
}

// Put implements OutboxStore.
func (o *SQLiteOutbox) Put(ctx context.Context, e OutboxEntry) error {
	if err := outboxCheck(e, o.maxBody); err != nil {
		return err
	}
	return o.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		now := inboxNanos(o.clock.Now())
		res, err := o.db.w.stmt(tx, outboxInsert).Exec(e.ID, string(e.Kind), e.Thread, e.RunID, e.Request.Method,
			e.Request.Path, []byte(e.Request.Body), string(OutboxPending), 0, "", now, now)
		if err != nil {
			return fmt.Errorf("adapter: outbox %s: put: %w", e.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("adapter: outbox %s: put: %w", e.ID, err)
		} else if n == 0 {
			return outboxExists(e.ID)
		}
		return nil
	})
}

func outboxScan(r inboxScanner) (OutboxEntry, error) {
	var (
		e                OutboxEntry
		kind, state      string
		body             []byte
		created, updated int64
	)
	err := r.Scan(&e.ID, &kind, &e.Thread, &e.RunID, &e.Request.Method, &e.Request.Path, &body, &state,
		&e.Attempts, &e.Problem, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return OutboxEntry{}, ErrOutboxNotFound
	}
	if err != nil {
		return OutboxEntry{}, fmt.Errorf("adapter: outbox: read: %w", err)
	}
	e.Kind, e.State, e.Request.Body = OutboxKind(kind), OutboxState(state), body
	e.CreatedAt, e.UpdatedAt = inboxTime(created), inboxTime(updated)
	return e, nil
}

func outboxScanAll(rows *sql.Rows, err error) ([]OutboxEntry, error) {
	if err != nil {
		return nil, fmt.Errorf("adapter: outbox: read: %w", err)
	}
	defer rows.Close()
	var out []OutboxEntry
	for rows.Next() {
		e, err := outboxScan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("adapter: outbox: read: %w", err)
	}
	return out, nil
}

// Get implements OutboxStore.
func (o *SQLiteOutbox) Get(ctx context.Context, id string) (OutboxEntry, error) {
	e, err := outboxScan(o.get.QueryRowContext(ctx, id))
	if errors.Is(err, ErrOutboxNotFound) {
		return OutboxEntry{}, outboxNotFound(id)
	}
	return e, err
}

// Pending implements OutboxStore.
func (o *SQLiteOutbox) Pending(ctx context.Context, thread string) ([]OutboxEntry, error) {
	return outboxScanAll(o.pending.QueryContext(ctx, thread))
}

// Failed implements OutboxStore.
func (o *SQLiteOutbox) Failed(ctx context.Context) ([]OutboxEntry, error) {
	return outboxScanAll(o.failed.QueryContext(ctx))
}

// Threads implements OutboxStore.
func (o *SQLiteOutbox) Threads(ctx context.Context) ([]string, error) {
	rows, err := o.threads.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("adapter: outbox: read: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("adapter: outbox: read: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("adapter: outbox: read: %w", err)
	}
	return out, nil
}

// RecordAttempt implements OutboxStore.
func (o *SQLiteOutbox) RecordAttempt(ctx context.Context, id, problem string) error {
	return o.finish(ctx, id, OutboxPending, problem)
}

// MarkSent implements OutboxStore.
func (o *SQLiteOutbox) MarkSent(ctx context.Context, id string) error {
	return o.finish(ctx, id, OutboxSent, "")
}

// MarkFailed implements OutboxStore.
func (o *SQLiteOutbox) MarkFailed(ctx context.Context, id, problem string) error {
	return o.finish(ctx, id, OutboxFailed, problem)
}

func (o *SQLiteOutbox) finish(ctx context.Context, id string, to OutboxState, problem string) error {
	return o.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		cur, err := outboxScan(o.db.w.stmt(tx, outboxSelectOne).QueryRow(id))
		if errors.Is(err, ErrOutboxNotFound) {
			return outboxNotFound(id)
		}
		if err != nil {
			return err
		}
		if err := outboxFinish(&cur, to, problem, o.clock.Now()); err != nil {
			return err
		}
		if _, err := o.db.w.stmt(tx, outboxUpdate).Exec(string(cur.State), cur.Attempts, cur.Problem,
			inboxNanos(cur.UpdatedAt), id); err != nil {
			return fmt.Errorf("adapter: outbox %s: update: %w", id, err)
		}
		return nil
	})
}

// Prune implements OutboxStore.
func (o *SQLiteOutbox) Prune(ctx context.Context, sentBefore time.Time) (int64, error) {
	var n int64
	err := o.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM outbox_entries WHERE state = ? AND updated_at < ?`,
			string(OutboxSent), inboxNanos(sentBefore))
		if err != nil {
			return fmt.Errorf("adapter: outbox: prune: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
