package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// ToolStore returns the database's store of the tool gateway (a
// tools.Store): MCP sessions and tenants' policies. Its writes go through
// the database's single writer, so a touch's check of the idle timeout and
// its update (or the deletion of the session it found idle), and a
// policy's compare-and-set, are each one step no other write interleaves,
// in this process or another using the file; each has reached the disk
// when it returns.
func (db *DB) ToolStore() *ToolStore { return &ToolStore{db} }

// ToolStore keeps the tool gateway's records in the database (see
// tools.Store).
type ToolStore struct{ db *DB }

var _ tools.Store = (*ToolStore)(nil)

// The statements of the tool gateway's writes, prepared once on the write
// connection (writer.exec, writer.queryRow).
const (
	insertToolSessionSQL = `INSERT INTO tool_sessions (` + sqlstore.ToolSessionCols + `) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	// touchToolSessionSQL moves a live session's last_seen_us on, never
	// back; expireToolSessionSQL removes it when it was found idle.
	touchToolSessionSQL = `UPDATE tool_sessions SET last_seen_us = max(last_seen_us, ?)
		WHERE id = ? AND last_seen_us >= ? RETURNING ` + sqlstore.ToolSessionCols
	expireToolSessionSQL = `DELETE FROM tool_sessions WHERE id = ? AND last_seen_us < ?`
	deleteToolSessionSQL = `DELETE FROM tool_sessions WHERE id = ? AND tenant = ?`
	sweepToolSessionsSQL = `DELETE FROM tool_sessions WHERE last_seen_us < ?`
	insertToolPolicySQL  = `INSERT INTO tool_policies (` + sqlstore.ToolPolicyCols + `) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant) DO NOTHING`
	updateToolPolicySQL = `UPDATE tool_policies SET expr = ?, version = ?, updated_us = ?, updated_by = ?
		WHERE tenant = ? AND version = ?`
	deleteToolPolicySQL = `DELETE FROM tool_policies WHERE tenant = ?`
)

// toolWrites are the statements Open prepares for the tool store.
var toolWrites = []string{insertToolSessionSQL, touchToolSessionSQL, expireToolSessionSQL, deleteToolSessionSQL,
	sweepToolSessionsSQL, insertToolPolicySQL, updateToolPolicySQL, deleteToolPolicySQL}

// getToolPolicySQL is the tool store's read, prepared once per handle
// (DB.stmt).
const getToolPolicySQL = `SELECT ` + sqlstore.ToolPolicyCols + ` FROM tool_policies WHERE tenant = ?`

// toolAffected is how many rows res changed, or, when that cannot be told,
// the error.
func toolAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *ToolStore) CreateSession(ctx context.Context, s tools.Session) error {
	what := "sqlite: create tool session " + s.ID
	if err := tools.PrepareSession(&s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err := t.db.wr.do(ctx, func(tx *sql.Tx) error {
		n, err := toolAffected(t.db.wr.exec(tx, insertToolSessionSQL, sqlstore.ToolSessionArgs(&s)...))
		if err == nil && n == 0 {
			err = fmt.Errorf("the id is taken: %w", tools.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (t *ToolStore) TouchSession(ctx context.Context, id string, now time.Time, idle time.Duration) (tools.Session, error) {
	what := "sqlite: touch tool session " + id
	at, cutoff, err := tools.PrepareTouch(now, idle)
	if err != nil {
		return tools.Session{}, fmt.Errorf("%s: %w", what, err)
	}
	var s tools.Session
	err = t.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer runs the update and, when it found no live
		// session, the deletion of an idle one with no write between
		// them: a session found idle cannot be touched back to life.
		var err error
		s, err = sqlstore.ScanToolSession(t.db.wr.queryRow(tx, touchToolSessionSQL, sqlstore.Micros(at), id, sqlstore.Micros(cutoff)))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := t.db.wr.exec(tx, expireToolSessionSQL, id, sqlstore.Micros(cutoff)); err != nil {
			return err
		}
		return tools.ErrNotFound
	})
	if err != nil {
		return tools.Session{}, fmt.Errorf("%s: %w", what, err)
	}
	return s, nil
}

func (t *ToolStore) DeleteSession(ctx context.Context, tenantID, id string) error {
	err := t.db.wr.do(ctx, func(tx *sql.Tx) error {
		n, err := toolAffected(t.db.wr.exec(tx, deleteToolSessionSQL, id, tenantID))
		if err == nil && n == 0 {
			err = tools.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete tool session %s: %w", id, err)
	}
	return nil
}

func (t *ToolStore) SweepSessions(ctx context.Context, cutoff time.Time) (int, error) {
	if cutoff.IsZero() {
		return 0, errors.New("sqlite: sweep tool sessions: no cutoff")
	}
	var n int64
	err := t.db.wr.do(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = toolAffected(t.db.wr.exec(tx, sweepToolSessionsSQL, sqlstore.Micros(cutoff)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep tool sessions: %w", err)
	}
	return int(n), nil
}

func (t *ToolStore) GetPolicy(ctx context.Context, tenantID string) (tools.Policy, error) {
	p, err := sqlstore.ScanToolPolicy(t.db.queryRow(ctx, getToolPolicySQL, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrNotFound
	}
	if err != nil {
		return tools.Policy{}, fmt.Errorf("sqlite: get tool policy of %s: %w", tenantID, err)
	}
	return p, nil
}

func (t *ToolStore) PutPolicy(ctx context.Context, p tools.Policy, expectVersion int64) (tools.Policy, error) {
	what := "sqlite: put tool policy of " + p.TenantID
	if err := tools.PreparePolicy(&p, expectVersion); err != nil {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	err := t.db.wr.do(ctx, func(tx *sql.Tx) error {
		var n int64
		var err error
		if expectVersion == 0 {
			n, err = toolAffected(t.db.wr.exec(tx, insertToolPolicySQL, sqlstore.ToolPolicyArgs(&p)...))
		} else {
			n, err = toolAffected(t.db.wr.exec(tx, updateToolPolicySQL, p.Expr, p.Version, sqlstore.Micros(p.UpdatedAt), p.UpdatedBy,
				p.TenantID, expectVersion))
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("version %d is not the stored one: %w", expectVersion, tools.ErrConflict)
		}
		return err
	})
	if err != nil {
		return tools.Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

func (t *ToolStore) DeletePolicy(ctx context.Context, tenantID string) error {
	err := t.db.wr.do(ctx, func(tx *sql.Tx) error {
		n, err := toolAffected(t.db.wr.exec(tx, deleteToolPolicySQL, tenantID))
		if err == nil && n == 0 {
			err = tools.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete tool policy of %s: %w", tenantID, err)
	}
	return nil
}
