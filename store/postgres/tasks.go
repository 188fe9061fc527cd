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
	"novaos.dev/novaos/a2a/a2astore"
)

// TaskStore returns the database's task store.
func (db *DB) TaskStore() a2asrv.TaskStore { return &taskStore{db} }

type taskStore struct{ db *DB }

var _ a2asrv.TaskStore = (*taskStore)(nil)

func (s *taskStore) Create(ctx context.Context, scope a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("postgres: create task: %w", err)
	}
	// Nothing to queue for push delivery: a task being created has no
	// configs (Put needs the task; Delete deletes them with it), which
	// spares the most common write a statement.
	var created bool
	err = s.db.wr.do(ctx, newWrite(t.ID, `
		WITH ins AS (
			INSERT INTO a2a_tasks (id, tenant, owner, context_id, state, status_ts_ms, version, body, instance_id)
			VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8)
			ON CONFLICT (id) DO NOTHING
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM ins)`,
		[]any{t.ID, scope.Tenant, scope.Owner, t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body,
			s.db.instance},
		&created))
	if err != nil {
		return 0, fmt.Errorf("postgres: create task %s: %w", t.ID, err)
	}
	if !created {
		return 0, fmt.Errorf("postgres: create task %s: %w", t.ID, a2asrv.ErrExists)
	}
	return 1, nil
}

