package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// ToolStore returns the database's store of the tool gateway (a
// tools.Store): MCP sessions and tenants' policies. Any number of replicas
// may share it. A session's creation, touch and deletion are one
// statement each, committed group-wise through the database's writer with
// the other stores' hot writes; a touch's check of the idle timeout and
// its update, or the deletion of the session it found idle, happen in
// that statement under the session's row lock, so no touch brings back a
// session another found idle, deleted or swept. A policy's
// compare-and-set is one statement too.
func (db *DB) ToolStore() *ToolStore { return &ToolStore{db} }

// ToolStore keeps the tool gateway's records in the database (see
// tools.Store).
type ToolStore struct{ db *DB }

var _ tools.Store = (*ToolStore)(nil)

// The statements of session writes, which go through the database's
// writer (writer.go): each returns exactly one row, whatever happened.
var (
	// createToolSessionSQL returns 1 when the session was created, 0
	// when its id was taken.
	createToolSessionSQL = `WITH c AS (
		INSERT INTO tool_sessions (` + sqlstore.ToolSessionCols + `) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO NOTHING RETURNING 1
	) SELECT count(*) FROM c`

	// touchToolSessionSQL deletes the session $1 when it was last seen
	// before $3, else moves its last_seen_us on to $2 (never back) and
	// returns it. Both parts read the same snapshot, in which their
	// conditions exclude each other, so at most one of them changes the
	// row; either one that finds the row changed since by another
	// statement checks its condition again on the row as it is now.
	touchToolSessionSQL = `WITH gone AS (
		DELETE FROM tool_sessions WHERE id = $1 AND last_seen_us < $3
	), s AS (
		UPDATE tool_sessions SET last_seen_us = greatest(last_seen_us, $2) WHERE id = $1 AND last_seen_us >= $3
		RETURNING ` + sqlstore.ToolSessionCols + `
	)
	SELECT s.id IS NOT NULL, coalesce(s.tenant, ''), coalesce(s.subject, ''), coalesce(s.protocol_version, ''),
		coalesce(s.created_us, 0), coalesce(s.last_seen_us, 0)
	FROM (SELECT 1) AS one LEFT JOIN s ON true`

	// deleteToolSessionSQL returns how many sessions it deleted.
	deleteToolSessionSQL = `WITH d AS (
		DELETE FROM tool_sessions WHERE id = $1 AND tenant = $2 RETURNING 1
	) SELECT count(*) FROM d`
)

// toolSessionKey is the key of a session's writes in the database's
// writer, which puts at most one write of a key in a batch; the prefix
// keeps sessions apart from the tasks and runs the writer also writes.
func toolSessionKey(id string) string { return "tool-session\x00" + id }

func (t *ToolStore) CreateSession(ctx context.Context, s tools.Session) error {
	what := "postgres: create tool session " + s.ID
	if err := tools.PrepareSession(&s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var n int64
	err := t.db.wr.do(ctx, newWrite(toolSessionKey(s.ID), createToolSessionSQL, sqlstore.ToolSessionArgs(&s), &n))
	if err == nil && n == 0 {
		err = fmt.Errorf("the id is taken: %w", tools.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (t *ToolStore) TouchSession(ctx context.Context, id string, now time.Time, idle time.Duration) (tools.Session, error) {
	what := "postgres: touch tool session " + id
	at, cutoff, err := tools.PrepareTouch(now, idle)
	if err != nil {
		return tools.Session{}, fmt.Errorf("%s: %w", what, err)
	}
	if !a2astore.ValidText(id) {
		return tools.Session{}, fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	var (
		found         bool
		s             = tools.Session{ID: id}
		created, seen int64
	)
	err = t.db.wr.do(ctx, newWrite(toolSessionKey(id), touchToolSessionSQL, []any{id, sqlstore.Micros(at), sqlstore.Micros(cutoff)},
		&found, &s.TenantID, &s.Subject, &s.ProtocolVersion, &created, &seen))
	if err == nil && !found {
		err = tools.ErrNotFound
	}
	if err != nil {
		return tools.Session{}, fmt.Errorf("%s: %w", what, err)
	}
	s.CreatedAt, s.LastSeen = sqlstore.FromMicros(created), sqlstore.FromMicros(seen)
	return s, nil
}

func (t *ToolStore) DeleteSession(ctx context.Context, tenantID, id string) error {
	what := "postgres: delete tool session " + id
	if !a2astore.ValidText(tenantID, id) {
		return fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	var n int64
	err := t.db.wr.do(ctx, newWrite(toolSessionKey(id), deleteToolSessionSQL, []any{id, tenantID}, &n))
	if err == nil && n == 0 {
		err = tools.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (t *ToolStore) SweepSessions(ctx context.Context, cutoff time.Time) (int, error) {
	if cutoff.IsZero() {
		return 0, errors.New("postgres: sweep tool sessions: no cutoff")
	}
	// SKIP LOCKED passes over the sessions a write holds: one being
	// touched is in use, and the sweep neither waits for it nor, taking
	// rows in an order of its own, deadlocks with a batch of touches.
	tag, err := t.db.pool.Exec(ctx, `DELETE FROM tool_sessions WHERE id IN (
		SELECT id FROM tool_sessions WHERE last_seen_us < $1 FOR UPDATE SKIP LOCKED)`, sqlstore.Micros(cutoff))
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep tool sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func (t *ToolStore) GetPolicy(ctx context.Context, tenantID string) (tools.Policy, error) {
	what := "postgres: get tool policy of " + tenantID
	if !a2astore.ValidText(tenantID) {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	p, err := sqlstore.ScanToolPolicy(t.db.pool.QueryRow(ctx, `SELECT `+sqlstore.ToolPolicyCols+` FROM tool_policies
		WHERE tenant = $1`, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrNotFound
	}
	if err != nil {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

func (t *ToolStore) PutPolicy(ctx context.Context, p tools.Policy, expectVersion int64) (tools.Policy, error) {
	what := "postgres: put tool policy of " + p.TenantID
	if err := tools.PreparePolicy(&p, expectVersion); err != nil {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	// Of concurrent first puts, the insert that waited on the winner's
	// row does nothing; of concurrent updates, one that waited finds the
	// winner's version and updates nothing.
	q, args := `INSERT INTO tool_policies (`+sqlstore.ToolPolicyCols+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant) DO NOTHING`, sqlstore.ToolPolicyArgs(&p)
	if expectVersion > 0 {
		q, args = `UPDATE tool_policies SET expr = $2, version = $3, updated_us = $4, updated_by = $5
			WHERE tenant = $1 AND version = $6`, append(args, expectVersion)
	}
	tag, err := t.db.pool.Exec(ctx, q, args...)
	n := tag.RowsAffected()
	if err == nil && n == 0 {
		err = fmt.Errorf("version %d is not the stored one: %w", expectVersion, tools.ErrConflict)
	}
	if err != nil {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

func (t *ToolStore) DeletePolicy(ctx context.Context, tenantID string) error {
	what := "postgres: delete tool policy of " + tenantID
	if !a2astore.ValidText(tenantID) {
		return fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	tag, err := t.db.pool.Exec(ctx, `DELETE FROM tool_policies WHERE tenant = $1`, tenantID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	return nil
}
