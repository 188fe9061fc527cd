package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
)

// A new database's task table is analyzed by the DB itself once it has
// grown past what its statistics say, long before autovacuum would look.
func TestYoungTablesAnalyzed(t *testing.T) {
	old := postgres.SetAnalyzeEvery(50 * time.Millisecond)
	url := pgtest.URL(t)
	db := open(t, url)
	postgres.SetAnalyzeEvery(old) // db keeps the short one
	ctx := context.Background()
	scope := a2asrv.Scope{Tenant: "acme"}
	for i := range 1500 {
		task := &a2a.Task{ID: fmt.Sprintf("young-%d", i), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: time.Now()}}
		if _, err := db.TaskStore().Create(ctx, scope, task); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var analyzed int64
		if err := conn.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'a2a_tasks' AND schemaname = current_schema()`).Scan(&analyzed); err != nil {
			t.Fatal(err)
		}
		if analyzed > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a2a_tasks was not analyzed within 20s of growing to 1,500 rows")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
