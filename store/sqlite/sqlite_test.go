package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/internal/sqlmigrate"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func open(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tempDB(t testing.TB) *sqlite.DB {
	return open(t, filepath.Join(t.TempDir(), "novaos.db"))
}

func TestTaskStoreContract(t *testing.T) {
	storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore { return tempDB(t).TaskStore() })
}

func TestPushConfigStoreContract(t *testing.T) {
	storetest.TestPushConfigStore(t, func(t *testing.T) a2asrv.PushConfigStore { return tempDB(t).PushConfigStore() })
}

func TestPushOutboxContract(t *testing.T) {
	storetest.TestPushOutbox(t, func(t *testing.T) storetest.PushStores {
		db := tempDB(t)
		return storetest.PushStores{Tasks: db.TaskStore(), Configs: db.PushConfigStore(), Outbox: db.PushOutbox()}
	})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub dir?#", "novaos.db") // characters a DSN must escape
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	storetest.TestReopen(t, func(t *testing.T) storetest.Stores {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open(%s): %v", path, err)
		}
		return storetest.Stores{Tasks: db.TaskStore(), PushConfigs: db.PushConfigStore(), Close: func() {
			assertPrivate(t, path)
			db.Close()
		}}
	})
	assertSchema(t, path)
}

// assertPrivate checks that the database and its WAL are owner-only.
func assertPrivate(t *testing.T, path string) {
	t.Helper()
	for _, f := range []string{path, path + "-wal"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
}

// rawOpen opens path with the bare driver, bypassing Open.
func rawOpen(t testing.TB, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	raw, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// assertSchema checks the file's pragmas and migration history from a plain
// connection.
func assertSchema(t *testing.T, path string) {
	t.Helper()
	raw := rawOpen(t, path)
	defer raw.Close()
	var mode string
	if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var n, maxV int
	if err := raw.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != maxV || n < 1 {
		t.Errorf("schema_migrations has %d rows up to version %d; want each migration once", n, maxV)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path).Close()
	raw := rawOpen(t, path)
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (999, '0999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if db, err := sqlite.Open(context.Background(), path, nil); !errors.Is(err, sqlmigrate.ErrNewerSchema) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("Open(newer schema) error = %v, want ErrNewerSchema", err)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		path string
	}{
		{"empty path", ""},
		{"in-memory", ":memory:"},
		{"missing directory", filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if db, err := sqlite.Open(context.Background(), tt.path, nil); err == nil {
				db.Close()
				t.Errorf("Open(%q) succeeded, want an error", tt.path)
			}
		})
	}
}

// TestTwoHandlesOneFile writes through two DBs on the same file at once, as
// two processes would: SQLite's file lock and the busy timeout must keep
// every write, and optimistic versions must still hold across them.
func TestTwoHandlesOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "novaos.db")
	stores := []a2asrv.TaskStore{open(t, path).TaskStore(), open(t, path).TaskStore()}
	scope := a2asrv.Scope{Owner: "o"}
	if _, err := stores[0].Create(ctx, scope, &a2a.Task{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const perWorker = 20
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for i := range perWorker {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.Create(ctx, scope, &a2a.Task{ID: id}); err != nil {
					errs <- err
					return
				}
				for {
					cur, v, err := s.Get(ctx, scope, "shared")
					if err != nil {
						errs <- err
						return
					}
					cur.History = append(cur.History, a2a.Message{MessageID: id, Parts: []a2a.Part{a2a.TextPart(id)}})
					if _, err = s.Update(ctx, scope, cur, v); err == nil {
						break
					} else if !errors.Is(err, a2asrv.ErrConcurrentModification) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := stores[1].List(ctx, scope, a2asrv.ListQuery{PageSize: 100})
	if err != nil || res.TotalSize != 1+4*perWorker {
		t.Fatalf("List total = %v, %v; want %d", res, err, 1+4*perWorker)
	}
	got, v, err := stores[0].Get(ctx, scope, "shared")
	if err != nil || len(got.History) != 4*perWorker || v != 1+4*perWorker {
		t.Fatalf("shared task: %d history entries at version %d, %v; want %d", len(got.History), v, err, 4*perWorker)
	}
}

func BenchmarkTaskStore(b *testing.B) {
	storetest.BenchmarkTaskStore(b, tempDB(b).TaskStore())
}
