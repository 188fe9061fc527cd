package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlmigrate"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/store/lease"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options tunes Open. Nil means the defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// process using the same file (default 5s).
	BusyTimeout time.Duration
	// MaxReadConns bounds concurrent read connections (default GOMAXPROCS,
	// at least 4).
	MaxReadConns int
	// Logger receives migration progress (default: discarded).
	Logger *slog.Logger
	// Lease times this handle's instance lease (see Recoverer); nil means
	// store/lease's defaults.
	Lease *lease.Options
	// MemoryIndexBytes bounds the in-process memory search index (see
	// MemoryStore; default DefaultMemoryIndexBytes).
	MemoryIndexBytes int64
	// ObserveBatch, when set, is told the number of writes of each group
	// commit (see the writer) once it has committed, for metrics. It runs
	// on the writer's goroutine, between commits: it must return at once.
	ObserveBatch func(writes int)
}

// DefaultMemoryIndexBytes bounds the memory search index when
// Options.MemoryIndexBytes is zero: 256 MiB, about 130k memories with
// 256-wide vectors.
const DefaultMemoryIndexBytes = memindex.DefaultMaxBytes

// DB is an open SQLite database. Its stores are safe for concurrent use; it
// must be closed after the last use of any of them.
type DB struct {
	w   *sql.DB // exactly one connection, owned by wr once Open returns
	wr  *writer // every write after migration, committed group-wise
	r   *sql.DB // read-only connections
	log *slog.Logger

	instance string        // this handle's lease id, recorded on every task write
	lease    *lease.Keeper // renews it (leases.go)

	index *memindex.Cache // memory search structures by partition (memory_index.go)
	reads readStmts       // prepared hot reads (stmts.go)

	gatewayWatchers  sqlstore.EventWatchers // the gateway store's WatchEvents (gateway.go)
	deliveryWatchers sqlstore.EventWatchers // the delivery store's WatchEvents (delivery.go)
}

