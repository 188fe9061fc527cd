package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
)

// The tests below see group commit happen rather than hope for it: they
// keep the writer's one connection waiting on a row lock the test holds,
// wait until every write they issue is in its queue (or answered), then
// release the lock, and read which writes shared a transaction from the
// transaction id each write returns. Their writer's queue is buffered so
// its length can be watched; the store's is unbuffered, which the
// writer's batching does not depend on: it takes whatever is waiting
// either way.

func openWriterDB(t *testing.T, opts *Options) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, pgtest.URL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.pool.Exec(ctx, `CREATE TABLE w (k text PRIMARY KEY);
		CREATE TABLE wd (k text, UNIQUE (k) DEFERRABLE INITIALLY DEFERRED);
		INSERT INTO wd VALUES ('taken')`); err != nil {
		t.Fatal(err)
	}
	return db
}

// insert is a write of key k into w that returns its transaction's id.
func insert(k string, xid *string) *write {
	return newWrite(k, `INSERT INTO w (k) VALUES ($1) RETURNING pg_current_xact_id()::text`, []any{k}, xid)
}

// holdWriter gives db a writer of one connection whose queue holds up to
// queued writes and keeps it inside a batch, waiting for a lock, until
// release is called, so that writes issued meanwhile queue up behind it.
func holdWriter(t *testing.T, db *DB, queued int) (release func()) {
	t.Helper()
	ctx := context.Background()
	db.wr.close()
	db.wr = newWriter(db.pool, 1, queued)
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO w VALUES ('held')`); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		held <- db.wr.do(ctx, newWrite("held", `INSERT INTO w VALUES ('held') ON CONFLICT DO NOTHING`, nil))
	}()
	// Polled only to wait: the batch stays blocked until release.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after 30s, the held write is not waiting for its lock")
		}
		time.Sleep(time.Millisecond)
	}
	return func() {
		t.Helper()
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-held; err != nil {
			t.Fatalf("held write: %v", err)
		}
	}
}

// waitQueued returns once n writes are in db's writer queue or answered.
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

// issue runs the writes concurrently and returns a wait for their errors.
func issue(db *DB, ctxs []context.Context, ops []*write, answered *atomic.Int64) (wait func() []error) {
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			ctx := context.Background()
			if ctxs != nil && ctxs[i] != nil {
				ctx = ctxs[i]
			}
			errs[i] = db.wr.do(ctx, op)
			answered.Add(1)
		})
	}
	return func() []error { wg.Wait(); return errs }
}

func keys(db *DB, t *testing.T, table string) []string {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT k FROM `+table+` ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestWriterGroupCommit(t *testing.T) {
	const n = 20
	tests := []struct {
		name string
		bad  map[int]string // writes that fail: their index and SQLSTATE
		// want* are the batches sent and committed after the held one.
		wantTrips, wantTxs int64
	}{
		{"all good", nil, 1, 1},
		// The batch fails at the bad write, which runs again alone and
		// fails again; the rest run again together.
		{"one bad", map[int]string{7: "22021"}, 3, 1},
		{"two bad", map[int]string{3: "22021", 15: "22021"}, 5, 1},
		// A commit that fails is no one statement's: every write runs
		// again alone.
		{"commit fails", map[int]string{11: "23505"}, 1 + n, n - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openWriterDB(t, nil)
			release := holdWriter(t, db, n)
			xids := make([]string, n)
			ops := make([]*write, n)
			var want []string
			for i := range ops {
				k := fmt.Sprintf("k%02d", i)
				switch tt.bad[i] {
				case "22021": // PostgreSQL's text holds no NUL
					ops[i] = insert(k+"\x00", &xids[i])
				case "23505":
					ops[i] = newWrite(k, `INSERT INTO wd VALUES ('taken') RETURNING pg_current_xact_id()::text`, nil, &xids[i])
				default:
					ops[i] = insert(k, &xids[i])
					want = append(want, k)
				}
			}
			var answered atomic.Int64
			wait := issue(db, nil, ops, &answered)
			waitQueued(t, db, &answered, n)
			release()
			errs := wait()
			for i, err := range errs {
				var pg *pgconn.PgError
				switch code := tt.bad[i]; {
				case code == "" && err != nil:
					t.Errorf("write %d: %v", i, err)
				case code != "" && (!errors.As(err, &pg) || pg.Code != code):
					t.Errorf("write %d: error %v, want SQLSTATE %s", i, err, code)
				}
			}
			if got := keys(db, t, "w"); !slices.Equal(got, append([]string{"held"}, want...)) {
				t.Errorf("rows %q, want held and %q", got, want)
			}
			if tt.name != "commit fails" {
				var shared []string
				for i, x := range xids {
					if tt.bad[i] == "" {
						shared = append(shared, x)
					}
				}
				slices.Sort(shared)
				if shared = slices.Compact(shared); len(shared) != 1 {
					t.Errorf("the good writes committed in transactions %q, want one", shared)
				}
			}
			// The held write's batch counts too.
			wantStats := WriteStats{Writes: int64(1 + len(want)), Transactions: 1 + tt.wantTxs, RoundTrips: 1 + tt.wantTrips}
			if got := db.WriteStats(); got != wantStats {
				t.Errorf("WriteStats() = %+v, want %+v", got, wantStats)
			}
		})
	}
}

func TestWriterCancelledCaller(t *testing.T) {
	db := openWriterDB(t, nil)
	release := holdWriter(t, db, 4)
	ctx, cancel := context.WithCancel(context.Background())
	xids := make([]string, 2)
	var answered atomic.Int64
	wait := issue(db, []context.Context{ctx, nil}, []*write{insert("gone", &xids[0]), insert("kept", &xids[1])}, &answered)
	waitQueued(t, db, &answered, 2)
	cancel()
	release()
	errs := wait()
	if !errors.Is(errs[0], context.Canceled) || errs[1] != nil {
		t.Errorf("errors %v; want context.Canceled, nil", errs)
	}
	if got := keys(db, t, "w"); !slices.Equal(got, []string{"held", "kept"}) {
		t.Errorf("rows %q, want held and kept", got)
	}
	// A caller whose context has ended is refused before its write is
	// taken.
	if err := db.wr.do(ctx, insert("late", new(string))); !errors.Is(err, context.Canceled) {
		t.Errorf("write with an ended context: %v, want context.Canceled", err)
	}
}

func TestWriterCloseDrains(t *testing.T) {
	db := openWriterDB(t, nil)
	const n = 10
	release := holdWriter(t, db, n)
	ops := make([]*write, n)
	var want []string
	for i := range ops {
		k := fmt.Sprintf("k%02d", i)
		ops[i] = insert(k, new(string))
		want = append(want, k)
	}
	var answered atomic.Int64
	wait := issue(db, nil, ops, &answered)
	waitQueued(t, db, &answered, n)
	closed := make(chan struct{})
	go func() { db.wr.close(); close(closed) }()
	deadline := time.Now().Add(30 * time.Second)
	for !isClosed(db.wr) {
		if time.Now().After(deadline) {
			t.Fatal("after 30s, close has not started")
		}
		time.Sleep(time.Millisecond)
	}
	if err := db.wr.do(context.Background(), insert("after", new(string))); !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v, want errClosed", err)
	}
	select {
	case <-closed:
		t.Fatal("close returned with writes waiting")
	default:
	}
	release()
	<-closed
	for i, err := range wait() {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got := keys(db, t, "w"); !slices.Equal(got, append([]string{"held"}, want...)) {
		t.Errorf("rows %q, want held and %q", got, want)
	}
	// The store's writes say so too, after DB.Close.
	db.Close()
	_, err := db.TaskStore().Create(context.Background(), a2asrv.Scope{Owner: "o"}, &a2a.Task{ID: "t"})
	if !errors.Is(err, errClosed) {
		t.Errorf("Create after Close: %v, want errClosed", err)
	}
}

func isClosed(w *writer) bool {
	w.closing.RLock()
	defer w.closing.RUnlock()
	return w.closed
}

// Two writes to one task in one batch would each see the task row as
// written by their transaction; the second is held back to the next batch,
// where it finds the version moved, and queues no notification.
func TestWriterOneWritePerTask(t *testing.T) {
	db := openWriterDB(t, nil)
	ctx := context.Background()
	ts := db.TaskStore()
	scope := a2asrv.Scope{Owner: "o"}
	task := &a2a.Task{ID: "t1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	if _, err := ts.Create(ctx, scope, task); err != nil {
		t.Fatal(err)
	}
	if err := db.PushConfigStore().Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "p", TaskID: "t1", URL: "https://hooks.example.com/p"}); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, db, 4)
	errs := make([]error, 3)
	var (
		answered atomic.Int64
		wg       sync.WaitGroup
	)
	for i := range errs {
		wg.Go(func() {
			next := *task
			next.Status.State = a2a.TaskStateCompleted
			if i == 2 {
				_, errs[i] = ts.Create(ctx, scope, &a2a.Task{ID: "t2", ContextID: "c"})
			} else {
				_, errs[i] = ts.Update(ctx, scope, &next, 1)
			}
			answered.Add(1)
		})
	}
	waitQueued(t, db, &answered, len(errs))
	release()
	wg.Wait()
	won := 0
	for _, err := range errs[:2] {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, a2asrv.ErrConcurrentModification):
			t.Errorf("Update: %v", err)
		}
	}
	if won != 1 || errs[2] != nil {
		t.Errorf("errors %v; want one update to win, the other to lose, the create to succeed", errs)
	}
	if st := db.WriteStats(); st.Transactions != 3 {
		t.Errorf("%d transactions, want 3: the held write's, the batch's, the held-back update's", st.Transactions)
	}
	var queued int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM a2a_push_outbox WHERE task_id = 't1'`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 2 { // the task at Put, and the winning update
		t.Errorf("%d notifications queued, want 2", queued)
	}
}

