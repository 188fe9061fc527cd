package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Push-notification delivery: the outbox a task write queues to, in its
// own transaction (migration 0010).
//
// A task write is its usual statement followed, in the same batch and so
// in the same implicit transaction, by a statement that queues the write's
// notifications for the task's active configs. The second statement runs
// after the first holds the task row's lock, with a snapshot taken then,
// so it sees every config committed before: a config put (which locks the
// task row before it reads the task) either commits first, and the write
// queues for it, or waits, and then reads the task with the write in it.
// The queue statement finds its notifications only among rows this
// transaction wrote (xmin is ours), so a write that changed nothing queues
// nothing; a transaction holds other writes too, but never two of one task
// (writer.go).

// pushSource is a query of (ord, body) rows: a write's notifications.
type pushSource string

const (
	// taskPush is the task row as written: one "task" notification.
	taskPush pushSource = `SELECT 1::bigint AS ord, '{"task":'::bytea || t.body || '}'::bytea AS body FROM a2a_tasks t
		WHERE t.id = $3 AND t.tenant = $1 AND t.owner = $2 AND t.xmin = pg_current_xact_id()::xid`
	// eventsPush is the events an append wrote, versions $5 < v <= $6.
	eventsPush pushSource = `SELECT e.version AS ord, e.body FROM a2a_task_events e
		WHERE e.task_id = $3 AND e.version > $5 AND e.version <= $6 AND e.xmin = pg_current_xact_id()::xid`
	// bodiesPush is the bodies in $5 when the write wrote the task row: a
	// compacted append's events, which are not stored as events.
	bodiesPush pushSource = `SELECT u.ord, u.body FROM unnest($5::bytea[]) WITH ORDINALITY AS u(body, ord)
		WHERE EXISTS (SELECT 1 FROM a2a_tasks t
			WHERE t.id = $3 AND t.tenant = $1 AND t.owner = $2 AND t.xmin = pg_current_xact_id()::xid)`
)

// queue is the statement that queues src's notifications; its arguments
// are tenant, owner, task id, now in ms, then src's own.
func (src pushSource) queue() string {
	return `WITH src AS (` + string(src) + `), cfg AS (
		UPDATE a2a_push_configs SET pending = pending + (SELECT count(*) FROM src), due_ms = COALESCE(due_ms, $4)
		WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND state = 'active' AND EXISTS (SELECT 1 FROM src)
		RETURNING id
	)
	INSERT INTO a2a_push_outbox (tenant, owner, task_id, config_id, queued_ms, body)
	SELECT $1, $2, $3, cfg.id, $4, src.body FROM cfg CROSS JOIN src ORDER BY cfg.id, src.ord`
}

// pushArgs are queue's first four arguments.
func pushArgs(scope a2asrv.Scope, taskID string, more ...any) []any {
	return append([]any{scope.Tenant, scope.Owner, taskID, time.Now().UnixMilli()}, more...)
}

// push appends to w, a task write, the statement that queues its
// notifications, run after w's own in the same transaction.
func (w *write) push(src pushSource, srcArgs []any) *write { return w.then(src.queue(), srcArgs...) }

// PushOutbox returns the database's push-notification outbox, filled by
// the task store's writes for the configs of PushConfigStore.
func (db *DB) PushOutbox() a2asrv.PushOutbox { return &pushConfigStore{db} }

var (
	_ a2asrv.PushOutbox        = (*pushConfigStore)(nil)
	_ a2asrv.PushQueue         = (*pushConfigStore)(nil)
	_ a2asrv.PushDeliveryStore = (*pushConfigStore)(nil)
)

// put stores cfg and starts its stream afresh: pending notifications
// dropped, the state active, and the task as it stands queued first.
func (s *pushConfigStore) put(ctx context.Context, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig, body []byte) error {
	return pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// Lock the task first, then read it in a statement of its own,
		// whose snapshot has every write that held the lock before.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM a2a_tasks WHERE id = $1 AND tenant = $2 AND owner = $3 FOR SHARE`,
			cfg.TaskID, scope.Tenant, scope.Owner); err != nil {
			return err
		}
		var (
			first  []byte
			tb     []byte
			events [][]byte
		)
		err := tx.QueryRow(ctx, `SELECT body, `+eventsColumn+` FROM a2a_tasks t WHERE id = $1 AND tenant = $2 AND owner = $3`,
			cfg.TaskID, scope.Tenant, scope.Owner).Scan(&tb, &events)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case len(events) == 0:
			first = a2astore.TaskNotification(tb)
		default:
			t, err := decodeTask(tb, events)
			if err != nil {
				return err
			}
			if tb, err = a2astore.EncodeTask(scope.Tenant, scope.Owner, t); err != nil {
				return err
			}
			first = a2astore.TaskNotification(tb)
		}
		now := time.Now().UnixMilli()
		pending, due := 0, (*int64)(nil)
		if first != nil {
			pending, due = 1, &now
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO a2a_push_configs (tenant, owner, task_id, id, body, pending, due_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant, owner, task_id, id) DO UPDATE SET body = EXCLUDED.body, state = 'active',
				pending = EXCLUDED.pending, due_ms = EXCLUDED.due_ms, lease = '', attempts = 0, last_error = ''`,
			scope.Tenant, scope.Owner, cfg.TaskID, cfg.ID, body, pending, due); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, dropStreamSQL, cfg.TaskID, scope.Tenant, scope.Owner, cfg.ID); err != nil || first == nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO a2a_push_outbox (tenant, owner, task_id, config_id, queued_ms, body)
			VALUES ($1, $2, $3, $4, $5, $6)`, scope.Tenant, scope.Owner, cfg.TaskID, cfg.ID, now, first)
		return err
	})
}

