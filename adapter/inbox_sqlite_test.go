package adapter_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/secret"
)

// inboxOpeners open each SQLite store at a path, so that the file rules
// are checked for both.
var inboxOpeners = []struct {
	name string
	open func(path string) (io.Closer, error)
}{
	{"inbox", func(p string) (io.Closer, error) { return adapter.OpenSQLiteInbox(p, nil) }},
	{"outbox", func(p string) (io.Closer, error) { return adapter.OpenSQLiteOutbox(p, nil) }},
}

func TestSQLiteStoreFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not carry ACLs on Windows")
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, path string) // makes the files before the open
		wantErr error                           // nil: opens; ErrStoreFileMode or any other (errAny)
	}{
		{"created owner-only", func(*testing.T, string) {}, nil},
		{"an owner-only file opens", func(t *testing.T, p string) { inboxWriteFile(t, p, 0o600) }, nil},
		{"world-readable file is refused", func(t *testing.T, p string) { inboxWriteFile(t, p, 0o644) }, adapter.ErrStoreFileMode},
		{"group-readable file is refused", func(t *testing.T, p string) { inboxWriteFile(t, p, 0o640) }, adapter.ErrStoreFileMode},
		{"other-writable file is refused", func(t *testing.T, p string) { inboxWriteFile(t, p, 0o602) }, adapter.ErrStoreFileMode},
		{"a readable journal is refused", func(t *testing.T, p string) { inboxWriteFile(t, p+"-wal", 0o644) }, adapter.ErrStoreFileMode},
		{"a symbolic link is refused", func(t *testing.T, p string) {
			inboxWriteFile(t, p+".real", 0o600)
			if err := os.Symlink(p+".real", p); err != nil {
				t.Fatal(err)
			}
		}, errInboxAny},
		{"a missing directory is not made", func(t *testing.T, p string) {
			if err := os.Remove(filepath.Dir(p)); err != nil {
				t.Fatal(err)
			}
		}, fs.ErrNotExist},
	}
	for _, o := range inboxOpeners {
		for _, c := range cases {
			t.Run(o.name+"/"+c.name, func(t *testing.T) {
				// A permissive umask must not loosen a new file's mode.
				path := filepath.Join(t.TempDir(), o.name+".sqlite3")
				c.prepare(t, path)
				st, err := o.open(path)
				switch {
				case c.wantErr == nil && err != nil:
					t.Fatal(err)
				case c.wantErr == errInboxAny && err == nil, c.wantErr != nil && c.wantErr != errInboxAny && !errors.Is(err, c.wantErr):
					if err == nil {
						st.Close()
					}
					t.Fatalf("open: %v, want %v", err, c.wantErr)
				case err != nil:
					return
				}
				defer st.Close()
				// The writer has switched to WAL at open: every file there
				// is must be owner-only.
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					fi, err := os.Stat(p)
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != 0o600 {
						t.Errorf("%s has mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
					}
				}
				var mode string
				db := inboxRawDB(t, path)
				if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
					t.Errorf("journal mode %q (%v), want wal", mode, err)
				}
			})
		}
	}
}

// errInboxAny stands for "some error" in a table of wanted errors.
var errInboxAny = errors.New("any error")

func inboxWriteFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, nil, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// inboxRawDB opens a store's file directly, read-only, to look at what
// it holds.
func inboxRawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSQLiteInboxNewerSchemaRefused: a file a newer adapter wrote is
// not taken for one this adapter knows.
func TestSQLiteInboxNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.sqlite3")
	in, err := adapter.OpenSQLiteInbox(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if in, err := adapter.OpenSQLiteInbox(path, nil); err == nil {
		in.Close()
		t.Fatal("a file of a newer schema opened")
	}
}