// Writers on distinct tasks, many at once, each see their own versions,
// whatever number of batches is in flight.
func TestWriterConcurrentTasks(t *testing.T) {
	for _, conns := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(conns), func(t *testing.T) {
			db := openWriterDB(t, &Options{WriteConns: conns})
			ctx := context.Background()
			ts := db.TaskStore()
			scope := a2asrv.Scope{Owner: "o"}
			const tasks = 64
			var wg sync.WaitGroup
			errs := make(chan error, tasks)
			for i := range tasks {
				wg.Go(func() {
					errs <- runTask(ctx, ts, scope, fmt.Sprintf("t%03d", i))
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			for i := range tasks {
				id := fmt.Sprintf("t%03d", i)
				got, v, err := ts.Get(ctx, scope, id)
				if err != nil || v != 4 || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 {
					t.Errorf("Get(%s) = version %d, %+v, %v; want version 4, completed, one artifact", id, v, got, err)
				}
			}
			st := db.WriteStats()
			if st.Writes != 3*tasks || st.Transactions > st.Writes || st.RoundTrips < st.Transactions {
				t.Errorf("stats %+v; want %d writes, no more transactions than writes, no fewer round trips", st, 3*tasks)
			}
			t.Logf("%+v", st)
		})
	}
}

// runTask creates task id, appends two events to it and updates it.
func runTask(ctx context.Context, ts a2asrv.TaskStore, scope a2asrv.Scope, id string) error {
	task := &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
	v, err := ts.Create(ctx, scope, task)
	if err != nil {
		return err
	}
	events := []*a2a.StreamResponse{
		{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: id, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}},
		{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: id, Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("x")}}}},
	}
	if v, err = ts.Append(ctx, scope, id, v, events, nil); err != nil {
		return err
	}
	got, gv, err := ts.Get(ctx, scope, id)
	if err != nil || gv != v {
		return fmt.Errorf("Get(%s) after append: version %d, %v; want %d", id, gv, err, v)
	}
	got.Status.State = a2a.TaskStateCompleted
	if _, err = ts.Update(ctx, scope, got, v); err != nil {
		return err
	}
	return nil
}