const (
	dropStreamSQL   = `DELETE FROM a2a_push_outbox WHERE task_id = $1 AND tenant = $2 AND owner = $3 AND config_id = $4`
	dropTaskPushSQL = `WITH d AS (DELETE FROM a2a_push_outbox WHERE task_id = $1 AND tenant = $2 AND owner = $3)
		DELETE FROM a2a_push_configs WHERE tenant = $2 AND owner = $3 AND task_id = $1`
)

// batch runs statements as one implicit transaction; each runs with a
// snapshot taken when it starts, after the locks the ones before took.
func (db *DB) batch(ctx context.Context, stmts ...func(b *pgx.Batch)) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		st(b)
	}
	return db.pool.SendBatch(ctx, b).Close()
}

// pushQueuedSQL sums the pending counters of the streams that have a
// head due: the partial index on due_ms reads those rows only, however
// many configs are idle or dead.
const pushQueuedSQL = `SELECT COALESCE(SUM(pending), 0) FROM a2a_push_configs WHERE due_ms IS NOT NULL`

// PushQueued implements a2asrv.PushQueue.
func (s *pushConfigStore) PushQueued(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.pool.QueryRow(ctx, pushQueuedSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: push queue depth: %w", err)
	}
	return n, nil
}

func (s *pushConfigStore) ClaimPush(ctx context.Context, now time.Time, max int, lease time.Duration) ([]*a2asrv.PushDelivery, error) {
	if max <= 0 {
		return nil, nil
	}
	tok := a2astore.NewLease()
	rows, err := s.db.pool.Query(ctx, `
		WITH c AS (
			SELECT tenant, owner, task_id, id FROM a2a_push_configs
			WHERE due_ms <= $1 ORDER BY due_ms LIMIT $2 FOR UPDATE SKIP LOCKED
		), u AS (
			UPDATE a2a_push_configs p SET due_ms = $3, lease = $4 FROM c
			WHERE p.tenant = c.tenant AND p.owner = c.owner AND p.task_id = c.task_id AND p.id = c.id
			RETURNING p.tenant, p.owner, p.task_id, p.id, p.body, p.attempts
		)
		SELECT u.tenant, u.owner, u.body, u.attempts, o.seq, o.queued_ms, o.body
		FROM u LEFT JOIN LATERAL (
			SELECT seq, queued_ms, body FROM a2a_push_outbox o
			WHERE o.task_id = u.task_id AND o.tenant = u.tenant AND o.owner = u.owner AND o.config_id = u.id
			ORDER BY seq LIMIT 1) o ON true`,
		now.UnixMilli(), max, now.Add(lease).UnixMilli(), tok)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim push notifications: %w", err)
	}
	var out, headless []*a2asrv.PushDelivery
	for rows.Next() {
		d := &a2asrv.PushDelivery{Lease: tok}
		var (
			cfg    []byte
			seq    *int64
			queued *int64
		)
		if err := rows.Scan(&d.Scope.Tenant, &d.Scope.Owner, &cfg, &d.Attempts, &seq, &queued, &d.Body); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: claim push notifications: %w", err)
		}
		if d.Config, err = a2astore.DecodeConfig(cfg); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: claim push notifications: %w", err)
		}
		if seq == nil {
			headless = append(headless, d)
			continue
		}
		d.Seq, d.Queued = *seq, time.UnixMilli(*queued)
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim push notifications: %w", err)
	}
	for _, d := range headless {
		// Counted but not seen: a write committed after this claim's
		// snapshot and before its lock. Due again shortly.
		if _, err := s.db.pool.Exec(ctx, `UPDATE a2a_push_configs
			SET due_ms = CASE WHEN pending > 0 THEN $6::bigint END, lease = ''
			WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4 AND lease = $5`,
			d.Scope.Tenant, d.Scope.Owner, d.Config.TaskID, d.Config.ID, tok, now.Add(time.Second).UnixMilli()); err != nil {
			return nil, fmt.Errorf("postgres: claim push notifications: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b *a2asrv.PushDelivery) int { return a.Queued.Compare(b.Queued) })
	return out, nil
}

func (s *pushConfigStore) SettlePush(ctx context.Context, d *a2asrv.PushDelivery, st a2asrv.PushSettlement) (*a2asrv.PushDelivery, error) {
	st, err := st.Normalize()
	if err != nil {
		return nil, err
	}
	at := st.At.UnixMilli()
	const where = ` WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4 AND lease = $5 AND state = 'active'`
	key := []any{d.Scope.Tenant, d.Scope.Owner, d.Config.TaskID, d.Config.ID, d.Lease}
	var (
		settled bool
		next    *a2asrv.PushDelivery
	)
	switch st.Outcome {
	case a2asrv.PushDelivered:
		due, lease := at, ""
		if st.Continue > 0 {
			due, lease = st.At.Add(st.Continue).UnixMilli(), d.Lease
		}
		// The head is deleted by its seq, which needs no later snapshot;
		// the next one is read in this statement's snapshot, which may
		// miss one committed just before the lock (then it is released).
		var (
			pending *int64
			seq     *int64
			queued  *int64
			body    []byte
		)
		err = s.db.pool.QueryRow(ctx, `
			WITH u AS (
				UPDATE a2a_push_configs SET pending = pending - 1,
					due_ms = CASE WHEN pending > 1 THEN $6::bigint END,
					lease = CASE WHEN pending > 1 THEN $7 ELSE '' END,
					attempts = 0, last_error = '', last_attempt_ms = $8, last_delivered_ms = $8`+where+`
				RETURNING pending
			), d AS (
				DELETE FROM a2a_push_outbox WHERE seq = $9 AND EXISTS (SELECT 1 FROM u)
			)
			SELECT (SELECT pending FROM u), n.seq, n.queued_ms, n.body FROM (SELECT 1) one
			LEFT JOIN LATERAL (
				SELECT seq, queued_ms, body FROM a2a_push_outbox o
				WHERE $7 <> '' AND o.task_id = $3 AND o.tenant = $1 AND o.owner = $2 AND o.config_id = $4 AND o.seq > $9
				ORDER BY seq LIMIT 1) n ON true`,
			append(key, due, lease, at, d.Seq)...).Scan(&pending, &seq, &queued, &body)
		settled = err == nil && pending != nil
		switch {
		case !settled || lease == "" || *pending == 0:
		case seq != nil:
			next = &a2asrv.PushDelivery{Scope: d.Scope, Config: d.Config, Seq: *seq, Queued: time.UnixMilli(*queued), Body: body, Lease: d.Lease}
		default:
			_, err = s.db.pool.Exec(ctx, `UPDATE a2a_push_configs SET due_ms = $6, lease = ''`+where, append(key, at)...)
		}
	case a2asrv.PushRetry:
		var tag interface{ RowsAffected() int64 }
		tag, err = s.db.pool.Exec(ctx, `UPDATE a2a_push_configs SET due_ms = $6, lease = '', attempts = attempts + 1,
			last_error = $7, last_attempt_ms = $8`+where, append(key, st.Next.UnixMilli(), st.Error, at)...)
		settled = err == nil && tag.RowsAffected() == 1
	case a2asrv.PushDead:
		// The stream's rows are dropped by a second statement, whose
		// snapshot has every write that queued to it before the lock.
		b := &pgx.Batch{}
		b.Queue(`UPDATE a2a_push_configs SET state = 'dead', pending = 0, due_ms = NULL, lease = '',
			attempts = attempts + 1, last_error = $6, last_attempt_ms = $7`+where, append(key, st.Error, at)...)
		b.Queue(`DELETE FROM a2a_push_outbox o WHERE task_id = $1 AND tenant = $2 AND owner = $3 AND config_id = $4
			AND EXISTS (SELECT 1 FROM a2a_push_configs WHERE tenant = $2 AND owner = $3 AND task_id = $1 AND id = $4 AND state = 'dead')`,
			d.Config.TaskID, d.Scope.Tenant, d.Scope.Owner, d.Config.ID)
		br := s.db.pool.SendBatch(ctx, b)
		tag, e := br.Exec()
		if e == nil {
			_, e = br.Exec()
		}
		if cerr := br.Close(); e == nil {
			e = cerr
		}
		err, settled = e, e == nil && tag.RowsAffected() == 1
	}
	if err == nil && !settled {
		err = a2asrv.ErrPushLeaseLost
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: settle push notification %s/%s: %w", d.Config.TaskID, d.Config.ID, err)
	}
	return next, nil
}

func (s *pushConfigStore) PushDeliveryState(ctx context.Context, scope a2asrv.Scope, taskID, id string) (*a2asrv.PushDeliveryState, error) {
	notFound := fmt.Errorf("postgres: push delivery state %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	if !a2astore.ValidText(scope.Tenant, scope.Owner, taskID, id) {
		return nil, notFound
	}
	st, err := sqlstore.ScanPushState(s.db.pool.QueryRow(ctx, `
		SELECT `+sqlstore.PushStateCols+` FROM a2a_push_configs
		WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4`,
		scope.Tenant, scope.Owner, taskID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: push delivery state %s/%s: %w", taskID, id, err)
	}
	return st, nil
}