func (s *taskStore) Get(ctx context.Context, scope a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	notFound := fmt.Errorf("postgres: get task %s: %w", id, a2asrv.ErrNotFound)
	if !a2astore.ValidText(id, scope.Tenant, scope.Owner) {
		return nil, 0, notFound // PostgreSQL would reject the text
	}
	var (
		v      a2asrv.Version
		body   []byte
		events [][]byte
	)
	// The body and its appended events come from one statement, and so
	// from one snapshot.
	err := s.db.pool.QueryRow(ctx,
		`SELECT version, body, `+eventsColumn+` FROM a2a_tasks t WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, scope.Tenant, scope.Owner).Scan(&v, &body, &events)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, notFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: get task %s: %w", id, err)
	}
	t, err := decodeTask(body, events)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: get task %s: %w", id, err)
	}
	return t, v, nil
}

// eventsColumn selects the events appended to task row t, in order, or
// NULL when it has none.
const eventsColumn = `CASE WHEN t.events > 0 THEN (
	SELECT array_agg(e.body ORDER BY e.version) FROM a2a_task_events e
	WHERE e.task_id = t.id AND e.version <= t.version) END`

func decodeTask(body []byte, events [][]byte) (*a2a.Task, error) {
	t, err := a2astore.DecodeTask(body)
	if err != nil {
		return nil, err
	}
	if err := a2asrv.ApplyEncodedEvents(t, events); err != nil {
		return nil, err
	}
	return t, nil
}

func (s *taskStore) Update(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("postgres: update task: %w", err)
	}
	if err := s.rewrite(ctx, scope, t, body, prev, prev+1, "", taskPush, pushArgs(scope, t.ID), announce{}); err != nil {
		return 0, fmt.Errorf("postgres: update task %s: %w", t.ID, err)
	}
	return prev + 1, nil
}

// rewrite stores t whole at version next, dropping its events, if its
// version is prev (and guard, an extra condition on the row t, holds). One
// statement answers both questions: did the conditional update happen,
// and if not, does the task exist in this scope at all. src and srcArgs
// queue the write's push notifications (push.go); ann says how the write
// is announced to the replicas (feed.go).
func (s *taskStore) rewrite(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, body []byte, prev, next a2asrv.Version, guard string,
	src pushSource, srcArgs []any, ann announce) error {
	whole := body
	if ann.events != nil {
		whole = nil
	}
	if guard != "" {
		guard = " AND " + guard
	}
	var updated, exists bool
	err := s.db.wr.do(ctx, newWrite(t.ID, `
		WITH upd AS (
			UPDATE a2a_tasks t
			SET context_id = $5, state = $6, status_ts_ms = $7, body = $8, version = $9, events = 0, instance_id = $10
			WHERE id = $1 AND tenant = $2 AND owner = $3 AND version = $4`+guard+`
			RETURNING events
		), del AS (
			DELETE FROM a2a_task_events WHERE task_id = $1 AND EXISTS (SELECT 1 FROM upd)
		)
		SELECT EXISTS (SELECT 1 FROM upd),
			EXISTS (SELECT 1 FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3)`,
		[]any{t.ID, scope.Tenant, scope.Owner, int64(prev),
			t.ContextID, t.Status.State.String(), t.Status.Timestamp.UnixMilli(), body, int64(next), s.db.instance},
		&updated, &exists).push(src, srcArgs).then(notifySQL, s.db.notifyArgs(t.ID, prev, next, ann.events, whole, ann.settle)...))
	return versionedResult(err, updated, exists, prev)
}

// versionedResult maps the outcome of a versioned write to the store
// errors.
func versionedResult(err error, updated, exists bool, prev a2asrv.Version) error {
	switch {
	case err != nil:
		return err
	case updated:
		return nil
	case !exists:
		return a2asrv.ErrNotFound
	}
	return fmt.Errorf("at version %d: %w", prev, a2asrv.ErrConcurrentModification)
}

func (s *taskStore) Append(ctx context.Context, scope a2asrv.Scope, id string, prev a2asrv.Version, events []*a2a.StreamResponse, compact *a2a.Task) (a2asrv.Version, error) {
	next := prev + a2asrv.Version(len(events))
	body, bodies, err := a2astore.EncodeAppend(scope.Tenant, scope.Owner, id, events, compact)
	if err == nil && compact != nil {
		var notes [][]byte
		if notes, err = a2astore.AppendNotifications(events, bodies); err == nil {
			err = s.rewrite(ctx, scope, compact, body, prev, next, "", bodiesPush, pushArgs(scope, id, notes), announce{events: bodies})
		}
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: append to task %s: %w", id, err)
	}
	if compact != nil {
		return next, nil
	}
	if !a2astore.ValidText(id, scope.Tenant, scope.Owner) {
		return 0, fmt.Errorf("postgres: append to task %s: %w", id, a2asrv.ErrNotFound)
	}
	var (
		state *string
		tsMs  *int64
	)
	if st, ok := a2asrv.LastStatus(events); ok {
		name, ms := st.State.String(), st.Timestamp.UnixMilli()
		state, tsMs = &name, &ms
	}
	var updated, exists bool
	err = s.db.wr.do(ctx, newWrite(id, `
		WITH upd AS (
			UPDATE a2a_tasks
			SET version = $5, events = events + $6, instance_id = $10,
				state = COALESCE($7, state), status_ts_ms = COALESCE($8, status_ts_ms)
			WHERE id = $1 AND tenant = $2 AND owner = $3 AND version = $4
			RETURNING id
		), ins AS (
			INSERT INTO a2a_task_events (task_id, version, body)
			SELECT $1, $4 + u.ord, u.body FROM unnest($9::bytea[]) WITH ORDINALITY AS u(body, ord)
			WHERE EXISTS (SELECT 1 FROM upd)
		)
		SELECT EXISTS (SELECT 1 FROM upd),
			EXISTS (SELECT 1 FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3)`,
		[]any{id, scope.Tenant, scope.Owner, int64(prev), int64(next), len(events), state, tsMs, bodies, s.db.instance},
		&updated, &exists).push(eventsPush, pushArgs(scope, id, int64(prev), int64(next))).
		then(notifySQL, s.db.notifyArgs(id, prev, next, bodies, nil, false)...))
	if err := versionedResult(err, updated, exists, prev); err != nil {
		return 0, fmt.Errorf("postgres: append to task %s: %w", id, err)
	}
	return next, nil
}

func (s *taskStore) Delete(ctx context.Context, scope a2asrv.Scope, id string) error {
	if !a2astore.ValidText(id, scope.Tenant, scope.Owner) {
		return nil
	}
	// The notifications are dropped by a second statement, whose snapshot
	// has every write that queued to the task before the delete's lock.
	err := s.db.batch(ctx, func(b *pgx.Batch) {
		b.Queue(`
		WITH del AS (
			DELETE FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3 RETURNING id
		)
		DELETE FROM a2a_task_events WHERE task_id IN (SELECT id FROM del)`,
			id, scope.Tenant, scope.Owner)
		b.Queue(dropTaskPushSQL, id, scope.Tenant, scope.Owner)
	})
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
	var cur *a2astore.Task
	if q.PageToken != "" {
		c, err := a2astore.ParseTask(q.PageToken)
		if err != nil {
			return nil, fmt.Errorf("postgres: list tasks: %w", a2asrv.ErrBadPageToken)
		}
		cur = &c
	}
	if !a2astore.ValidText(scope.Tenant, scope.Owner, q.ContextID) {
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
		fmt.Fprintf(&where, ` AND status_ts_ms >= %s`, p.add(a2astore.CeilMillis(q.StatusAfter)))
	}
	pageWhere := where.String()
	if cur != nil {
		pageWhere += fmt.Sprintf(` AND (status_ts_ms, id) < (%s, %s)`, p.add(cur.TimeMs), p.add(cur.ID))
	}
	limit := a2astore.Limit(q.PageSize)
	// The count and the page come from one statement, and so from one
	// snapshot; an empty page still yields one row carrying the count.
	rows, err := s.db.pool.Query(ctx, `
		SELECT c.n, t.status_ts_ms, t.id, t.body, t.events
		FROM (SELECT count(*) AS n FROM a2a_tasks WHERE `+where.String()+`) c
		LEFT JOIN LATERAL (
			SELECT status_ts_ms, id, body, `+eventsColumn+` AS events FROM a2a_tasks t WHERE `+pageWhere+`
			ORDER BY status_ts_ms DESC, id DESC LIMIT `+p.add(limit+1)+`
		) t ON true
		ORDER BY t.status_ts_ms DESC, t.id DESC`, p...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	defer rows.Close()
	res := &a2asrv.ListResult{}
	var last a2astore.Task
	for rows.Next() {
		var (
			n      int
			ts     *int64
			id     *string
			body   []byte
			events [][]byte
		)
		if err := rows.Scan(&n, &ts, &id, &body, &events); err != nil {
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
		t, err := decodeTask(body, events)
		if err != nil {
			return nil, fmt.Errorf("postgres: list tasks: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
		last = a2astore.Task{TimeMs: *ts, ID: *id}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	return res, nil
}
