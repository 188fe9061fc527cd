package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Writes that queue up while a commit is in progress share the next
// commit; a failing statement, or a caller that gave up before its turn,
// costs only that caller its write.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.wr.do(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	holding := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.wr.do(ctx, func(tx *sql.Tx) error {
			close(holding)
			<-release // hold this batch open while the others queue up
			_, err := tx.Exec(`INSERT INTO t VALUES ('first')`)
			return err
		})
	}()
	<-holding // the others must queue behind it, not overtake it

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	gone, cancel := context.WithCancel(ctx)
	cancel()
	for i := range n {
		wg.Go(func() {
			opCtx := ctx
			if i == 7 {
				opCtx = gone
			}
			key := fmt.Sprint(i)
			if i == 3 {
				key = "first" // violates the primary key
			}
			errs[i] = db.wr.do(opCtx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`INSERT INTO t VALUES (?)`, key)
				return err
			})
		})
	}
	time.Sleep(50 * time.Millisecond) // let them queue behind the held batch
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
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
	var count int
	if err := db.r.QueryRow(`SELECT count(*) FROM t`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if want := 1 + n - 2; count != want {
		t.Errorf("%d rows committed, want %d", count, want)
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
