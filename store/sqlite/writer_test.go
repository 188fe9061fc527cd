package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests below see group commit happen rather than hope for it: they
// keep the writer busy in a transaction, wait until every write they issue
// is in its queue (or already answered), then let the writer go, and read
// which writes shared a transaction from the *sql.Tx each write ran in.
// Their writer's queue is buffered so its length can be watched; the
// store's is unbuffered, which the writer's batching does not depend on:
// it takes whatever is waiting either way.

// openTestDB opens a database with a table t for the writes.
func openTestDB(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.wr.do(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

// holdWriter gives db a writer whose queue holds up to queued writes and
// keeps it inside a transaction until release is called, so that writes
// issued meanwhile queue up behind it.
func holdWriter(t *testing.T, db *DB, queued int) (release func()) {
	t.Helper()
	db.wr.close()
	db.wr = newWriter(db.w, queued)
	holding, unblock := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.wr.do(context.Background(), func(tx *sql.Tx) error {
			close(holding)
			<-unblock
			_, err := tx.Exec(`INSERT INTO t VALUES ('held')`)
			return err
		})
	}()
	<-holding
	return func() {
		t.Helper()
		close(unblock)
		if err := <-held; err != nil {
			t.Fatalf("held write: %v", err)
		}
	}
}

// waitQueued returns once n writes are in db's writer queue or answered.
// It polls, but only to wait: the outcome does not depend on how long.
func waitQueued(t *testing.T, db *DB, answered *atomic.Int64, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(db.wr.ops)+int(answered.Load()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, %d writes queued and %d answered, want %d in all", len(db.wr.ops), answered.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batches records the transaction each write ran in.
type batches struct {
	mu    sync.Mutex
	order []*sql.Tx
	size  map[*sql.Tx]int
}

func (b *batches) ran(tx *sql.Tx) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.size == nil {
		b.size = map[*sql.Tx]int{}
	}
	if _, ok := b.size[tx]; !ok {
		b.order = append(b.order, tx)
	}
	b.size[tx]++
}

// sizes lists the batch sizes in commit order (batches commit one after
// another, so the order their first writes ran in is the commit order).
func (b *batches) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int
	for _, tx := range b.order {
		out = append(out, b.size[tx])
	}
	return out
}

func countRows(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Writes that queue up while a commit is in progress share the next
// commit, up to maxBatch writes per transaction.
func TestGroupCommitBatchesTheQueue(t *testing.T) {
	tests := []struct {
		queued int
		want   []int
	}{
		{1, []int{1}},
		{20, []int{20}},
		{maxBatch, []int{maxBatch}},
		{maxBatch + 3, []int{maxBatch, 3}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.queued), func(t *testing.T) {
			db := openTestDB(t)
			release := holdWriter(t, db, tc.queued)
			var b batches
			var answered atomic.Int64
			errs := make([]error, tc.queued)
			var wg sync.WaitGroup
			for i := range tc.queued {
				wg.Go(func() {
					defer answered.Add(1)
					errs[i] = db.wr.do(context.Background(), func(tx *sql.Tx) error {
						b.ran(tx)
						_, err := tx.Exec(`INSERT INTO t VALUES (?)`, fmt.Sprint(i))
						return err
					})
				})
			}
			waitQueued(t, db, &answered, tc.queued)
			release()
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if got := b.sizes(); !slices.Equal(got, tc.want) {
				t.Errorf("batch sizes %v, want %v", got, tc.want)
			}
			if got, want := countRows(t, db), 1+tc.queued; got != want {
				t.Errorf("%d rows committed, want %d", got, want)
			}
		})
	}
}

// Within one batch, a failing statement, or a caller that gave up before
// its turn, costs only that caller its write.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := openTestDB(t)
	const n = 20
	release := holdWriter(t, db, n)

	var b batches
	var answered atomic.Int64
	errs := make([]error, n)
	var wg sync.WaitGroup
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range n {
		wg.Go(func() {
			defer answered.Add(1)
			ctx := context.Background()
			if i == 7 {
				ctx = gone // answered at once, or skipped in the batch
			}
			key := fmt.Sprint(i)
			if i == 3 {
				key = "held" // violates the primary key
			}
			errs[i] = db.wr.do(ctx, func(tx *sql.Tx) error {
				b.ran(tx)
				_, err := tx.Exec(`INSERT INTO t VALUES (?)`, key)
				return err
			})
		})
	}
	waitQueued(t, db, &answered, n)
	release()
	wg.Wait()
	for i, err := range errs {
		switch i {
		case 3:
			if err == nil {
				t.Error("duplicate key accepted")
			}
		case 7:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled caller: %v, want context.Canceled", err)
			}
		default:
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		}
	}
	// Every write but the cancelled one ran, all in one transaction.
	if got, want := b.sizes(), []int{n - 1}; !slices.Equal(got, want) {
		t.Errorf("batch sizes %v, want %v", got, want)
	}
	if got, want := countRows(t, db), 1+n-2; got != want {
		t.Errorf("%d rows committed, want %d", got, want)
	}
}

// A write of several statements takes effect whole or not at all, even in
// a batch with other writes: its first statement is undone when a later one
// fails, and its batch-mates commit.
func TestAtomicWriteUndoesItsStatements(t *testing.T) {
	db := openTestDB(t)
	const n = 6
	release := holdWriter(t, db, n)
	var b batches
	var answered atomic.Int64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer answered.Add(1)
			errs[i] = db.wr.doAtomic(context.Background(), func(tx *sql.Tx) error {
				b.ran(tx)
				if _, err := tx.Exec(`INSERT INTO t VALUES (?)`, fmt.Sprint("first-", i)); err != nil {
					return err
				}
				second := fmt.Sprint("second-", i)
				if i == 2 {
					second = "held" // violates the primary key
				}
				_, err := tx.Exec(`INSERT INTO t VALUES (?)`, second)
				return err
			})
		})
	}
	waitQueued(t, db, &answered, n)
	release()
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got, want := b.sizes(), []int{n}; !slices.Equal(got, want) {
		t.Errorf("batch sizes %v, want %v: the writes must share a transaction for this test to mean anything", got, want)
	}
	var firstOfFailed int
	if err := db.r.QueryRow(`SELECT count(*) FROM t WHERE k = 'first-2'`).Scan(&firstOfFailed); err != nil {
		t.Fatal(err)
	}
	if firstOfFailed != 0 {
		t.Error("the failed write's first statement was committed")
	}
	if got, want := countRows(t, db), 1+2*(n-1); got != want {
		t.Errorf("%d rows committed, want %d", got, want)
	}
}

func TestWriteAfterCloseFails(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = db.wr.do(context.Background(), func(tx *sql.Tx) error { return nil })
	if !errors.Is(err, errClosed) {
		t.Errorf("write after Close: %v, want errClosed", err)
	}
}
