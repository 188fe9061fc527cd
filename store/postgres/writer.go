package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// With synchronous_commit on, every commit waits for the WAL to reach the
// disk, and a transaction per task write caps a busy server at what one
// round trip and one flush per write allow. The task store's writes
// therefore commit group-wise, as store/sqlite's do: a writer takes every
// write that is waiting, sends them as one pgx batch (one round trip; the
// batch ends with a single Sync, so PostgreSQL runs it as one implicit
// transaction) and answers each caller once that transaction has
// committed. A lone caller still waits for one round trip only.
//
// A batch holds at most one write per task, and its writes take their
// locks in task-id order. The first keeps the push statements' "rows this
// transaction wrote" (push.go) meaning "rows this write wrote"; the second
// keeps batches of different replicas, or of this one's other connections,
// from deadlocking on each other's task rows.

// A write is one store write: statements run in order, in one transaction,
// the first one's row scanned into dest (when dest is not empty).
type write struct {
	key   string // the task written
	stmts []stmt
	dest  []any

	ctx  context.Context
	done chan error
}

type stmt struct {
	sql  string
	args []any
}

// newWrite starts the write of task key whose first statement is sql,
// which must return exactly one row when dest is not empty.
func newWrite(key, sql string, args []any, dest ...any) *write {
	return &write{key: key, stmts: []stmt{{sql, args}}, dest: dest}
}

// then appends a statement to w, run after the ones before it in the same
// transaction; its rows, if any, are discarded.
func (w *write) then(sql string, args ...any) *write {
	w.stmts = append(w.stmts, stmt{sql, args})
	return w
}

// maxBatch bounds one transaction, so a flood of writers still sees
// commits at a steady pace.
const maxBatch = 256

// DefaultWriteConns is how many task-write batches are in flight at once
// when Options.WriteConns is zero: one, which leaves the most writes to
// each batch (see Options.WriteConns).
const DefaultWriteConns = 1

var errClosed = errors.New("postgres: database is closed")

type writer struct {
	pool *pgxpool.Pool
	ops  chan *write

	// closing is held for reading by each write being handed over, and
	// for writing by close, which so waits until they have been taken.
	closing sync.RWMutex
	closed  bool
	quit    chan struct{}
	wg      sync.WaitGroup

	writes, txs, trips atomic.Int64
	// observe is told the size of each batch that committed (nil: no
	// one); set before the first write.
	observe func(writes int)
}

// newWriter starts conns goroutines, each sending one batch at a time on
// a connection of pool. queued writes may wait in the queue untaken: the
// store's queue is unbuffered (a write is handed over when a goroutine
// takes it); a test buffers it to see it fill.
func newWriter(pool *pgxpool.Pool, conns, queued int) *writer {
	w := &writer{pool: pool, ops: make(chan *write, queued), quit: make(chan struct{})}
	w.wg.Add(conns)
	for range conns {
		go w.run()
	}
	return w
}

// do runs op in the next batch and returns once it has committed, or
// failed. A write not yet sent when ctx ends is dropped, and do returns
// ctx.Err(). Once op has been sent, do waits for the outcome even if ctx
// ends: the write may already be durable, and saying otherwise would lie;
// only when every caller of the batch has given up is the batch
// cancelled, and then the outcome is the error of the cancelled batch.
func (w *writer) do(ctx context.Context, op *write) error {
	op.ctx, op.done = ctx, make(chan error, 1)
	w.closing.RLock()
	if w.closed {
		w.closing.RUnlock()
		return errClosed
	}
	select {
	case w.ops <- op:
	case <-ctx.Done():
		w.closing.RUnlock()
		return ctx.Err()
	}
	w.closing.RUnlock()
	return <-op.done
}

// close runs the writes handed over so far, answers later ones errClosed
// and returns when the last batch is done; closing twice is harmless.
func (w *writer) close() {
	w.closing.Lock()
	if !w.closed {
		w.closed = true
		close(w.quit)
	}
	w.closing.Unlock()
	w.wg.Wait()
}

func (w *writer) run() {
	defer w.wg.Done()
	var batch, held []*write
	for {
		batch = batch[:0]
		if len(held) == 0 {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			case <-w.quit:
				// close let every write being handed over finish first,
				// so what remains queued is taken below.
				select {
				case op := <-w.ops:
					batch = append(batch, op)
				default:
					return
				}
			}
		}
		batch, held = fill(batch, held, w.ops)
		w.commit(batch)
	}
}

// fill adds to batch the writes held back from the last one, then those
// waiting in ops, up to maxBatch. A write to a task already in the batch
// is held back for the next.
func fill(batch, held []*write, ops <-chan *write) (_, _ []*write) {
	in := make(map[string]bool, len(batch)+len(held))
	for _, op := range batch {
		in[op.key] = true
	}
	var later []*write
	add := func(op *write) {
		if in[op.key] || len(batch) == maxBatch {
			later = append(later, op)
			return
		}
		in[op.key] = true
		batch = append(batch, op)
	}
	for _, op := range held {
		add(op)
	}
	for len(batch) < maxBatch {
		select {
		case op := <-ops:
			add(op)
			continue
		default:
		}
		break
	}
	return batch, later
}

