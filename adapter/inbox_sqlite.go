package adapter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"novaos.dev/novaos/secret"
)

// SQLiteInbox is an InboxStore in one SQLite file (the adapter keeps it
// at state_dir/inbox.sqlite3), owner-only, in WAL mode with
// synchronous=FULL. Its writes are committed group-wise: calls that
// arrive while a commit is in flight go into the next transaction
// together, and each returns once that transaction is on disk.
type SQLiteInbox struct {
	db     *inboxDB
	clock  Clock
	max    int
	sealer InboxSealer

	get, byRun, seen *sql.Stmt // on the read pool
	ins, dup, repl   string    // writes, prepared on the write connection
}

var _ InboxStore = (*SQLiteInbox)(nil)

// inboxSchemaVersion is the version of inboxSchema, the file's
// user_version.
const inboxSchemaVersion = 1

// inboxSchema is the inbox's schema. Times are Unix
// nanoseconds, 0 for none.
var inboxSchema = []string{
	`CREATE TABLE IF NOT EXISTS inbox_entries (
		event_id     TEXT PRIMARY KEY,
		seq          INTEGER NOT NULL,
		type         TEXT NOT NULL,
		run_id       TEXT NOT NULL,
		envelope     BLOB NOT NULL,
		token        TEXT NOT NULL,
		token_sealed INTEGER NOT NULL,
		token_jti    TEXT NOT NULL,
		token_iat    INTEGER NOT NULL,
		token_exp    INTEGER NOT NULL,
		state        TEXT NOT NULL,
		deliveries   INTEGER NOT NULL,
		close_reason TEXT NOT NULL,
		accepted_at  INTEGER NOT NULL,
		updated_at   INTEGER NOT NULL,
		closed_at    INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS inbox_entries_run ON inbox_entries (run_id, seq)`,
	`CREATE INDEX IF NOT EXISTS inbox_entries_state ON inbox_entries (state, seq)`,
	`CREATE TABLE IF NOT EXISTS inbox_jtis (
		jti   TEXT PRIMARY KEY,
		until INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS inbox_jtis_until ON inbox_jtis (until)`,
}

const inboxColumns = `event_id, seq, type, run_id, envelope, token, token_sealed, token_jti, token_iat, token_exp,
	state, deliveries, close_reason, accepted_at, updated_at, closed_at`

const (
	inboxInsert = `INSERT INTO inbox_entries (` + inboxColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	inboxSelectOne = `SELECT ` + inboxColumns + ` FROM inbox_entries WHERE event_id = ?`
	inboxCount     = `UPDATE inbox_entries SET deliveries = ?, updated_at = ? WHERE event_id = ?`
	inboxSetToken  = `UPDATE inbox_entries SET deliveries = ?, token = ?, token_sealed = ?, token_jti = ?,
		token_iat = ?, token_exp = ?, updated_at = ? WHERE event_id = ?`
	inboxSetState = `UPDATE inbox_entries SET state = ?, close_reason = ?, updated_at = ?, closed_at = ?
		WHERE event_id = ?`
	inboxRemember = `INSERT INTO inbox_jtis (jti, until) VALUES (?, ?)
		ON CONFLICT (jti) DO UPDATE SET until = max(until, excluded.until)`
)

// OpenSQLiteInbox opens the inbox in the SQLite file at path, creating
// it (mode 0600; its directory must exist) when there is none. A file,
// or journal, that group or others may read or write is refused with
// ErrStoreFileMode. The inbox must be closed after use.
func OpenSQLiteInbox(path string, opts *InboxOptions) (*SQLiteInbox, error) {
	c := opts.resolve()
	db, err := inboxOpenDB("inbox", path, c.busy, inboxSchemaVersion, inboxSchema, c.maxBatch, c.observe,
		[]string{inboxInsert, inboxSelectOne, inboxCount, inboxSetToken, inboxSetState, inboxRemember})
	if err != nil {
		return nil, err
	}
	in := &SQLiteInbox{db: db, clock: c.clock, max: c.maxEnvelope, sealer: c.sealer}
	for q, st := range map[string]**sql.Stmt{
		inboxSelectOne: &in.get,
		`SELECT ` + inboxColumns + ` FROM inbox_entries WHERE run_id = ? ORDER BY seq, event_id`: &in.byRun,
		`SELECT until FROM inbox_jtis WHERE jti = ?`:                                             &in.seen,
	} {
		if *st, err = db.r.Prepare(q); err != nil {
			in.Close()
			return nil, fmt.Errorf("adapter: inbox: prepare: %w", err)
		}
	}
	return in, nil
}

