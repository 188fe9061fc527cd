package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/internal/sqlmigrate"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func open(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestTaskStoreContract(t *testing.T) {
	storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore { return open(t, pgtest.URL(t)).TaskStore() })
}

func TestPushConfigStoreContract(t *testing.T) {
	storetest.TestPushConfigStore(t, func(t *testing.T) a2asrv.PushConfigStore { return open(t, pgtest.URL(t)).PushConfigStore() })
}

func TestPushOutboxContract(t *testing.T) {
	storetest.TestPushOutbox(t, func(t *testing.T) storetest.PushStores {
		db := open(t, pgtest.URL(t))
		return storetest.PushStores{Tasks: db.TaskStore(), Configs: db.PushConfigStore(), Outbox: db.PushOutbox()}
	})
}

func TestReopenKeepsData(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestReopen(t, func(t *testing.T) storetest.Stores {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return storetest.Stores{Tasks: db.TaskStore(), PushConfigs: db.PushConfigStore(), Close: func() { db.Close() }}
	})
	assertMigratedOnce(t, url)
}

func assertMigratedOnce(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, maxV int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != maxV || n < 1 {
		t.Errorf("schema_migrations has %d rows up to version %d; want each migration once", n, maxV)
	}
}

// TestConcurrentOpen starts several replicas against one fresh database at
// the same moment: the advisory lock must let exactly one create the schema
// and the others find it done.
func TestConcurrentOpen(t *testing.T) {
	url := pgtest.URL(t)
	const replicas = 8
	var wg sync.WaitGroup
	dbs := make([]*postgres.DB, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dbs[i], errs[i] = postgres.Open(context.Background(), url, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Open: %v", i, err)
			continue
		}
		defer dbs[i].Close()
	}
	if t.Failed() {
		return
	}
	assertMigratedOnce(t, url)
	// Every replica sees the others' writes.
	ctx := context.Background()
	scope := a2asrv.Scope{Owner: "o"}
	for i, db := range dbs {
		if _, err := db.TaskStore().Create(ctx, scope, &a2a.Task{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := dbs[0].TaskStore().List(ctx, scope, a2asrv.ListQuery{})
	if err != nil || res.TotalSize != replicas {
		t.Errorf("List = %+v, %v; want %d tasks", res, err, replicas)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url).Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if db, err := postgres.Open(ctx, url, nil); !errors.Is(err, sqlmigrate.ErrNewerSchema) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("Open(newer schema) error = %v, want ErrNewerSchema", err)
	}
}

func TestOpenErrorsHideTheURL(t *testing.T) {
	tests := []struct {
		name, url string
	}{
		{"unparsable", "postgres://user:hunter2@[::1"},
		{"unreachable", "postgres://user:hunter2@127.0.0.1:1/db?connect_timeout=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := postgres.Open(context.Background(), tt.url, nil)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if msg := err.Error(); strings.Contains(msg, "hunter2") {
				t.Errorf("error reveals the password: %s", msg)
			}
		})
	}
}

func BenchmarkTaskStore(b *testing.B) {
	storetest.BenchmarkTaskStore(b, open(b, pgtest.URL(b)).TaskStore())
}