// Open opens or creates the database file at path (its directory must
// exist) and brings its schema up to date.
func Open(ctx context.Context, path string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxReadConns <= 0 {
		o.MaxReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	lo, err := o.Lease.Resolve()
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	if path == "" || path == ":memory:" {
		// Separate reader and writer connections need a shared file.
		return nil, errors.New("sqlite: open: a file path is required")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// Tasks and push-config credentials are nobody else's business: create
	// the file owner-only. SQLite gives its -wal and -shm files the same
	// mode as the database file.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	} else {
		tightenModes(abs, o.Logger)
	}

	w, err := openPool(abs, o.BusyTimeout, true)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	db := &DB{w: w, log: o.Logger}
	db.index = memindex.New(indexSource{db}, &memindex.Options{MaxBytes: o.MemoryIndexBytes, Logger: o.Logger})
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	// Readers open only once the writer has switched the file to WAL.
	r, err := openPool(abs, o.BusyTimeout, false)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(o.MaxReadConns)
	r.SetMaxIdleConns(o.MaxReadConns)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.r = r
	if db.wr, err = startWriter(ctx, w, slices.Concat(preparedWrites, memoryWrites, gateWrites, gatewayWrites,
		toolWrites, deliveryWrites,
	)); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	db.wr.observe = o.ObserveBatch
	if err := db.startLease(ctx, lo); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openPool opens a pool whose every connection is set up by DSN pragmas, so
// a connection the pool replaces later is set up the same way.
func openPool(abs string, busy time.Duration, write bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if write {
		q.Add("_pragma", "journal_mode(WAL)")
		// BEGIN IMMEDIATE takes the write lock up front: a transaction
		// that reads first and upgrades later could fail with
		// SQLITE_BUSY against another process instead of waiting.
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	c, err := sqlite.NewConnector(u.String())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	return sql.OpenDB(c), nil
}

// Close closes the database. Stores obtained from it must not be used
// afterwards.
func (db *DB) Close() error {
	db.stopLease()
	db.wr.close()
	db.closeStmts()
	return errors.Join(db.r.Close(), db.w.Close())
}

func (db *DB) migrate(ctx context.Context) error { return db.migrateTo(ctx, 0) }

// migrateTo applies the pending migrations up to version to, or every one
// when to is 0; a test stops at an older version to check what a later
// migration does to the data it finds.
func (db *DB) migrateTo(ctx context.Context, to int) error {
	all, err := sqlmigrate.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if to > 0 && to < len(all) {
		all = all[:to]
	}
	// The write lock taken by BEGIN IMMEDIATE keeps two processes opening
	// the same file from migrating it at once.
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version       INTEGER NOT NULL PRIMARY KEY,
		name          TEXT    NOT NULL,
		applied_at_ms INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	todo, err := sqlmigrate.Pending(all, applied)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	for _, m := range todo {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", m.Name, err)
		}
		db.log.InfoContext(ctx, "sqlite: applied migration", "name", m.Name)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) ([]int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// tightenModes makes an existing database file and its -wal, -shm and
// -journal files owner-only: a file left readable by group or others (an
// older version, a copy, a umask) would hand every task and push config to
// other users of the machine, and new -wal and -shm files take the
// database file's mode. A file this process cannot change is left as it
// is, with a warning: refusing to start would not make it private either.
func tightenModes(db string, log *slog.Logger) {
	if runtime.GOOS == "windows" {
		return // modes do not carry ACLs there
	}
	for _, p := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			log.Warn("sqlite: database file is readable or writable by other users and its mode could not be tightened",
				"file", p, "mode", fi.Mode().Perm().String(), "err", err)
			continue
		}
		log.Info("sqlite: tightened a database file's mode to owner-only", "file", p,
			"was", fi.Mode().Perm().String(), "now", (fi.Mode().Perm() & 0o700).String())
	}
}

// Stores gives the database's stores as one value; its Close closes the
// database.
func (db *DB) Stores() *store.Stores {
	return &store.Stores{
		Kind:        "sqlite",
		Tasks:       db.TaskStore(),
		PushConfigs: db.PushConfigStore(),
		PushOutbox:  db.PushOutbox(),
		Recoverer:   db.Recoverer(),
		Registry:    db.RegistryStore(),
		Memory:      db.MemoryStore(),
		Gate:        db.GateStore(),
		Gateway:     db.GatewayStore(),
		ToolServers: db.ToolServerStore(),
		Tools:       db.ToolStore(),
		Files:       db.FileStore(),
		Knowledge:   db.KnowledgeStore(),
		LLM:         db.LLMStore(),
		Schedules:   db.ScheduleStore(),
		Delivery:    db.DeliveryStore(),
		Pools:       db.Pools,
		TaskStates:  db.TaskStates,
		Close:       db.Close,
	}
}

// Pools reports the read pool and the one write connection.
func (db *DB) Pools() []store.PoolStats {
	return []store.PoolStats{poolStats("read", db.r.Stats()), poolStats("write", db.w.Stats())}
}

func poolStats(name string, s sql.DBStats) store.PoolStats {
	return store.PoolStats{Name: name, MaxConns: s.MaxOpenConnections, InUse: s.InUse, Idle: s.Idle,
		Waits: s.WaitCount, WaitTime: s.WaitDuration}
}

// TaskStates counts the tasks by state. It reads every task row: SQLite
// keeps no index by state, and a scan of 10,000 tasks takes a few
// milliseconds; a caller scraping often caches it.
func (db *DB) TaskStates(ctx context.Context) (map[a2a.TaskState]int64, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT state, COUNT(*) FROM a2a_tasks GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	defer rows.Close()
	out := map[a2a.TaskState]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count tasks: %w", err)
		}
		st, _ := a2a.ParseTaskState(name)
		out[st] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	return out, nil
}