// Close stops the writer and closes the file. Writes that returned are
// on disk; the inbox must not be used afterwards.
func (in *SQLiteInbox) Close() error {
	for _, st := range []*sql.Stmt{in.get, in.byRun, in.seen} {
		if st != nil {
			st.Close()
		}
	}
	return in.db.close()
}

// inboxSealed is a token as stored: sealed when the inbox has a Sealer.
type inboxSealed struct {
	text   string
	sealed bool
}

func (in *SQLiteInbox) seal(eventID string, tok secret.Value) (inboxSealed, error) {
	plain := tok.Reveal()
	if in.sealer == nil || plain == "" {
		return inboxSealed{text: plain}, nil
	}
	s, err := in.sealer.Seal([]byte(plain), inboxSealPurpose, eventID)
	if err != nil {
		return inboxSealed{}, fmt.Errorf("adapter: inbox %s: seal the token: %w", eventID, err)
	}
	return inboxSealed{text: s, sealed: true}, nil
}

func (in *SQLiteInbox) unseal(eventID string, s inboxSealed) (secret.Value, error) {
	if !s.sealed {
		return secret.New(s.text), nil
	}
	if in.sealer == nil {
		return secret.Value{}, fmt.Errorf("adapter: inbox %s: the token is sealed and the inbox was opened without a Sealer", eventID)
	}
	plain, err := in.sealer.Unseal(s.text, inboxSealPurpose, eventID)
	if err != nil {
		// The sealer's error names no plaintext; it may name the key.
		return secret.Value{}, fmt.Errorf("adapter: inbox %s: unseal the token: %w", eventID, err)
	}
	return secret.New(string(plain)), nil
}

