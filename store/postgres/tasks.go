package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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
		return 0, fmt.Errorf("postgres: create task: %w", err)
	}
	tag, err := s.db.pool.Exec(ctx, `
		INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body)
		VALUES ($1, $2, $3, $4, $5, $6, 1, $7)
		ON CONFLICT (id) DO NOTHING`,
		t.ID, scope.Tenant, scope.Owner, t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body)
	if err != nil {
		return 0, fmt.Errorf("postgres: create task %s: %w", t.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("postgres: create task %s: %w", t.ID, a2asrv.ErrExists)
	}
	return 1, nil
}

func (s *taskStore) Get(ctx context.Context, scope a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	notFound := fmt.Errorf("postgres: get task %s: %w", id, a2asrv.ErrNotFound)
	if !keyset.ValidText(id, scope.Tenant, scope.Owner) {
		return nil, 0, notFound // PostgreSQL would reject the text
	}
	var (
		v    a2asrv.Version
		body []byte
	)
	err := s.db.pool.QueryRow(ctx,
		`SELECT version, body FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, scope.Tenant, scope.Owner).Scan(&v, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, notFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: get task %s: %w", id, err)
	}
	t, err := keyset.DecodeTask(body)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: get task %s: %w", id, err)
	}
	return t, v, nil
}

func (s *taskStore) Update(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := keyset.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("postgres: update task: %w", err)
	}
	// One round trip answers both questions: did the conditional update
	// happen, and if not, does the task exist in this scope at all.
	var (
		next   *int64
		exists bool
	)
	err = s.db.pool.QueryRow(ctx, `
		WITH upd AS (
			UPDATE a2a_tasks
			SET context_id = $5, state = $6, status_ts_ms = $7, body = $8, version = version + 1
			WHERE id = $1 AND tenant = $2 AND owner = $3 AND version = $4
			RETURNING version
		)
		SELECT (SELECT version FROM upd),
			EXISTS (SELECT 1 FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3)`,
		t.ID, scope.Tenant, scope.Owner, int64(prev),
		t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body,
	).Scan(&next, &exists)
	switch {
	case err != nil:
		return 0, fmt.Errorf("postgres: update task %s: %w", t.ID, err)
	case next != nil:
		return a2asrv.Version(*next), nil
	case !exists:
		return 0, fmt.Errorf("postgres: update task %s: %w", t.ID, a2asrv.ErrNotFound)
	}
	return 0, fmt.Errorf("postgres: update task %s at version %d: %w", t.ID, prev, a2asrv.ErrConcurrentModification)
}

func (s *taskStore) Delete(ctx context.Context, scope a2asrv.Scope, id string) error {
	if !keyset.ValidText(id, scope.Tenant, scope.Owner) {
		return nil
	}
	_, err := s.db.pool.Exec(ctx,
		`DELETE FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, scope.Tenant, scope.Owner)
	if err != nil {
		return fmt.Errorf("postgres: delete task %s: %w", id, err)
	}
	return nil
}

// params collects positional query arguments.
type params []any

func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

func (s *taskStore) List(ctx context.Context, scope a2asrv.Scope, q a2asrv.ListQuery) (*a2asrv.ListResult, error) {
	var cur *keyset.Task
	if q.PageToken != "" {
		c, err := keyset.ParseTask(q.PageToken)
		if err != nil {
			return nil, fmt.Errorf("postgres: list tasks: %w", a2asrv.ErrBadPageToken)
		}
		cur = &c
	}
	if !keyset.ValidText(scope.Tenant, scope.Owner, q.ContextID) {
		return &a2asrv.ListResult{}, nil
	}
	// Only the filters in use go into the query, so the planner can pick
	// the index that fits them.
	var (
		p     params
		where strings.Builder
	)
	fmt.Fprintf(&where, `tenant = %s AND owner = %s`, p.add(scope.Tenant), p.add(scope.Owner))
	if q.ContextID != "" {
		fmt.Fprintf(&where, ` AND context_id = %s`, p.add(q.ContextID))
	}
	if q.State != a2a.TaskStateUnspecified {
		fmt.Fprintf(&where, ` AND state = %s`, p.add(q.State.String()))
	}
	if !q.StatusAfter.IsZero() {
		fmt.Fprintf(&where, ` AND status_ts_ms >= %s`, p.add(keyset.CeilMillis(q.StatusAfter)))
	}
	pageWhere := where.String()
	if cur != nil {
		pageWhere += fmt.Sprintf(` AND (status_ts_ms, id) < (%s, %s)`, p.add(cur.TimeMs), p.add(cur.ID))
	}
	limit := keyset.Limit(q.PageSize)
	// The count and the page come from one statement, and so from one
	// snapshot; an empty page still yields one row carrying the count.
	rows, err := s.db.pool.Query(ctx, `
		SELECT c.n, t.status_ts_ms, t.id, t.body
		FROM (SELECT count(*) AS n FROM a2a_tasks WHERE `+where.String()+`) c
		LEFT JOIN LATERAL (
			SELECT status_ts_ms, id, body FROM a2a_tasks WHERE `+pageWhere+`
			ORDER BY status_ts_ms DESC, id DESC LIMIT `+p.add(limit+1)+`
		) t ON true
		ORDER BY t.status_ts_ms DESC, t.id DESC`, p...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	defer rows.Close()
	res := &a2asrv.ListResult{}
	var last keyset.Task
	for rows.Next() {
		var (
			n    int
			ts   *int64
			id   *string
			body []byte
		)
		if err := rows.Scan(&n, &ts, &id, &body); err != nil {
			return nil, fmt.Errorf("postgres: list tasks: %w", err)
		}
		res.TotalSize = n
		if ts == nil {
			continue // the count row of an empty page
		}
		if len(res.Tasks) == limit {
			res.NextPageToken = last.Token()
			break
		}
		t, err := keyset.DecodeTask(body)
		if err != nil {
			return nil, fmt.Errorf("postgres: list tasks: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
		last = keyset.Task{TimeMs: *ts, ID: *id}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	return res, nil
}