// Two replicas (and two writers on one of them) racing to write one task
// at the same version: exactly one wins each round, and each win queues
// its notification once.
func TestWriterConflictsAcrossReplicas(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	scope := a2asrv.Scope{Owner: "o"}
	task := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	v, err := dbs[0].TaskStore().Create(ctx, scope, task)
	if err != nil {
		t.Fatal(err)
	}
	if err := dbs[1].PushConfigStore().Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "p", TaskID: "t", URL: "https://hooks.example.com/p"}); err != nil {
		t.Fatal(err)
	}
	writers := []a2asrv.TaskStore{dbs[0].TaskStore(), dbs[1].TaskStore(), dbs[1].TaskStore()}
	const rounds = 40
	for r := range rounds {
		next := make([]a2asrv.Version, len(writers))
		errs := make([]error, len(writers))
		var wg sync.WaitGroup
		for i, s := range writers {
			wg.Go(func() {
				if r%2 == 0 {
					u := *task
					u.Metadata = map[string]any{"writer": i}
					next[i], errs[i] = s.Update(ctx, scope, &u, v)
					return
				}
				ev := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
				next[i], errs[i] = s.Append(ctx, scope, "t", v, []*a2a.StreamResponse{ev}, nil)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both wrote version %d", r, winner, i, v)
			case err == nil:
				winner = i
			case !errors.Is(err, a2asrv.ErrConcurrentModification):
				t.Fatalf("round %d: writer %d: %v", r, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won: %v", r, errs)
		}
		v = next[winner]
	}
	_, got, err := dbs[1].TaskStore().Get(ctx, scope, "t")
	if err != nil || got != v {
		t.Errorf("Get: version %d, %v; want %d", got, err, v)
	}
	var queued int
	if err := dbs[0].pool.QueryRow(ctx, `SELECT count(*) FROM a2a_push_outbox WHERE task_id = 't'`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 1+rounds { // the task at Put, then one per win
		t.Errorf("%d notifications queued, want %d", queued, 1+rounds)
	}
}

// BenchmarkParallelCreate creates tasks from many goroutines at once and
// reports the transactions and round trips each took.
func BenchmarkParallelCreate(b *testing.B) {
	for _, conns := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			db, err := Open(context.Background(), pgtest.URL(b), &Options{WriteConns: conns})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ts := db.TaskStore()
			scope := a2asrv.Scope{Owner: "o"}
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					id := fmt.Sprintf("t%d", next.Add(1))
					if _, err := ts.Create(ctx, scope, &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			st := db.WriteStats()
			b.ReportMetric(float64(st.Transactions)/float64(b.N), "tx/op")
			b.ReportMetric(float64(st.RoundTrips)/float64(b.N), "trips/op")
		})
	}
}

// Batches of two replicas that write the same tasks take their row locks
// in one order, so they wait for each other but never deadlock.
func TestWriterNoDeadlocks(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, url, &Options{WriteConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	scope := a2asrv.Scope{Owner: "o"}
	const tasks = 6
	for i := range tasks {
		if _, err := dbs[0].TaskStore().Create(ctx, scope, &a2a.Task{ID: fmt.Sprint(i), ContextID: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	deadlocks := func() (n int64) {
		if err := dbs[0].pool.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := deadlocks()
	var (
		wg   sync.WaitGroup
		wins atomic.Int64
	)
	for w := range 16 {
		s := dbs[w%2].TaskStore()
		wg.Go(func() {
			for r := range 30 {
				id := fmt.Sprint((w + r) % tasks)
				task, v, err := s.Get(ctx, scope, id)
				if err == nil {
					_, err = s.Update(ctx, scope, task, v)
				}
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, a2asrv.ErrConcurrentModification):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The statistics collector reports with a delay; deadlocks so far
	// have been counted once pg_stat_force_next_flush has run.
	if _, err := dbs[0].pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	if n := deadlocks() - before; n != 0 {
		t.Errorf("%d deadlocks", n)
	}
	t.Logf("%d of %d updates won; replica stats %+v, %+v", wins.Load(), 16*30, dbs[0].WriteStats(), dbs[1].WriteStats())
}
