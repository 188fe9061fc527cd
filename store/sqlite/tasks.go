package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// The task writes every SendMessage or stream makes, prepared once on the
// write connection (writer.exec) instead of compiled again per write.
const (
	insertTaskSQL = `INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body, instance_id)
		VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING`
	rewriteTaskSQL = `UPDATE a2a_tasks SET context_id = ?, state = ?, status_ts_ms = ?, version = ?, body = ?, events = 0,
		instance_id = ? WHERE id = ? AND tenant = ? AND owner = ? AND version = ?`
	appendStatusSQL = `UPDATE a2a_tasks SET state = ?, status_ts_ms = ?, version = ?, events = events + ?, instance_id = ?
		WHERE id = ? AND tenant = ? AND owner = ? AND version = ?`
	appendSQL = `UPDATE a2a_tasks SET version = ?, events = events + ?, instance_id = ?
		WHERE id = ? AND tenant = ? AND owner = ? AND version = ?`
	insertEventSQL  = `INSERT INTO a2a_task_events (task_id, version, body) VALUES (?, ?, ?)`
	deleteEventsSQL = `DELETE FROM a2a_task_events WHERE task_id = ?`
)

var preparedWrites = append([]string{insertTaskSQL, rewriteTaskSQL, appendStatusSQL, appendSQL, insertEventSQL, deleteEventsSQL},
	pushWrites...)

// TaskStore returns the database's task store.
func (db *DB) TaskStore() a2asrv.TaskStore { return &taskStore{db} }

type taskStore struct{ db *DB }

var _ a2asrv.TaskStore = (*taskStore)(nil)

func (s *taskStore) Create(ctx context.Context, scope a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: create task: %w", err)
	}
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := s.db.wr.exec(tx, insertTaskSQL,
			t.ID, scope.Tenant, scope.Owner, t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body,
			s.db.instance)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, a2asrv.ErrExists)
		}
		// Nothing to queue: a task being created has no push configs
		// (Put needs the task; Delete deletes them with it).
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
	t, v, err := s.get(ctx, s.db.r, scope, id)
	if errors.Is(err, errHasEvents) {
		// The body and its events must come from one snapshot: read both
		// in a transaction.
		err = func() error {
			tx, err := s.db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if t, v, err = s.get(ctx, tx, scope, id); !errors.Is(err, errHasEvents) {
				return err
			}
			return applyEvents(ctx, tx, t, v)
		}()
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("sqlite: get task %s: %w", id, a2asrv.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: get task %s: %w", id, err)
	}
	return t, v, nil
}

// errHasEvents says the task read has appended events still to apply.
var errHasEvents = errors.New("task has appended events")

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// get reads a task's body; errHasEvents (with the task) when events must
// still be applied.
func (s *taskStore) get(ctx context.Context, q queryer, scope a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	var (
		v      a2asrv.Version
		events int
		body   []byte
	)
	err := q.QueryRowContext(ctx,
		`SELECT version, events, body FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`,
		id, scope.Tenant, scope.Owner).Scan(&v, &events, &body)
	if err != nil {
		return nil, 0, err
	}
	t, err := a2astore.DecodeTask(body)
	if err != nil {
		return nil, 0, err
	}
	if events > 0 {
		return t, v, errHasEvents
	}
	return t, v, nil
}

// applyEvents applies the events stored for t up to version v.
func applyEvents(ctx context.Context, q queryer, t *a2a.Task, v a2asrv.Version) error {
	rows, err := q.QueryContext(ctx,
		`SELECT body FROM a2a_task_events WHERE task_id = ? AND version <= ? ORDER BY version`, t.ID, v)
	if err != nil {
		return err
	}
	bodies, err := sqlstore.ScanBodies(rows, func(b []byte) ([]byte, error) { return b, nil })
	rows.Close()
	if err != nil {
		return err
	}
	return a2asrv.ApplyEncodedEvents(t, bodies)
}

func (s *taskStore) Update(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: update task: %w", err)
	}
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		if err := rewrite(s.db.wr, tx, scope, t, body, prev, prev+1, s.db.instance); err != nil {
			return err
		}
		return queuePush(s.db.wr, tx, scope, t.ID, 1, taskBodies(body))
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: update task %s: %w", t.ID, err)
	}
	return prev + 1, nil
}

