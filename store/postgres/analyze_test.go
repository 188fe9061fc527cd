package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
)

// statsWait bounds how long a test waits for PostgreSQL to show a table's
// statistics or for a background pass. It is a failure bound only: the
// tests wait for the condition itself, and under no load it holds at once.
const statsWait = 2 * time.Minute

// tableStats reads what pg_stat_user_tables says of a table.
func tableStats(t *testing.T, conn *pgx.Conn, table string) (modSinceAnalyze, analyzeCount int64) {
	t.Helper()
	err := conn.QueryRow(context.Background(), `SELECT n_mod_since_analyze, analyze_count FROM pg_stat_user_tables
		WHERE relname = $1 AND schemaname = current_schema()`, table).Scan(&modSinceAnalyze, &analyzeCount)
	if err != nil {
		t.Fatal(err)
	}
	return modSinceAnalyze, analyzeCount
}

// A database's task table is analyzed by the DB itself once it has changed
// more than its statistics say it holds (and more than a floor), long
// before autovacuum would look. Each step adds rows, makes one pass of the
// analyzer and checks whether that pass analyzed the table.
func TestYoungTablesAnalyzed(t *testing.T) {
	defer postgres.SetAnalyzeFloor(postgres.SetAnalyzeFloor(50))
	url := pgtest.URL(t)
	db := open(t, url)
	ctx := context.Background()
	ticks := make(chan time.Time)
	// A clock that stands still: however long the steps take, the
	// analyzer's time is not up.
	now := time.Now()
	passes, done := postgres.DriveAnalyzer(db, ticks, func() time.Time { return now })
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Only the DB's analyzer may analyze the table here: an autovacuum
	// worker that came first would leave it nothing to do.
	if _, err := conn.Exec(ctx, `ALTER TABLE a2a_tasks SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}

	scope := a2asrv.Scope{Tenant: "acme"}
	rows, analyzed := 0, int64(0)
	steps := []struct {
		name string
		add  int
		want bool
	}{
		{"below the floor", 30, false},               // 30 changed, floor 50
		{"past the floor, never analyzed", 30, true}, // 60 > max(50, -1)
		{"grown less than it holds", 55, false},      // 55 > 50 but ≤ the 60 it holds
		{"grown more than it holds", 10, true},       // 65 > max(50, 60)
		{"nothing changed since the last analysis", 0, false},
	}
	pending := int64(0) // rows added since the table was last analyzed
	for _, step := range steps {
		for range step.add {
			task := &a2a.Task{ID: fmt.Sprintf("young-%d", rows), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: time.Now()}}
			if _, err := db.TaskStore().Create(ctx, scope, task); err != nil {
				t.Fatal(err)
			}
			rows++
		}
		pending += int64(step.add)
		// The pass sees the statistics the writers have flushed; wait
		// until they show every row added, so the pass judges them all.
		if err := postgres.FlushStats(ctx, db); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(statsWait); ; {
			if mod, _ := tableStats(t, conn, "a2a_tasks"); mod >= pending {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the statistics never showed %d changed rows", step.name, pending)
			}
			time.Sleep(20 * time.Millisecond)
		}

		select {
		case ticks <- time.Now():
		case <-done:
			t.Fatalf("%s: the analyzer has stopped", step.name)
		}
		var pass postgres.AnalyzerPass
		select {
		case pass = <-passes:
		case <-done:
			t.Fatalf("%s: the analyzer stopped", step.name)
		}
		if pass.Err != nil {
			t.Fatalf("%s: pass: %v", step.name, pass.Err)
		}
		if got := slices.Contains(pass.Tables, "a2a_tasks"); got != step.want {
			t.Fatalf("%s: a2a_tasks analyzed = %v, want %v (pass analyzed %q)", step.name, got, step.want, pass.Tables)
		}
		if step.want {
			analyzed++
			pending = 0
		}
		if _, got := tableStats(t, conn, "a2a_tasks"); got != analyzed {
			t.Fatalf("%s: analyze_count = %d, want %d", step.name, got, analyzed)
		}
	}
}

// The analyzer makes a pass on every tick for analyzeFor after Open, then
// stops by itself at the first tick after that. The test moves the clock
// before each tick, and the analyzer reads it once the tick is taken.
func TestAnalyzerStopsWhenItsTimeIsUp(t *testing.T) {
	db := open(t, pgtest.URL(t))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	set := func(sinceStart time.Duration) {
		mu.Lock()
		now = start.Add(sinceStart)
		mu.Unlock()
	}
	ticks := make(chan time.Time)
	passes, done := postgres.DriveAnalyzer(db, ticks, clock)
	tick := func() {
		t.Helper()
		select {
		case ticks <- clock():
		case <-done:
			t.Fatal("the analyzer stopped before its time was up")
		case <-time.After(statsWait):
			t.Fatal("the analyzer took no tick")
		}
	}
	for _, at := range []time.Duration{0, postgres.AnalyzeFor() / 2, postgres.AnalyzeFor() - time.Millisecond} {
		set(at)
		tick()
		select {
		case pass := <-passes:
			if pass.Err != nil {
				t.Fatal(pass.Err)
			}
		case <-done:
			t.Fatalf("the analyzer stopped %v after its start, before its time was up", at)
		}
	}
	set(postgres.AnalyzeFor()) // the time is up
	tick()
	select {
	case <-done:
	case <-time.After(statsWait):
		t.Fatal("the analyzer did not stop once its time was up")
	}
	if len(passes) != 0 {
		t.Errorf("a pass after the time was up: %+v", <-passes)
	}
}

// Open starts the analyzer: passes happen without a test driving them.
func TestOpenStartsAnalyzer(t *testing.T) {
	old := postgres.SetAnalyzeEvery(5 * time.Millisecond)
	db := open(t, pgtest.URL(t))
	postgres.SetAnalyzeEvery(old) // db keeps the short one
	for deadline := time.Now().Add(statsWait); postgres.AnalyzerPasses(db) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("%d analyzer passes in %v", postgres.AnalyzerPasses(db), statsWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
