package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlmigrate"
	"novaos.dev/novaos/store/lease"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory-lock key that serializes migrations across
// replicas ("novaos" in ASCII). Advisory locks are per database, so
// unrelated databases on one server do not contend.
const migrationLock int64 = 0x6e6f76616f73

// Options tunes Open. Nil means the defaults.
type Options struct {
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and
	// the number of CPUs). A pool_max_conns parameter in the URL also works.
	MaxConns int32
	// StatementTimeout is the longest one statement of the pool's sessions
	// may run before the server cancels it (SQLSTATE 57014), so a stuck
	// query cannot hold a connection and a request forever. Zero means a
	// statement_timeout parameter in the URL, else
	// DefaultStatementTimeout; negative means none is set (the server's
	// own setting applies). It is sent when each connection starts, so a
	// pooler in front must pass startup parameters through. Migrations
	// run without it.
	StatementTimeout time.Duration
	// Logger receives migration progress (default: discarded).
	Logger *slog.Logger
	// Lease times this handle's instance lease (see Recoverer); nil means
	// store/lease's defaults.
	Lease *lease.Options
	// MemoryIndexBytes bounds the in-process memory search index (see
	// MemoryStore; default DefaultMemoryIndexBytes).
	MemoryIndexBytes int64
	// WriteConns is how many batches of task writes may be in flight at
	// once, each on a pool connection of its own (default
	// DefaultWriteConns, 1). More overlap one batch's round trip and
	// commit with the next one's, but split the waiting writes into more,
	// smaller transactions, each costing the server a commit. On a 2-CPU
	// host running server, load and PostgreSQL, where CPU is what runs
	// out, SendMessage cost the least CPU per request with 1 (about 310
	// µs against 340 with 2 and 390 with 4); the store alone, 32
	// goroutines creating tasks with CPU to spare, ran faster with 4 (250–
	// 310 µs a create against 380–430 with 1, BenchmarkParallelCreate).
	// See WriteStats.
	WriteConns int
	// ObserveBatch, when set, is told the number of task writes of each
	// batch that committed, for metrics. It runs on a writer goroutine
	// between batches: it must return at once.
	ObserveBatch func(writes int)
}

// DefaultStatementTimeout is the statement timeout when
// Options.StatementTimeout is zero and the URL names none.
const DefaultStatementTimeout = 30 * time.Second

// DefaultMemoryIndexBytes bounds the memory search index when
// Options.MemoryIndexBytes is zero: 256 MiB.
const DefaultMemoryIndexBytes = memindex.DefaultMaxBytes

// DB is an open PostgreSQL connection pool. Its stores are safe for
// concurrent use; it must be closed after the last use of any of them.
type DB struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	wr       *writer       // commits the task store's writes (writer.go)
	instance string        // this handle's lease id, recorded on every task write
	lease    *lease.Keeper // renews it (leases.go)
	feed     *feed         // the other replicas' task writes (feed.go)
	// stopAnalyzer ends the analysis of young tables (analyze.go).
	stopAnalyzer   func()
	analyzerPasses atomic.Int64 // passes the analyzer made, for tests
	closeOnce      sync.Once

	index          *memindex.Cache // memory search structures by partition (memory_index.go)
	vector         vectorIndex     // pgvector, when used (memory_vector.go)
	vectorSearches atomic.Int64    // searches pgvector answered, for tests
}