func (w *writer) commit(batch []*write) {
	slices.SortFunc(batch, func(a, b *write) int { return cmp.Compare(a.key, b.key) })
	w.send(batch)
}

// send runs ws as one transaction and answers each of them. When a
// statement fails, PostgreSQL rolls the whole transaction back: the write
// it belongs to is run again alone, so that its error is its own, and the
// rest again together. A failure no one write is to blame for (a
// deadlock, a serialization failure, a commit that failed) runs every
// write again alone; one whose outcome is unknown (the connection broke)
// is every caller's.
func (w *writer) send(ws []*write) {
	for {
		ws = slices.DeleteFunc(ws, func(op *write) bool {
			if err := op.ctx.Err(); err != nil {
				op.done <- err // not sent, or sent and rolled back
				return true
			}
			return false
		})
		if len(ws) == 0 {
			return
		}
		at, err := w.exec(ws)
		switch {
		case err == nil:
			w.txs.Add(1)
			w.writes.Add(int64(len(ws)))
			if w.observe != nil {
				w.observe(len(ws))
			}
			answer(ws, nil)
			return
		case len(ws) == 1 || !rolledBack(err):
			answer(ws, err)
			return
		case at < 0 || contention(err):
			for i := range ws {
				w.send(ws[i : i+1 : i+1])
			}
			return
		}
		w.send([]*write{ws[at]})
		ws = slices.Delete(ws, at, at+1)
	}
}

func answer(ws []*write, err error) {
	for _, op := range ws {
		op.done <- err
	}
}

// exec sends ws as one batch and reads their results. at is the index of
// the write whose statement failed, or -1 when the error is not one
// write's.
func (w *writer) exec(ws []*write) (at int, err error) {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(ws)*len(ws[0].stmts))}
	for _, op := range ws {
		for _, st := range op.stmts {
			b.Queue(st.sql, st.args...)
		}
	}
	w.trips.Add(1)
	ctx, cancel := abandoned(ws)
	defer cancel()
	br := w.pool.SendBatch(ctx, b)
	at = -1
	for i, op := range ws {
		if err = readResults(br, op); err != nil {
			var pre pgx.ErrPreprocessingBatch
			if !errors.As(err, &pre) {
				at = i
			}
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return at, err
}

// abandoned returns a context for the batch ws that ends when every
// caller's has: no one caller's cancellation may interrupt a batch the
// others share, but a batch nobody waits for any more (the database is
// stuck, every caller timed out) is given up, as one caller's write was
// before writes were batched.
func abandoned(ws []*write) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	left := atomic.Int64{}
	left.Store(int64(len(ws)))
	stops := make([]func() bool, 0, len(ws))
	for _, op := range ws {
		if op.ctx.Done() == nil {
			// This caller never gives up, so neither does the batch.
			for _, stop := range stops {
				stop()
			}
			return ctx, cancel
		}
		stops = append(stops, context.AfterFunc(op.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// readResults reads op's results from br, the first row into op.dest.
func readResults(br pgx.BatchResults, op *write) error {
	for i := range op.stmts {
		var err error
		if i == 0 && len(op.dest) > 0 {
			err = br.QueryRow().Scan(op.dest...)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rolledBack reports whether err leaves nothing of the batch committed
// and is worth sending its writes again for: the server refused a
// statement or the commit, or pgx refused the batch before its statements
// were sent. A connection that could not be made is every write's error.
func rolledBack(err error) bool {
	var (
		pg   *pgconn.PgError
		pre  pgx.ErrPreprocessingBatch
		conn *pgconn.ConnectError
	)
	return (errors.As(err, &pg) || errors.As(err, &pre)) && !errors.As(err, &conn)
}

// contention reports whether err is PostgreSQL ending a transaction that
// collided with another: a deadlock or a serialization failure.
func contention(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}

// WriteStats counts the task store's writes (Create, Update, Append and
// the Recoverer's Settle) since Open.
type WriteStats struct {
	// Writes is the number of writes whose transaction committed,
	// including those that changed nothing (a write that finds the task's
	// version moved and returns ErrConcurrentModification).
	Writes int64
	// Transactions is the number of transactions that committed them; a
	// transaction holds up to 256 writes, all that were waiting.
	Transactions int64
	// RoundTrips is the number of batches sent, committed or not: one
	// per transaction, plus one for each attempt that failed. A
	// connection's first batch with a statement it has not yet prepared
	// takes one more (pgx prepares the statement first), not counted.
	RoundTrips int64
}

// WriteStats returns the counts of the task store's writes so far.
func (db *DB) WriteStats() WriteStats {
	w := db.wr
	return WriteStats{Writes: w.writes.Load(), Transactions: w.txs.Load(), RoundTrips: w.trips.Load()}
}
