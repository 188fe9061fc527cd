package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// SQLite allows one writer at a time, and with synchronous=FULL every
// commit waits for the disk. Committing each write on its own caps a busy
// server at a few hundred writes a second however many callers it has. The
// writer therefore commits group-wise: one goroutine owns the write
// connection, takes every write that is waiting, runs them in one
// transaction and commits once. Each caller still returns only after the
// commit that holds its write, so an answered write survives a crash, and a
// lone caller waits no longer than before.
type writer struct {
	conn *sql.DB // the single write connection
	// prepared are statements compiled once on conn; a transaction on conn
	// runs them without compiling them again. Filled before the writer
	// starts, read-only after.
	prepared map[string]*sql.Stmt
	ops      chan *writeOp
	quit     chan struct{}
	done     chan struct{}
	stop     sync.Once
	// observe is told the size of each batch that committed (nil: no
	// one); set before the first write.
	observe func(writes int)
}

// A writeOp is one store write. fn runs inside the batch's transaction.
// SQLite undoes a failed statement without aborting the transaction, so
// one caller's constraint failure does not cost the others their writes;
// a write of several statements (atomic) runs inside a savepoint, so that
// when one of its statements fails the ones before it are undone too.
type writeOp struct {
	ctx    context.Context
	fn     func(tx *sql.Tx) error
	atomic bool
	err    chan error
}

// maxBatch bounds one transaction, so a flood of writers still sees
// commits at a steady pace.
const maxBatch = 256

var errClosed = errors.New("sqlite: database is closed")

// startWriter starts the writer of conn with the statements in prepare
// compiled once (see exec).
func startWriter(ctx context.Context, conn *sql.DB, prepare []string) (*writer, error) {
	prepared := make(map[string]*sql.Stmt, len(prepare))
	for _, q := range prepare {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range prepared {
				st.Close()
			}
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
		prepared[q] = st
	}
	w := newWriter(conn, 0)
	w.prepared = prepared
	return w, nil
}

// exec runs query in tx, through its prepared statement when it has one.
// Statements are prepared on the one write connection, which every batch
// transaction runs on, so database/sql reuses them as they are.
func (w *writer) exec(tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := w.prepared[query]; st != nil {
		return tx.Stmt(st).Exec(args...)
	}
	return tx.Exec(query, args...)
}

// queryRow is exec for a query of one row.
func (w *writer) queryRow(tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := w.prepared[query]; st != nil {
		return tx.Stmt(st).QueryRow(args...)
	}
	return tx.QueryRow(query, args...)
}

// newWriter starts a writer whose queue holds up to queued writes not yet
// taken. The store's is unbuffered (a write is handed over only when the
// writer takes it); a test uses a buffer to see the queue fill before it
// lets the writer take it.
func newWriter(conn *sql.DB, queued int) *writer {
	w := &writer{conn: conn, ops: make(chan *writeOp, queued), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// do runs fn in the next group commit and returns once that commit is
// done. Once fn has been handed over, do waits for the outcome even if ctx
// ends: the write may already be durable, and saying otherwise would lie.
func (w *writer) do(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return w.submit(&writeOp{ctx: ctx, fn: fn, err: make(chan error, 1)})
}

// doAtomic is do for a write of several statements: they take effect all
// together or, when fn fails, not at all.
func (w *writer) doAtomic(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return w.submit(&writeOp{ctx: ctx, fn: fn, atomic: true, err: make(chan error, 1)})
}

func (w *writer) submit(op *writeOp) error {
	ctx := op.ctx
	select {
	case w.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.quit:
		return errClosed
	}
	return <-op.err
}

// close stops the writer after the batch in progress; closing twice is
// harmless, as for the database.
func (w *writer) close() {
	w.stop.Do(func() { close(w.quit) })
	<-w.done
	for _, st := range w.prepared {
		st.Close()
	}
}

func (w *writer) run() {
	defer close(w.done)
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op := <-w.ops:
			batch = append(batch[:0], op)
		case <-w.quit:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

func (w *writer) commit(batch []*writeOp) {
	// The batch is shared, so no single caller's context may interrupt
	// it; a caller whose context ended before its turn is skipped.
	ctx := context.Background()
	errs := make([]error, len(batch))
	tx, err := w.conn.BeginTx(ctx, nil)
	if err == nil {
		for i, op := range batch {
			if errs[i] = op.ctx.Err(); errs[i] != nil {
				continue
			}
			if !op.atomic {
				errs[i] = op.fn(tx)
				continue
			}
			var undoErr error
			if errs[i], undoErr = inSavepoint(tx, op.fn); undoErr != nil {
				// The transaction is in a state nobody can vouch for.
				err = undoErr
				break
			}
		}
		if err != nil {
			tx.Rollback()
		} else if cerr := tx.Commit(); cerr != nil {
			err = fmt.Errorf("sqlite: commit: %w", cerr)
		} else if w.observe != nil {
			w.observe(len(batch))
		}
	}
	for i, op := range batch {
		if err != nil && errs[i] == nil {
			errs[i] = err
		}
		op.err <- errs[i]
	}
}

// inSavepoint runs fn so that a failure undoes all its statements. err is
// fn's; undoErr says the savepoint itself could not be taken back, which
// leaves the batch's transaction unusable.
func inSavepoint(tx *sql.Tx, fn func(tx *sql.Tx) error) (err, undoErr error) {
	if _, err := tx.Exec(`SAVEPOINT write_op`); err != nil {
		return err, nil
	}
	if err = fn(tx); err != nil {
		if _, rerr := tx.Exec(`ROLLBACK TO write_op`); rerr != nil {
			return err, fmt.Errorf("sqlite: undo a failed write: %w", rerr)
		}
	}
	if _, rerr := tx.Exec(`RELEASE write_op`); rerr != nil {
		return err, fmt.Errorf("sqlite: release a write: %w", rerr)
	}
	return err, nil
}