// Open connects to the database at url (a postgres:// URL or a
// keyword/value string) and brings its schema up to date. Errors never
// repeat the URL, which may hold a password.
func Open(ctx context.Context, url string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	lo, err := o.Lease.Resolve()
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message quotes the connection string; keep only that it
		// failed to parse.
		return nil, errors.New("postgres: open: cannot parse the connection string")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	setStatementTimeout(cfg.ConnConfig.RuntimeParams, o.StatementTimeout)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db := &DB{pool: pool, log: o.Logger}
	db.index = memindex.New(indexSource{db}, &memindex.Options{MaxBytes: o.MemoryIndexBytes, Logger: o.Logger})
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.setupVector(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.startLease(ctx, lo); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.startFeed(ctx); err != nil {
		db.stopLease()
		pool.Close()
		return nil, err
	}
	conns := o.WriteConns
	if conns <= 0 {
		conns = DefaultWriteConns
	}
	db.wr = newWriter(pool, conns, 0)
	db.wr.observe = o.ObserveBatch
	db.startAnalyzer()
	return db, nil
}

// Close waits for the task writes already handed to the database to be
// answered, refuses later ones, and closes every connection. Stores
// obtained from db must not be used afterwards.
func (db *DB) Close() error {
	db.wr.close()
	db.closeOnce.Do(func() {
		db.stopAnalyzer()
		db.feed.stop()
		db.stopLease()
	})
	db.pool.Close()
	return nil
}

// setStatementTimeout puts the statement_timeout startup parameter of
// Options.StatementTimeout into params.
func setStatementTimeout(params map[string]string, d time.Duration) {
	switch {
	case d < 0:
		delete(params, "statement_timeout")
	case d == 0:
		if _, ok := params["statement_timeout"]; !ok {
			params["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
		}
	default:
		// In whole milliseconds, PostgreSQL's unit, rounded up: 0 would
		// mean no timeout at all.
		params["statement_timeout"] = strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
	}
}

// withoutStatementTimeout lifts the statement timeout for the rest of tx:
// a schema change, and the advisory lock it waits on while another replica
// makes its own, may rightly take longer than any request should.
func withoutStatementTimeout(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`)
	return err
}

// migrate applies pending migrations in one transaction. The transaction
// holds pg_advisory_xact_lock, the transaction-scoped form of
// pg_advisory_lock: it is released at commit or rollback, including when the
// connection dies, so a crashed replica cannot leave it held.
func (db *DB) migrate(ctx context.Context) error { return db.migrateTo(ctx, 0) }

// migrateTo applies the pending migrations up to version to, or every one
// when to is 0; a test stops at an older version to check what a later
// migration does to the data it finds.
func (db *DB) migrateTo(ctx context.Context, to int) error {
	all, err := sqlmigrate.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if to > 0 && to < len(all) {
		all = all[:to]
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := withoutStatementTimeout(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		todo, err := sqlmigrate.Pending(all, applied)
		if err != nil {
			return err
		}
		for _, m := range todo {
			// Without arguments pgx uses the simple protocol, which runs
			// a file of several statements.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			db.log.InfoContext(ctx, "postgres: applied migration", "name", m.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// Stores gives the database's stores as one value, shared with every
// replica on the same database; its Close closes this handle.
func (db *DB) Stores() *store.Stores {
	return &store.Stores{
		Kind:        "postgres",
		Shared:      true,
		Tasks:       db.TaskStore(),
		PushConfigs: db.PushConfigStore(),
		PushOutbox:  db.PushOutbox(),
		Feed:        db.TaskFeed(),
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
		Listener:    db.ListenerStatus,
		Pools:       db.Pools,
		TaskStates:  db.TaskStates,
		Close:       db.Close,
	}
}

// Pools reports the connection pool.
func (db *DB) Pools() []store.PoolStats {
	s := db.pool.Stat()
	return []store.PoolStats{{Name: "main", MaxConns: int(s.MaxConns()), InUse: int(s.AcquiredConns()), Idle: int(s.IdleConns()),
		Waits: s.EmptyAcquireCount(), WaitTime: s.EmptyAcquireWaitTime()}}
}

// TaskStates counts the tasks by state: every replica's, as they share
// the table.
func (db *DB) TaskStates(ctx context.Context) (map[a2a.TaskState]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT state, count(*) FROM a2a_tasks GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("postgres: count tasks: %w", err)
	}
	out := map[a2a.TaskState]int64{}
	var name string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		st, _ := a2a.ParseTaskState(name)
		out[st] += n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: count tasks: %w", err)
	}
	return out, nil
}
