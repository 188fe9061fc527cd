package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/keyset"
)

// TaskStore returns the database's task store.
func (db *DB) TaskStore() a2asrv.TaskStore { return &taskStore{db} }

type taskStore struct{ db *DB }

var _ a2asrv.TaskStore = (*taskStore)(nil)

func (s *taskStore) Create(ctx context.Context, scope a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	body, err := keyset.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: create task: %w", err)
	}
	err = s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`
			INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?)
			ON CONFLICT (id) DO NOTHING`,
			t.ID, scope.Tenant, scope.Owner, t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, a2asrv.ErrExists)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: create task %s: %w", t.ID, err)
	}
	return 1, nil
}

// orSentinel returns err when the driver failed, else sentinel.
func orSentinel(err, sentinel error) error {
	if err != nil {
		return err
	}
	return sentinel
}

func (s *taskStore) Get(ctx context.Context, scope a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	var (
		v    a2asrv.Version
		body []byte
	)
	err := s.db.r.QueryRowContext(ctx,
		`SELECT version, body FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`,
		id, scope.Tenant, scope.Owner).Scan(&v, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("sqlite: get task %s: %w", id, a2asrv.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: get task %s: %w", id, err)
	}
	t, err := keyset.DecodeTask(body)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: get task %s: %w", id, err)
	}
	return t, v, nil
}

func (s *taskStore) Update(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := keyset.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: update task: %w", err)
	}
	err = s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`
			UPDATE a2a_tasks SET context_id = ?, state = ?, status_ts_ms = ?, version = version + 1, body = ?
			WHERE id = ? AND tenant = ? AND owner = ? AND version = ?`,
			t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body,
			t.ID, scope.Tenant, scope.Owner, prev)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		// Nothing matched: tell a missing task from a stale version,
		// inside the transaction so the answer is about the same data.
		var one int
		err = tx.QueryRow(`SELECT 1 FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`,
			t.ID, scope.Tenant, scope.Owner).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return a2asrv.ErrNotFound
		case err != nil:
			return err
		}
		return fmt.Errorf("at version %d: %w", prev, a2asrv.ErrConcurrentModification)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: update task %s: %w", t.ID, err)
	}
	return prev + 1, nil
}

func (s *taskStore) Delete(ctx context.Context, scope a2asrv.Scope, id string) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`, id, scope.Tenant, scope.Owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete task %s: %w", id, err)
	}
	return nil
}

func (s *taskStore) List(ctx context.Context, scope a2asrv.Scope, q a2asrv.ListQuery) (*a2asrv.ListResult, error) {
	var cur *keyset.Task
	if q.PageToken != "" {
		c, err := keyset.ParseTask(q.PageToken)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", a2asrv.ErrBadPageToken)
		}
		cur = &c
	}
	// Only the filters in use go into the query, so SQLite can pick the
	// index that fits them.
	var where strings.Builder
	args := []any{scope.Tenant, scope.Owner}
	where.WriteString(`tenant = ? AND owner = ?`)
	if q.ContextID != "" {
		where.WriteString(` AND context_id = ?`)
		args = append(args, q.ContextID)
	}
	if q.State != a2a.TaskStateUnspecified {
		where.WriteString(` AND state = ?`)
		args = append(args, q.State.String())
	}
	if !q.StatusAfter.IsZero() {
		where.WriteString(` AND status_ts_ms >= ?`)
		args = append(args, keyset.CeilMillis(q.StatusAfter))
	}
	limit := keyset.Limit(q.PageSize)
	pageWhere, pageArgs := where.String(), args
	if cur != nil {
		pageWhere += ` AND (status_ts_ms, id) < (?, ?)`
		pageArgs = append(pageArgs[:len(pageArgs):len(pageArgs)], cur.TimeMs, cur.ID)
	}

	// One read transaction, so the count and the page see the same data.
	tx, err := s.db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	defer tx.Rollback()
	res := &a2asrv.ListResult{}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM a2a_tasks WHERE `+where.String(), args...).Scan(&res.TotalSize); err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT status_ts_ms, id, body FROM a2a_tasks WHERE `+pageWhere+
			` ORDER BY status_ts_ms DESC, id DESC LIMIT ?`,
		append(pageArgs, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	defer rows.Close()
	var last keyset.Task
	for rows.Next() {
		if len(res.Tasks) == limit {
			res.NextPageToken = last.Token()
			break
		}
		var body []byte
		if err := rows.Scan(&last.TimeMs, &last.ID, &body); err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		t, err := keyset.DecodeTask(body)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	return res, nil
}