// Accept implements InboxStore: the batch is one transaction, shared
// with the other calls of its group commit.
func (in *SQLiteInbox) Accept(ctx context.Context, batch []InboxAccept) ([]InboxResult, error) {
	items, err := inboxPrepare(batch, in.max)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, ctx.Err()
	}
	// Seal outside the writer, which every caller waits on.
	sealed := make([]inboxSealed, len(items))
	for i := range items {
		if sealed[i], err = in.seal(items[i].entry.EventID, items[i].entry.Token.Value); err != nil {
			return nil, err
		}
	}
	out := make([]InboxResult, len(items))
	err = in.db.w.do(ctx, len(items), func(tx *sql.Tx) error {
		now := in.clock.Now()
		for i, it := range items {
			e := it.entry
			cur, err := in.scanOne(in.db.w.stmt(tx, inboxSelectOne).QueryRow(e.EventID))
			switch {
			case errors.Is(err, ErrInboxNotFound):
				e.AcceptedAt, e.UpdatedAt = now, now
				if e.State == InboxClosed {
					e.ClosedAt = now
				}
				if _, err := in.db.w.stmt(tx, inboxInsert).Exec(e.EventID, e.Seq, e.Type, e.RunID, []byte(e.Envelope),
					sealed[i].text, sealed[i].sealed, e.Token.JTI, inboxNanos(e.Token.IssuedAt), inboxNanos(e.Token.ExpiresAt),
					string(e.State), e.Deliveries, e.CloseReason, inboxNanos(now), inboxNanos(now), inboxNanos(e.ClosedAt)); err != nil {
					return fmt.Errorf("adapter: inbox %s: store: %w", e.EventID, err)
				}
				out[i] = InboxResult{Outcome: InboxNew, Entry: e}
			case err != nil:
				return err
			default:
				o := inboxRedeliver(&cur, e.Token, now)
				if o == InboxTokenReplaced {
					_, err = in.db.w.stmt(tx, inboxSetToken).Exec(cur.Deliveries, sealed[i].text, sealed[i].sealed,
						e.Token.JTI, inboxNanos(e.Token.IssuedAt), inboxNanos(e.Token.ExpiresAt), inboxNanos(now), e.EventID)
				} else {
					_, err = in.db.w.stmt(tx, inboxCount).Exec(cur.Deliveries, inboxNanos(now), e.EventID)
				}
				if err != nil {
					return fmt.Errorf("adapter: inbox %s: store a redelivery: %w", e.EventID, err)
				}
				out[i] = InboxResult{Outcome: o, Entry: cur}
			}
			if !it.remember.IsZero() {
				if _, err := in.db.w.stmt(tx, inboxRemember).Exec(e.Token.JTI, inboxNanos(it.remember)); err != nil {
					return fmt.Errorf("adapter: inbox: remember a token id: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inboxScanner is a *sql.Row or *sql.Rows.
type inboxScanner interface{ Scan(dest ...any) error }

// scanOne reads one entry; a missing row is ErrInboxNotFound (without
// the event id: callers that know it add it).
func (in *SQLiteInbox) scanOne(r inboxScanner) (InboxEntry, error) {
	var (
		e                                       InboxEntry
		env                                     []byte
		tok                                     inboxSealed
		state                                   string
		iat, exp, accepted, updated, closedAtNS int64
	)
	err := r.Scan(&e.EventID, &e.Seq, &e.Type, &e.RunID, &env, &tok.text, &tok.sealed, &e.Token.JTI,
		&iat, &exp, &state, &e.Deliveries, &e.CloseReason, &accepted, &updated, &closedAtNS)
	if errors.Is(err, sql.ErrNoRows) {
		return InboxEntry{}, ErrInboxNotFound
	}
	if err != nil {
		return InboxEntry{}, fmt.Errorf("adapter: inbox: read: %w", err)
	}
	e.Envelope, e.State = env, InboxState(state)
	e.Token.IssuedAt, e.Token.ExpiresAt = inboxTime(iat), inboxTime(exp)
	e.AcceptedAt, e.UpdatedAt, e.ClosedAt = inboxTime(accepted), inboxTime(updated), inboxTime(closedAtNS)
	if e.Token.Value, err = in.unseal(e.EventID, tok); err != nil {
		return InboxEntry{}, err
	}
	return e, nil
}

func (in *SQLiteInbox) scanAll(rows *sql.Rows, err error) ([]InboxEntry, error) {
	if err != nil {
		return nil, fmt.Errorf("adapter: inbox: read: %w", err)
	}
	defer rows.Close()
	var out []InboxEntry
	for rows.Next() {
		e, err := in.scanOne(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("adapter: inbox: read: %w", err)
	}
	return out, nil
}

// Get implements InboxStore.
func (in *SQLiteInbox) Get(ctx context.Context, eventID string) (InboxEntry, error) {
	e, err := in.scanOne(in.get.QueryRowContext(ctx, eventID))
	if errors.Is(err, ErrInboxNotFound) {
		return InboxEntry{}, inboxNotFound(eventID)
	}
	return e, err
}

// ByRun implements InboxStore.
func (in *SQLiteInbox) ByRun(ctx context.Context, runID string) ([]InboxEntry, error) {
	return in.scanAll(in.byRun.QueryContext(ctx, runID))
}

// List implements InboxStore.
func (in *SQLiteInbox) List(ctx context.Context, states ...InboxState) ([]InboxEntry, error) {
	set, err := inboxStateSet(states)
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + inboxColumns + ` FROM inbox_entries`
	var args []any
	if set != nil {
		q += ` WHERE state IN (?` + strings.Repeat(`, ?`, len(set)-1) + `)`
		for s := range set {
			args = append(args, string(s))
		}
	}
	return in.scanAll(in.db.r.QueryContext(ctx, q+` ORDER BY seq, event_id`, args...))
}

// SetState implements InboxStore.
func (in *SQLiteInbox) SetState(ctx context.Context, eventID string, from, to InboxState, reason string) error {
	if err := inboxCheckMove(eventID, from, to); err != nil {
		return err
	}
	return in.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		cur, err := in.scanOne(in.db.w.stmt(tx, inboxSelectOne).QueryRow(eventID))
		if errors.Is(err, ErrInboxNotFound) {
			return inboxNotFound(eventID)
		}
		if err != nil {
			return err
		}
		if err := inboxMove(&cur, from, to, reason, in.clock.Now()); err != nil {
			return err
		}
		if _, err := in.db.w.stmt(tx, inboxSetState).Exec(string(cur.State), cur.CloseReason,
			inboxNanos(cur.UpdatedAt), inboxNanos(cur.ClosedAt), eventID); err != nil {
			return fmt.Errorf("adapter: inbox %s: set state: %w", eventID, err)
		}
		return nil
	})
}

// ReplaceToken implements InboxStore.
func (in *SQLiteInbox) ReplaceToken(ctx context.Context, eventID string, tok InboxToken) (bool, error) {
	if err := inboxCheckToken(eventID, tok); err != nil {
		return false, err
	}
	sealed, err := in.seal(eventID, tok.Value)
	if err != nil {
		return false, err
	}
	var replaced bool
	err = in.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		cur, err := in.scanOne(in.db.w.stmt(tx, inboxSelectOne).QueryRow(eventID))
		if errors.Is(err, ErrInboxNotFound) {
			return inboxNotFound(eventID)
		}
		if err != nil {
			return err
		}
		if replaced, err = inboxReplace(&cur, tok, in.clock.Now()); err != nil || !replaced {
			return err
		}
		if _, err := in.db.w.stmt(tx, inboxSetToken).Exec(cur.Deliveries, sealed.text, sealed.sealed, tok.JTI,
			inboxNanos(tok.IssuedAt), inboxNanos(tok.ExpiresAt), inboxNanos(cur.UpdatedAt), eventID); err != nil {
			return fmt.Errorf("adapter: inbox %s: replace token: %w", eventID, err)
		}
		return nil
	})
	return replaced, err
}

// Prune implements InboxStore.
func (in *SQLiteInbox) Prune(ctx context.Context, closedBefore time.Time) (int64, error) {
	var n int64
	err := in.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM inbox_entries WHERE state = ? AND closed_at < ?`,
			string(InboxClosed), inboxNanos(closedBefore))
		if err != nil {
			return fmt.Errorf("adapter: inbox: prune: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("adapter: inbox: prune: %w", err)
		}
		if _, err := tx.Exec(`DELETE FROM inbox_jtis WHERE until <= ?`, inboxNanos(in.clock.Now())); err != nil {
			return fmt.Errorf("adapter: inbox: prune token ids: %w", err)
		}
		return nil
	})
	return n, err
}

// RememberJTI implements InboxStore.
func (in *SQLiteInbox) RememberJTI(ctx context.Context, jti string, until time.Time) error {
	if err := inboxCheckJTI(jti); err != nil {
		return err
	}
	return in.db.w.do(ctx, 1, func(tx *sql.Tx) error {
		if _, err := in.db.w.stmt(tx, inboxRemember).Exec(jti, inboxNanos(until)); err != nil {
			return fmt.Errorf("adapter: inbox: remember a token id: %w", err)
		}
		return nil
	})
}

// SeenJTI implements InboxStore.
func (in *SQLiteInbox) SeenJTI(ctx context.Context, jti string) (bool, error) {
	var until int64
	switch err := in.seen.QueryRowContext(ctx, jti).Scan(&until); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("adapter: inbox: read a token id: %w", err)
	}
	return inboxTime(until).After(in.clock.Now()), nil
}

// Seen implements InboxStore.
func (in *SQLiteInbox) Seen(ctx context.Context, jti string) (bool, error) {
	return in.SeenJTI(ctx, jti)
}

// inboxNanos stores a time; the zero time is 0.
func inboxNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// inboxTime reads a stored time.
func inboxTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// inboxDB is the SQLite plumbing the inbox and the outbox share: one
// owner-only file, one write connection owned by a group-commit writer,
// and a pool of read-only connections.
type inboxDB struct {
	w *inboxWriter
	r *sql.DB
}

// inboxOpenDB opens (creating it owner-only) the file at path for the
// store named what, creates its schema (version) in a new file and starts
// its writer with the statements in prepare compiled once.
func inboxOpenDB(what, path string, busy time.Duration, version int, schema []string, maxBatch int, observe func(int), prepare []string) (*inboxDB, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("adapter: %s: a file path is required", what)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	if err := inboxCheckFiles(abs); err != nil {
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	w, err := inboxPool(abs, busy, true)
	if err != nil {
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	ctx := context.Background()
	if err := inboxMigrate(ctx, w, version, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	// Readers open only once the writer has switched the file to WAL.
	r, err := inboxPool(abs, busy, false)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	r.SetMaxOpenConns(max(2, runtime.GOMAXPROCS(0)))
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	wr, err := inboxStartWriter(ctx, w, prepare, maxBatch, observe)
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("adapter: %s: %w", what, err)
	}
	return &inboxDB{w: wr, r: r}, nil
}

func (db *inboxDB) close() error {
	db.w.close()
	return errors.Join(db.r.Close(), db.w.conn.Close())
}

// inboxCheckFiles refuses a database file, or one of its journals, that
// is not a regular file or that group or others may use, and creates the
// database file owner-only when it is missing. SQLite gives the journals
// it creates the database file's mode.
func inboxCheckFiles(abs string) error {
	if runtime.GOOS != "windows" { // modes do not carry ACLs there
		for _, p := range []string{abs, abs + "-wal", abs + "-shm", abs + "-journal"} {
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("%s is not a regular file", p)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				return fmt.Errorf("%s has mode %s: %w", p, fi.Mode().Perm(), ErrStoreFileMode)
			}
		}
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// inboxPool opens a pool whose every connection is set up by DSN
// pragmas, so that a connection the pool replaces is set up the same way.
func inboxPool(abs string, busy time.Duration, write bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	if write {
		q.Add("_pragma", "journal_mode(WAL)")
		// The writer reads before it writes; taking the lock up front
		// means waiting for another process instead of failing busy.
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	c, err := sqlite.NewConnector(u.String())
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// inboxMigrate creates the schema of a new file and refuses a file from
// a newer version of the adapter.
func inboxMigrate(ctx context.Context, w *sql.DB, version int, schema []string) error {
	var mode string
	if err := w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %s, not wal", mode)
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > version {
		return fmt.Errorf("the file has schema version %d; this adapter knows up to %d", v, version)
	}
	if v == version {
		return nil
	}
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version)); err != nil {
		return err
	}
	return tx.Commit()
}

// inboxWriter commits group-wise. With synchronous=FULL every commit
// waits for the disk, so committing each write alone caps the store at a
// few hundred writes a second. One goroutine owns the write connection;
// it takes every write that is waiting (up to maxBatch deliveries), runs
// them in one transaction and commits once. Each caller returns only
// after the commit that holds its write, so an answered write survives a
// crash, and a lone caller waits no longer than a plain commit.
type inboxWriter struct {
	conn     *sql.DB // one connection
	prepared map[string]*sql.Stmt
	ops      chan *inboxWrite
	maxBatch int
	observe  func(int)
	quit     chan struct{}
	done     chan struct{}
	stop     sync.Once
}

// inboxWrite is one caller's write; fn runs inside the batch's
// transaction, in a savepoint of its own, so that a failing write is
// undone whole and costs the other callers nothing.
type inboxWrite struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	size int
	err  chan error
}

var errInboxClosed = errors.New("adapter: store is closed")

func inboxStartWriter(ctx context.Context, conn *sql.DB, prepare []string, maxBatch int, observe func(int)) (*inboxWriter, error) {
	w := &inboxWriter{
		conn: conn, prepared: make(map[string]*sql.Stmt, len(prepare)), ops: make(chan *inboxWrite),
		maxBatch: maxBatch, observe: observe, quit: make(chan struct{}), done: make(chan struct{}),
	}
	for _, q := range prepare {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range w.prepared {
				st.Close()
			}
			return nil, fmt.Errorf("prepare: %w", err)
		}
		w.prepared[q] = st
	}
	go w.run()
	return w, nil
}

// stmt returns query's prepared statement in tx. Statements are prepared
// on the one write connection every transaction runs on, so database/sql
// uses them as they are.
func (w *inboxWriter) stmt(tx *sql.Tx, query string) *sql.Stmt { return tx.Stmt(w.prepared[query]) }

// do runs fn in the next group commit and returns once it committed.
// Once fn is handed over, do waits for the outcome even if ctx ends: the
// write may be durable already, and saying otherwise would lie.
func (w *inboxWriter) do(ctx context.Context, size int, fn func(tx *sql.Tx) error) error {
	op := &inboxWrite{ctx: ctx, fn: fn, size: size, err: make(chan error, 1)}
	select {
	case w.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.quit:
		return errInboxClosed
	}
	return <-op.err
}

func (w *inboxWriter) close() {
	w.stop.Do(func() { close(w.quit) })
	<-w.done
	for _, st := range w.prepared {
		st.Close()
	}
}

func (w *inboxWriter) run() {
	defer close(w.done)
	var batch []*inboxWrite
	for {
		select {
		case op := <-w.ops:
			batch = append(batch[:0], op)
		case <-w.quit:
			return
		}
		// Every caller that queued while the last commit was in flight
		// is waiting on the channel now: take them all.
		size := batch[0].size
	fill:
		for size < w.maxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
				size += op.size
			default:
				break fill
			}
		}
		w.commit(batch)
		clear(batch)
	}
}

func (w *inboxWriter) commit(batch []*inboxWrite) {
	// The batch is shared, so no one caller's context may cut it short;
	// a caller whose context ended before its turn is skipped.
	errs := make([]error, len(batch))
	tx, err := w.conn.BeginTx(context.Background(), nil)
	if err == nil {
		for i, op := range batch {
			if errs[i] = op.ctx.Err(); errs[i] != nil {
				continue
			}
			var undoErr error
			if errs[i], undoErr = inboxSavepoint(tx, op.fn); undoErr != nil {
				err = undoErr // the transaction is in a state nobody can vouch for
				break
			}
		}
		if err != nil {
			tx.Rollback()
		} else if cerr := tx.Commit(); cerr != nil {
			err = fmt.Errorf("adapter: commit: %w", cerr)
		} else if w.observe != nil {
			w.observe(len(batch))
		}
	} else {
		err = fmt.Errorf("adapter: begin: %w", err)
	}
	for i, op := range batch {
		if err != nil && errs[i] == nil {
			errs[i] = err
		}
		op.err <- errs[i]
	}
}

// inboxSavepoint runs fn so that its failure undoes all its statements.
// err is fn's; undoErr says the savepoint could not be taken back.
func inboxSavepoint(tx *sql.Tx, fn func(tx *sql.Tx) error) (err, undoErr error) {
	if _, err := tx.Exec(`SAVEPOINT write_op`); err != nil {
		return err, nil
	}
	if err = fn(tx); err != nil {
		if _, rerr := tx.Exec(`ROLLBACK TO write_op`); rerr != nil {
			return err, fmt.Errorf("adapter: undo a failed write: %w", rerr)
		}
	}
	if _, rerr := tx.Exec(`RELEASE write_op`); rerr != nil {
		return err, fmt.Errorf("adapter: release a write: %w", rerr)
	}
	return err, nil
}
