package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Push-notification delivery: the outbox a task write queues to, in its
// own transaction (migration 0010). The writer runs one transaction at a
// time, so a config put, a task write and a settlement never interleave.
const (
	// markPushSQL counts a write's notifications into the task's active
	// configs; when it changes no row, the task has none and nothing is
	// queued.
	markPushSQL = `UPDATE a2a_push_configs SET pending = pending + ?, due_ms = COALESCE(due_ms, ?)
		WHERE tenant = ? AND owner = ? AND task_id = ? AND state = 'active'`
	queuePushSQL = `INSERT INTO a2a_push_outbox (tenant, owner, task_id, config_id, queued_ms, body)
		SELECT tenant, owner, task_id, id, ?, ? FROM a2a_push_configs
		WHERE tenant = ? AND owner = ? AND task_id = ? AND state = 'active'`

	claimPushSQL = `UPDATE a2a_push_configs SET due_ms = ?, lease = ?
		WHERE (tenant, owner, task_id, id) IN (
			SELECT tenant, owner, task_id, id FROM a2a_push_configs
			WHERE due_ms <= ? ORDER BY due_ms LIMIT ?)
		RETURNING tenant, owner, task_id, id, body, attempts`
	headPushSQL = `SELECT seq, queued_ms, body FROM a2a_push_outbox
		WHERE task_id = ? AND tenant = ? AND owner = ? AND config_id = ? ORDER BY seq LIMIT 1`
	settleWhere = ` WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ? AND lease = ? AND state = 'active'`
	// settleDeliverSQL keeps the lease (the first argument, '' or the
	// lease) when a notification is pending after the one delivered.
	settleDeliverSQL = `UPDATE a2a_push_configs SET pending = pending - 1,
		due_ms = CASE WHEN pending > 1 THEN ? END, lease = CASE WHEN pending > 1 THEN ? ELSE '' END,
		attempts = 0, last_error = '', last_attempt_ms = ?, last_delivered_ms = ?` + settleWhere + ` RETURNING pending`
	settleRetrySQL = `UPDATE a2a_push_configs SET due_ms = ?, lease = '', attempts = attempts + 1,
		last_error = ?, last_attempt_ms = ?` + settleWhere
	settleDeadSQL = `UPDATE a2a_push_configs SET state = 'dead', pending = 0, due_ms = NULL, lease = '',
		attempts = attempts + 1, last_error = ?, last_attempt_ms = ?` + settleWhere
	deliveredSQL  = `DELETE FROM a2a_push_outbox WHERE seq = ?`
	dropStreamSQL = `DELETE FROM a2a_push_outbox WHERE task_id = ? AND tenant = ? AND owner = ? AND config_id = ?`
)

// pushWrites are the outbox's statements, prepared once on the write
// connection with the task writes: compiling them anew cost a fifth of a
// delivery's CPU.
var pushWrites = []string{markPushSQL, queuePushSQL, claimPushSQL, headPushSQL,
	settleDeliverSQL, settleRetrySQL, settleDeadSQL, deliveredSQL, dropStreamSQL}

// query is exec for a query of rows.
func (w *writer) query(tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := w.prepared[query]; st != nil {
		return tx.Stmt(st).Query(args...)
	}
	return tx.Query(query, args...)
}

// PushOutbox returns the database's push-notification outbox, filled by
// the task store's writes for the configs of PushConfigStore.
func (db *DB) PushOutbox() a2asrv.PushOutbox { return &pushConfigStore{db} }

var (
	_ a2asrv.PushOutbox        = (*pushConfigStore)(nil)
	_ a2asrv.PushQueue         = (*pushConfigStore)(nil)
	_ a2asrv.PushDeliveryStore = (*pushConfigStore)(nil)
)