// rewrite stores t whole at version next, dropping its events, if its
// version is prev; instance is the writer (leases.go).
func rewrite(w *writer, tx *sql.Tx, scope a2asrv.Scope, t *a2a.Task, body []byte, prev, next a2asrv.Version, instance string) error {
	res, err := w.exec(tx, rewriteTaskSQL,
		t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), next, body, instance,
		t.ID, scope.Tenant, scope.Owner, prev)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return orSentinel(err, notUpdated(tx, scope, t.ID, prev))
	}
	// A lookup in the events' primary key: nearly free when there are none.
	_, err = w.exec(tx, deleteEventsSQL, t.ID)
	return err
}

// notUpdated tells a missing task from a stale version after a versioned
// write matched nothing, inside the transaction so the answer is about the
// same data.
func notUpdated(tx *sql.Tx, scope a2asrv.Scope, id string, prev a2asrv.Version) error {
	var one int
	err := tx.QueryRow(`SELECT 1 FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`,
		id, scope.Tenant, scope.Owner).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return a2asrv.ErrNotFound
	case err != nil:
		return err
	}
	return fmt.Errorf("at version %d: %w", prev, a2asrv.ErrConcurrentModification)
}

func (s *taskStore) Append(ctx context.Context, scope a2asrv.Scope, id string, prev a2asrv.Version, events []*a2a.StreamResponse, compact *a2a.Task) (a2asrv.Version, error) {
	next := prev + a2asrv.Version(len(events))
	body, bodies, err := a2astore.EncodeAppend(scope.Tenant, scope.Owner, id, events, compact)
	if err != nil {
		return 0, fmt.Errorf("sqlite: append to task %s: %w", id, err)
	}
	notes := func() ([][]byte, error) { return a2astore.AppendNotifications(events, bodies) }
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		if compact != nil {
			if err := rewrite(s.db.wr, tx, scope, compact, body, prev, next, s.db.instance); err != nil {
				return err
			}
			return queuePush(s.db.wr, tx, scope, id, len(events), notes)
		}
		var res sql.Result
		var err error
		if st, ok := a2asrv.LastStatus(events); ok {
			res, err = s.db.wr.exec(tx, appendStatusSQL,
				st.State.String(), st.Timestamp.UnixMilli(), next, len(events), s.db.instance, id, scope.Tenant, scope.Owner, prev)
		} else {
			res, err = s.db.wr.exec(tx, appendSQL,
				next, len(events), s.db.instance, id, scope.Tenant, scope.Owner, prev)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return orSentinel(err, notUpdated(tx, scope, id, prev))
		}
		for i, b := range bodies {
			if _, err := s.db.wr.exec(tx, insertEventSQL,
				id, prev+a2asrv.Version(i+1), b); err != nil {
				return err
			}
		}
		return queuePush(s.db.wr, tx, scope, id, len(events), notes)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: append to task %s: %w", id, err)
	}
	return next, nil
}

func (s *taskStore) Delete(ctx context.Context, scope a2asrv.Scope, id string) error {
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM a2a_tasks WHERE id = ? AND tenant = ? AND owner = ?`, id, scope.Tenant, scope.Owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err = tx.Exec(`DELETE FROM a2a_task_events WHERE task_id = ?`, id); err != nil {
			return err
		}
		return dropTaskPush(tx, scope, id)
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete task %s: %w", id, err)
	}
	return nil
}

func (s *taskStore) List(ctx context.Context, scope a2asrv.Scope, q a2asrv.ListQuery) (*a2asrv.ListResult, error) {
	var cur *a2astore.Task
	if q.PageToken != "" {
		c, err := a2astore.ParseTask(q.PageToken)
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
		args = append(args, a2astore.CeilMillis(q.StatusAfter))
	}
	limit := a2astore.Limit(q.PageSize)
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
		`SELECT status_ts_ms, id, version, events, body FROM a2a_tasks WHERE `+pageWhere+
			` ORDER BY status_ts_ms DESC, id DESC LIMIT ?`,
		append(pageArgs, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	defer rows.Close()
	var (
		last       a2astore.Task
		withEvents []int
		versions   []a2asrv.Version
	)
	for rows.Next() {
		if len(res.Tasks) == limit {
			res.NextPageToken = last.Token()
			break
		}
		var (
			body   []byte
			v      a2asrv.Version
			events int
		)
		if err := rows.Scan(&last.TimeMs, &last.ID, &v, &events, &body); err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		t, err := a2astore.DecodeTask(body)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		if events > 0 {
			withEvents = append(withEvents, len(res.Tasks))
			versions = append(versions, v)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	rows.Close()
	for i, n := range withEvents {
		if err := applyEvents(ctx, tx, res.Tasks[n], versions[i]); err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
	}
	return res, nil
}
