package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Commits reads how many transactions a PostgreSQL database has committed,
// so a benchmark can report transactions per request against a server
// under test there. It measures and never writes; it counts every session
// on the database, the servers' background work (lease heartbeats,
// sweeps, listeners) and its own readings included. PostgreSQL publishes
// a session's counts when it goes idle, at most once a second, so a
// reading lags by up to a second of commits: over a window of several
// seconds the lags at either end about cancel out.
type Commits struct {
	conn *pgx.Conn
}

// OpenCommits connects to the database at url. Errors never repeat the
// URL, which may hold a password.
func OpenCommits(ctx context.Context, url string) (*Commits, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("bench: commits: cannot parse the connection string")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: commits: %w", err)
	}
	return &Commits{conn: conn}, nil
}

// Read returns pg_stat_database.xact_commit of the connection's database.
func (c *Commits) Read(ctx context.Context) (int64, error) {
	var n int64
	if err := c.conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: commits: %w", err)
	}
	return n, nil
}

// Close closes the connection.
func (c *Commits) Close() error {
	return c.conn.Close(context.Background())
}