// queuePush queues the notifications of a task write for every active
// config of the task. bodies is called only when there is one, so a task
// without configs pays one index lookup.
func queuePush(w *writer, tx *sql.Tx, scope a2asrv.Scope, taskID string, n int, bodies func() ([][]byte, error)) error {
	now := nowMs()
	res, err := w.exec(tx, markPushSQL, n, now, scope.Tenant, scope.Owner, taskID)
	if err != nil {
		return err
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		return err
	}
	bs, err := bodies()
	if err != nil {
		return err
	}
	for _, b := range bs {
		if _, err := w.exec(tx, queuePushSQL, now, b, scope.Tenant, scope.Owner, taskID); err != nil {
			return err
		}
	}
	return nil
}

// taskBodies is queuePush's bodies for a task written whole.
func taskBodies(body []byte) func() ([][]byte, error) {
	return func() ([][]byte, error) { return [][]byte{a2astore.TaskNotification(body)}, nil }
}

// put stores cfg and starts its stream afresh: pending notifications
// dropped, the state active, and the task as it stands queued first.
func (s *pushConfigStore) put(tx *sql.Tx, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig, body []byte) error {
	var first []byte
	t, v, err := (&taskStore{s.db}).get(context.Background(), tx, scope, cfg.TaskID)
	if errors.Is(err, errHasEvents) {
		err = applyEvents(context.Background(), tx, t, v)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		tb, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
		if err != nil {
			return err
		}
		first = a2astore.TaskNotification(tb)
	}
	now := nowMs()
	pending, due := 0, sql.NullInt64{}
	if first != nil {
		pending, due = 1, sql.NullInt64{Int64: now, Valid: true}
	}
	if _, err := tx.Exec(`
		INSERT INTO a2a_push_configs (tenant, owner, task_id, id, body, pending, due_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, owner, task_id, id) DO UPDATE SET body = excluded.body, state = 'active',
			pending = excluded.pending, due_ms = excluded.due_ms, lease = '', attempts = 0, last_error = ''`,
		scope.Tenant, scope.Owner, cfg.TaskID, cfg.ID, body, pending, due); err != nil {
		return err
	}
	if err := dropStream(s.db.wr, tx, scope, cfg.TaskID, cfg.ID); err != nil || first == nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO a2a_push_outbox (tenant, owner, task_id, config_id, queued_ms, body) VALUES (?, ?, ?, ?, ?, ?)`,
		scope.Tenant, scope.Owner, cfg.TaskID, cfg.ID, now, first)
	return err
}

// dropStream deletes a config's pending notifications.
func dropStream(w *writer, tx *sql.Tx, scope a2asrv.Scope, taskID, id string) error {
	_, err := w.exec(tx, dropStreamSQL, taskID, scope.Tenant, scope.Owner, id)
	return err
}

// dropTaskPush deletes a task's push configs and their pending
// notifications.
func dropTaskPush(tx *sql.Tx, scope a2asrv.Scope, taskID string) error {
	if _, err := tx.Exec(`DELETE FROM a2a_push_outbox WHERE task_id = ? AND tenant = ? AND owner = ?`,
		taskID, scope.Tenant, scope.Owner); err != nil {
		return err
	}
	_, err := tx.Exec(`DELETE FROM a2a_push_configs WHERE tenant = ? AND owner = ? AND task_id = ?`, scope.Tenant, scope.Owner, taskID)
	return err
}

// pushQueuedSQL sums the pending counters of the streams that have a
// head due: the partial index on due_ms reads those rows only, however
// many configs are idle or dead.
const pushQueuedSQL = `SELECT COALESCE(SUM(pending), 0) FROM a2a_push_configs WHERE due_ms IS NOT NULL`

// PushQueued implements a2asrv.PushQueue.
func (s *pushConfigStore) PushQueued(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.r.QueryRowContext(ctx, pushQueuedSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: push queue depth: %w", err)
	}
	return n, nil
}

func (s *pushConfigStore) ClaimPush(ctx context.Context, now time.Time, max int, lease time.Duration) ([]*a2asrv.PushDelivery, error) {
	if max <= 0 {
		return nil, nil
	}
	tok := a2astore.NewLease()
	var out []*a2asrv.PushDelivery
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := s.db.wr.query(tx, claimPushSQL, now.Add(lease).UnixMilli(), tok, now.UnixMilli(), max)
		if err != nil {
			return err
		}
		for rows.Next() {
			d := &a2asrv.PushDelivery{Lease: tok}
			var body []byte
			if err := rows.Scan(&d.Scope.Tenant, &d.Scope.Owner, new(string), new(string), &body, &d.Attempts); err != nil {
				rows.Close()
				return err
			}
			if d.Config, err = a2astore.DecodeConfig(body); err != nil {
				rows.Close()
				return err
			}
			out = append(out, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		kept := out[:0]
		for _, d := range out {
			var queued int64
			err := s.db.wr.queryRow(tx, headPushSQL,
				d.Config.TaskID, d.Scope.Tenant, d.Scope.Owner, d.Config.ID).Scan(&d.Seq, &queued, &d.Body)
			if errors.Is(err, sql.ErrNoRows) {
				// Counted but not there: nothing is pending after all.
				if _, err := tx.Exec(`UPDATE a2a_push_configs SET pending = 0, due_ms = NULL, lease = ''
					WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?`,
					d.Scope.Tenant, d.Scope.Owner, d.Config.TaskID, d.Config.ID); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			d.Queued = time.UnixMilli(queued)
			kept = append(kept, d)
		}
		out = kept
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim push notifications: %w", err)
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
	key := []any{d.Scope.Tenant, d.Scope.Owner, d.Config.TaskID, d.Config.ID, d.Lease}
	var next *a2asrv.PushDelivery
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		next = nil
		w := s.db.wr
		if st.Outcome == a2asrv.PushDelivered {
			due, lease := at, ""
			if st.Continue > 0 {
				due, lease = st.At.Add(st.Continue).UnixMilli(), d.Lease
			}
			var pending int
			err := w.queryRow(tx, settleDeliverSQL, append([]any{due, lease, at, at}, key...)...).Scan(&pending)
			if errors.Is(err, sql.ErrNoRows) {
				return a2asrv.ErrPushLeaseLost
			}
			if err != nil {
				return err
			}
			if _, err := w.exec(tx, deliveredSQL, d.Seq); err != nil || pending == 0 || lease == "" {
				return err
			}
			n := &a2asrv.PushDelivery{Scope: d.Scope, Config: d.Config, Lease: d.Lease}
			var queued int64
			if err := w.queryRow(tx, headPushSQL, d.Config.TaskID, d.Scope.Tenant, d.Scope.Owner, d.Config.ID).
				Scan(&n.Seq, &queued, &n.Body); err != nil {
				return err // the writer holds the only write: a counted row is there
			}
			n.Queued, next = time.UnixMilli(queued), n
			return nil
		}
		var res sql.Result
		var err error
		switch st.Outcome {
		case a2asrv.PushRetry:
			res, err = w.exec(tx, settleRetrySQL, append([]any{st.Next.UnixMilli(), st.Error, at}, key...)...)
		case a2asrv.PushDead:
			res, err = w.exec(tx, settleDeadSQL, append([]any{st.Error, at}, key...)...)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, a2asrv.ErrPushLeaseLost)
		}
		if st.Outcome == a2asrv.PushDead {
			return dropStream(w, tx, d.Scope, d.Config.TaskID, d.Config.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: settle push notification %s/%s: %w", d.Config.TaskID, d.Config.ID, err)
	}
	return next, nil
}

func (s *pushConfigStore) PushDeliveryState(ctx context.Context, scope a2asrv.Scope, taskID, id string) (*a2asrv.PushDeliveryState, error) {
	st, err := sqlstore.ScanPushState(s.db.r.QueryRowContext(ctx, `
		SELECT `+sqlstore.PushStateCols+` FROM a2a_push_configs
		WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?`,
		scope.Tenant, scope.Owner, taskID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: push delivery state %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: push delivery state %s/%s: %w", taskID, id, err)
	}
	return st, nil
}
