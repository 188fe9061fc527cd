package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"novaos.dev/novaos/internal/pgtest"
)

func TestSetStatementTimeout(t *testing.T) {
	tests := []struct {
		name   string
		url    string // the statement_timeout the URL set, "" for none
		d      time.Duration
		want   string
		wantOK bool
	}{
		{"default", "", 0, "30000", true},
		{"the URL's when zero", "250", 0, "250", true},
		{"set", "", 1500 * time.Millisecond, "1500", true},
		{"set wins over the URL", "250", time.Second, "1000", true},
		{"rounded up, never 0", "", 10 * time.Microsecond, "1", true},
		{"none", "", -1, "", false},
		{"none drops the URL's", "250", -1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := map[string]string{}
			if tt.url != "" {
				params["statement_timeout"] = tt.url
			}
			setStatementTimeout(params, tt.d)
			if got, ok := params["statement_timeout"]; got != tt.want || ok != tt.wantOK {
				t.Errorf("statement_timeout = %q (set %v), want %q (set %v)", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// A statement longer than Options.StatementTimeout is cancelled by the
// server with SQLSTATE 57014, and the error says so.
func TestStatementTimeoutCancelsLongStatements(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, pgtest.URL(t), &Options{StatementTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&got); err != nil || got != "100ms" {
		t.Errorf("SHOW statement_timeout = %q, %v; want 100ms", got, err)
	}
	// 57014 says the server cancelled the statement before its end: no
	// clock is needed to see it was cut short.
	_, err = db.pool.Exec(ctx, `SELECT pg_sleep(5)`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("pg_sleep(5) error = %v, want a statement timeout (57014)", err)
	}
	// The connection stays usable for the next statement.
	if _, err := db.pool.Exec(ctx, `SELECT 1`); err != nil {
		t.Errorf("after the timeout: %v", err)
	}
}

// Migrations run without the statement timeout: Open waits for another
// replica's migration (here a held migration lock) longer than the timeout
// and still succeeds.
func TestMigrationsOutlastTheStatementTimeout(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		t.Fatal(err)
	}
	const hold = 600 * time.Millisecond
	released := make(chan error, 1)
	// start is read before the lock can be released, so Open, which
	// cannot finish before then, takes at least hold however slow the
	// machine.
	start := time.Now()
	go func() {
		time.Sleep(hold) // another migration, twelve statement timeouts long
		released <- tx.Rollback(ctx)
	}()
	db, err := Open(ctx, url, &Options{StatementTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open while another migration holds the lock: %v", err)
	}
	defer db.Close()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < hold-50*time.Millisecond {
		t.Errorf("Open took %v: it did not wait for the lock held %v", took, hold)
	}
}