// TestSQLiteOutboxDamagedSchemaRefused: a file whose schema version is
// this adapter's but whose table lacks a column a read needs (the writer's
// statements prepare, a reader's do not) is refused with an error, and
// the statements prepared before it are let go.
func TestSQLiteOutboxDamagedSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.sqlite3")
	inboxWriteFile(t, path, 0o600)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE outbox_entries (id TEXT NOT NULL UNIQUE, kind TEXT, thread TEXT, run_id TEXT, method TEXT,
			path TEXT, body BLOB, state TEXT, attempts INTEGER, problem TEXT, created_at INTEGER, updated_at INTEGER)`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out, err := adapter.OpenSQLiteOutbox(path, nil)
	if err == nil {
		out.Close()
		t.Fatal("a file without the seq column opened")
	}
	if !strings.Contains(err.Error(), "no such column: seq") {
		t.Errorf("open: %v, want a reader's prepare failed for want of seq", err)
	}
}

// Mutants left (scripts/mutate ./adapter outbox_sqlite.go): the four it
// lists as not covered are the + joining the constant queries' strings,
// which no test run executes and whose - would not compile.

// TestSQLiteInboxGroupCommit: 16 callers accepting at once each get
// their own answers, a delivery they all share is stored once with 16
// deliveries, and everything is there after a reopen.
func TestSQLiteInboxGroupCommit(t *testing.T) {
	const callers, rounds = 16, 40
	path := filepath.Join(t.TempDir(), "inbox.sqlite3")
	var commits, writes, biggest atomic.Int64
	in, err := adapter.OpenSQLiteInbox(path, &adapter.InboxOptions{ObserveCommit: func(n int) {
		commits.Add(1)
		writes.Add(int64(n))
		if int64(n) > biggest.Load() {
			biggest.Store(int64(n))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh = map[string]int{} // shared event -> callers that got InboxNew
	)
	for g := range callers {
		wg.Go(func() {
			for r := range rounds {
				own := fmt.Sprintf("own-%02d-%03d", g, r)
				shared := fmt.Sprintf("shared-%03d", r)
				batch := []adapter.InboxAccept{
					inboxDelivery(own, int64(1000*g+r), "run-"+own, "tok-"+own, int64(r)),
					inboxDelivery(shared, int64(r), "run-"+shared, fmt.Sprintf("tok-%s-%d", shared, g), int64(r)),
				}
				res, err := in.Accept(ctx, batch)
				if err != nil {
					t.Error(err)
					return
				}
				if len(res) != 2 || res[0].Entry.EventID != own || res[0].Outcome != adapter.InboxNew ||
					res[0].Entry.Token.Value.Reveal() != "tok-"+own || res[1].Entry.EventID != shared {
					t.Errorf("caller %d round %d got another caller's answer", g, r)
					return
				}
				if res[1].Outcome == adapter.InboxNew {
					mu.Lock()
					fresh[shared]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d writes in %d commits, the biggest of %d", writes.Load(), commits.Load(), biggest.Load())
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}

	in, err = adapter.OpenSQLiteInbox(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	all, err := in.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != callers*rounds+rounds {
		t.Fatalf("%d entries after reopen, want %d", len(all), callers*rounds+rounds)
	}
	for r := range rounds {
		shared := fmt.Sprintf("shared-%03d", r)
		if fresh[shared] != 1 {
			t.Errorf("%s was new to %d callers, want 1", shared, fresh[shared])
		}
		if e := inboxGet(t, in, shared); e.Deliveries != callers {
			t.Errorf("%s has %d deliveries, want %d", shared, e.Deliveries, callers)
		}
	}
	for g := range callers {
		for r := range rounds {
			own := fmt.Sprintf("own-%02d-%03d", g, r)
			if e := inboxGet(t, in, own); e.Deliveries != 1 || e.Token.Value.Reveal() != "tok-"+own {
				t.Errorf("%s: %d deliveries or another token", own, e.Deliveries)
			}
		}
	}
}

// TestSQLiteInboxFailedWriteAlone: a write that fails inside a group
// commit is undone whole and costs the others of its commit nothing.
func TestSQLiteInboxFailedWriteAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.sqlite3")
	in, err := adapter.OpenSQLiteInbox(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := context.Background()
	inboxAcceptOne(t, in, inboxDelivery("closed", 1, "r", "t", 1))
	if err := in.SetState(ctx, "closed", adapter.InboxAccepted, adapter.InboxClosed, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				// Conflicts: the entry is closed.
				if err := in.SetState(ctx, "closed", adapter.InboxAccepted, adapter.InboxStarted, ""); !errors.Is(err, adapter.ErrInboxStateConflict) {
					t.Errorf("move of a closed entry: %v", err)
				}
				return
			}
			if _, err := in.Accept(ctx, []adapter.InboxAccept{inboxDelivery(fmt.Sprintf("ok-%d", i), int64(i), "r", "t", 1)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, i := range []int{1, 3, 5, 7} {
		inboxGet(t, in, fmt.Sprintf("ok-%d", i))
	}
}

// TestSQLiteInboxSealed: with a Sealer the file holds no token in the
// clear, and opens only with the same key.
func TestSQLiteInboxSealed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inbox.sqlite3")
	sealer, err := sealkey.Open(filepath.Join(dir, "inbox.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	const tok = "eyJ.sealed-token-plaintext.sig"
	in, err := adapter.OpenSQLiteInbox(path, &adapter.InboxOptions{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	a := inboxDelivery("ev", 1, "run", tok, 1)
	a.Token.JTI = "jti-1"
	if r := inboxAcceptOne(t, in, a); r.Entry.Token.Value.Reveal() != tok {
		t.Error("the result holds another token")
	}
	if got := inboxGet(t, in, "ev"); got.Token.Value.Reveal() != tok {
		t.Error("the sealed token did not open to the delivered one")
	}
	// A redelivery's answer unseals the stored token too.
	inboxAcceptOne(t, in, inboxDelivery("ev", 1, "run", "older", 0))
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "sealed-token-plaintext") {
			t.Errorf("%s holds the token in the clear", filepath.Base(p))
		}
	}

	// Without the Sealer no call that reads the entry gets past it.
	in, err = adapter.OpenSQLiteInbox(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"get":  func() error { _, err := in.Get(ctx, "ev"); return err },
		"list": func() error { _, err := in.List(ctx); return err },
		"redelivery": func() error {
			_, err := in.Accept(ctx, []adapter.InboxAccept{inboxDelivery("ev", 1, "run", "newer", 5)})
			return err
		},
		"set state": func() error { return in.SetState(ctx, "ev", adapter.InboxAccepted, adapter.InboxStarted, "") },
		"replace token": func() error {
			_, err := in.ReplaceToken(ctx, "ev", adapter.InboxToken{Value: secret.New("renewed"), JTI: "jti-2", IssuedAt: time.Unix(9, 0)})
			return err
		},
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "without a Sealer") {
			t.Errorf("%s without the Sealer: %v, want the token refused", name, err)
		}
	}
	in.Close()

	in, err = adapter.OpenSQLiteInbox(path, &adapter.InboxOptions{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if got := inboxGet(t, in, "ev"); got.Token.Value.Reveal() != tok || got.Token.JTI != "jti-1" ||
		got.State != adapter.InboxAccepted || got.Deliveries != 2 {
		t.Errorf("after reopen: %v with token %s; want the sealed token opened, accepted after 2 deliveries with jti-1", got, got.Token.JTI)
	}
}

// inboxCrashEnv makes the test binary the crash test's child: it accepts
// events into the inbox in the directory named and prints each event id
// once Accept returned.
const inboxCrashEnv = "NOVAOS_TEST_INBOX_CRASH_DIR"

// TestSQLiteInboxCrash kills (SIGKILL) a process that accepts events at
// a random moment, and finds every event it acknowledged in the inbox.
func TestSQLiteInboxCrash(t *testing.T) {
	if dir := os.Getenv(inboxCrashEnv); dir != "" {
		inboxCrashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for round := range 5 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteInboxCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), inboxCrashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 20 + rand.IntN(3000)
		var acked []string
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break // EOF after the kill; a line cut off by it was never acknowledged
			}
			if id, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "acked "); ok {
				acked = append(acked, id)
				if len(acked) == killAt {
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		err = cmd.Wait()
		if len(acked) < killAt {
			t.Fatalf("round %d: the child ended after %d acknowledgements (%v)", round, len(acked), err)
		}
		in, err := adapter.OpenSQLiteInbox(filepath.Join(dir, "inbox.sqlite3"), nil)
		if err != nil {
			t.Fatal(err)
		}
		lost := 0
		for _, id := range acked {
			if _, err := in.Get(context.Background(), id); err != nil {
				lost++
				if lost <= 5 {
					t.Errorf("round %d: acknowledged event %s: %v", round, id, err)
				}
			}
		}
		all, err := in.List(context.Background())
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acknowledgements; %d lost; %d stored", round, len(acked), lost, len(all))
	}
}

// inboxCrashChild accepts events from 8 goroutines until it is killed
// (or, should no kill come, for a bounded while).
func inboxCrashChild(dir string) {
	in, err := adapter.OpenSQLiteInbox(filepath.Join(dir, "inbox.sqlite3"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for r := range 5000 {
				n := 1 + r%3
				batch := make([]adapter.InboxAccept, n)
				for i := range batch {
					id := fmt.Sprintf("ev-%d-%d-%d", g, r, i)
					batch[i] = inboxDelivery(id, int64(r), "run-"+id, "tok", 1)
				}
				if _, err := in.Accept(context.Background(), batch); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				for _, a := range batch {
					fmt.Fprintf(os.Stdout, "acked %s\n", a.Event.ID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	in.Close()
}

// BenchmarkInboxAccept stores one event per call, one call after
// another: one commit, one fsync each.
func BenchmarkInboxAccept(b *testing.B) {
	in := inboxBenchOpen(b)
	var n atomic.Int64
	b.ResetTimer()
	for b.Loop() {
		id := fmt.Sprintf("ev-%d", n.Add(1))
		if _, err := in.Accept(context.Background(), []adapter.InboxAccept{inboxDelivery(id, 1, "run-"+id, "tok", 1)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkInboxAcceptParallel stores one event per call from many
// callers at once (64 per core), which group commit joins.
func BenchmarkInboxAcceptParallel(b *testing.B) {
	var n, commits atomic.Int64
	in, err := adapter.OpenSQLiteInbox(filepath.Join(b.TempDir(), "inbox.sqlite3"),
		&adapter.InboxOptions{ObserveCommit: func(int) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close() })
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("ev-%d", n.Add(1))
			if _, err := in.Accept(context.Background(), []adapter.InboxAccept{inboxDelivery(id, 1, "run-"+id, "tok", 1)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(n.Load())/float64(max(1, commits.Load())), "events/commit")
}

// BenchmarkInboxAcceptBatch stores a page of 64 events per call.
func BenchmarkInboxAcceptBatch(b *testing.B) {
	in := inboxBenchOpen(b)
	var n int
	for b.Loop() {
		batch := make([]adapter.InboxAccept, 64)
		for i := range batch {
			n++
			id := fmt.Sprintf("ev-%d", n)
			batch[i] = inboxDelivery(id, int64(n), "run-"+id, "tok", 1)
		}
		if _, err := in.Accept(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkInboxHeap10k measures the Go heap an open SQLite inbox of
// 10,000 entries takes, once opened and with all of them listed, and
// its file on disk (disk-B, checkpointed). Tokens are as long as the
// platform's invocation tokens (about 870 bytes).
func BenchmarkInboxHeap10k(b *testing.B) {
	const entries = 10_000
	path := filepath.Join(b.TempDir(), "inbox.sqlite3")
	in, err := adapter.OpenSQLiteInbox(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < entries; i += 500 {
		batch := make([]adapter.InboxAccept, 500)
		for j := range batch {
			id := adapter.NewID()
			a := inboxDelivery(id, int64(i+j), adapter.NewID(), "eyJhbGciOiJFZERTQSJ9."+strings.Repeat("x", 760)+"."+strings.Repeat("s", 86), 1)
			a.Token.JTI = adapter.NewID()
			batch[j] = a
		}
		if _, err := in.Accept(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	in.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var opened, listed float64
	for b.Loop() {
		before := heap()
		in, err := adapter.OpenSQLiteInbox(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		all, err := in.List(context.Background())
		if err != nil || len(all) != entries {
			b.Fatalf("listed %d, %v", len(all), err)
		}
		withList := heap()
		runtime.KeepAlive(all)
		all = nil
		open := heap()
		opened += float64(open) - float64(before)
		listed += float64(withList) - float64(before)
		in.Close()
	}
	b.ReportMetric(opened/float64(b.N), "open-heap-B")
	b.ReportMetric(listed/float64(b.N), "listed-heap-B")
	b.ReportMetric(float64(fi.Size()), "disk-B")
}

func inboxBenchOpen(b *testing.B) *adapter.SQLiteInbox {
	b.Helper()
	in, err := adapter.OpenSQLiteInbox(filepath.Join(b.TempDir(), "inbox.sqlite3"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close() })
	return in
}
