package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithDatabase(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url", "postgres://u:p@127.0.0.1:5432/postgres?sslmode=disable", "postgres://u:p@127.0.0.1:5432/db1?sslmode=disable"},
		{"url without path", "postgresql://127.0.0.1", "postgresql://127.0.0.1/db1"},
		{"url with dbname param", "postgres://h/x?dbname=y", "postgres://h/db1"},
		{"keyword/value", "host=127.0.0.1 user=u", "host=127.0.0.1 user=u dbname=db1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withDatabase(tt.in, "db1")
			if err != nil || got != tt.want {
				t.Errorf("withDatabase(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestURLGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	var names [2]string
	for i := range names {
		conn, err := pgx.Connect(ctx, URL(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&names[i]); err != nil {
			t.Fatal(err)
		}
		var tables int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
			t.Errorf("database %s has %d tables, %v; want an empty one", names[i], tables, err)
		}
		conn.Close(ctx)
	}
	if names[0] == names[1] {
		t.Errorf("two calls returned the same database %s", names[0])
	}
}
