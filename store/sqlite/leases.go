package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/store/lease"
)

// A file is normally used by one process at a time, but nothing here
// assumes it: each DB is an instance with a lease of its own (store/lease),
// and a stale lease, not the absence of other processes, is what marks a
// task as left behind.

// orphanStates is the SQL list of a2asrv.OrphanStates; the partial index of
// migration 0005 names the same states.
var orphanStates = sqlstore.StateList(a2asrv.OrphanStates())

func nowMs() int64 { return time.Now().UnixMilli() }

// startLease registers the DB's instance and keeps its lease renewed. The
// first renewal happens here, so the lease exists before any task write.
func (db *DB) startLease(ctx context.Context, o lease.Options) error {
	db.instance = lease.NewID()
	// One write per heartbeat: the renewal, and the purge of lapsed leases,
	// which decide nothing that a missing one does not and so are dropped
	// rather than kept forever.
	renew := func(ctx context.Context) error {
		now := nowMs()
		return db.wr.do(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`
				INSERT INTO a2a_instances (id, heartbeat_ms, expires_ms) VALUES (?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms, expires_ms = excluded.expires_ms`,
				db.instance, now, now+o.Expiry.Milliseconds())
			if err != nil {
				return err
			}
			_, err = tx.Exec(`DELETE FROM a2a_instances WHERE expires_ms < ?`, now)
			return err
		})
	}
	if err := renew(ctx); err != nil {
		return fmt.Errorf("sqlite: register instance: %w", err)
	}
	db.lease = lease.Start(o, renew, func(err error) {
		db.log.Warn("sqlite: renew instance lease", "instance", db.instance, "err", err)
	})
	return nil
}

// stopLease ends the heartbeat and gives the lease up, so the tasks this
// instance leaves unfinished are at once orphans for the next sweep.
func (db *DB) stopLease() {
	if db.lease == nil {
		return
	}
	db.lease.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := db.wr.do(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM a2a_instances WHERE id = ?`, db.instance)
		return err
	})
	if err != nil && !errors.Is(err, errClosed) { // closed twice: released already
		db.log.Warn("sqlite: release instance lease", "instance", db.instance, "err", err)
	}
}

// Recoverer returns the database's side of crash recovery: the tasks other
// instances left SUBMITTED or WORKING when they died, for a2asrv.Recover.
// A row it cannot read is logged once per Recoverer, at its first sweep.
func (db *DB) Recoverer() a2asrv.Recoverer { return recoverer{db, new(lease.Noted)} }

type recoverer struct {
	db         *DB
	unreadable *lease.Noted
}

var _ a2asrv.Recoverer = recoverer{}

func (r recoverer) Orphans(ctx context.Context, after string, limit int) ([]a2asrv.Orphan, string, error) {
	// An instance never settles its own tasks: while it runs, their
	// executions are alive, even if its lease lapsed (a suspended laptop).
	// The partial index holds only unsettled rows, few next to the table;
	// sorting those beats walking the whole primary key in id order.
	rows, err := r.db.r.QueryContext(ctx, `
		SELECT t.tenant, t.owner, t.id FROM a2a_tasks t INDEXED BY a2a_tasks_unsettled
		WHERE t.state IN `+orphanStates+` AND t.instance_id <> ? AND t.id > ?
		AND NOT EXISTS (SELECT 1 FROM a2a_instances i WHERE i.id = t.instance_id AND i.expires_ms >= ?)
		ORDER BY t.id LIMIT ?`, r.db.instance, after, nowMs(), limit)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: find orphans: %w", err)
	}
	type key struct {
		scope a2asrv.Scope
		id    string
	}
	var keys []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.scope.Tenant, &k.scope.Owner, &k.id); err != nil {
			rows.Close()
			return nil, "", fmt.Errorf("sqlite: find orphans: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("sqlite: find orphans: %w", err)
	}
	next := ""
	if len(keys) == limit {
		next = keys[len(keys)-1].id
	}
	// Each orphan is read as Get reads it, with its appended events.
	tasks := taskStore{r.db}
	out := make([]a2asrv.Orphan, 0, len(keys))
	for _, k := range keys {
		t, v, err := tasks.Get(ctx, k.scope, k.id)
		switch {
		case errors.Is(err, a2asrv.ErrNotFound):
			continue // deleted since
		case ctx.Err() != nil:
			return nil, "", fmt.Errorf("sqlite: find orphans: %w", context.Cause(ctx))
		case err == nil && t.ID != k.id:
			err = fmt.Errorf("its body names task %q", t.ID)
		}
		if err != nil {
			// Passed over, not fatal: one bad row must not keep every
			// other orphan from being settled.
			if r.unreadable.First(k.id) {
				r.db.log.Warn("sqlite: an orphaned task cannot be read; it is left as it is", "task_id", k.id, "err", err)
			}
			continue
		}
		out = append(out, a2asrv.Orphan{Scope: k.scope, Task: t, Version: v})
	}
	return out, next, nil
}

func (r recoverer) Settle(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: settle task: %w", err)
	}
	next := prev + a2asrv.RecoveryVersionGap
	err = r.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The writer's transaction holds the file's write lock from its
		// start, so no lease is renewed between this check and the write.
		var live bool
		err := tx.QueryRow(`
			SELECT EXISTS (SELECT 1 FROM a2a_tasks t JOIN a2a_instances i ON i.id = t.instance_id
				WHERE t.id = ? AND i.expires_ms >= ?)`,
			t.ID, nowMs()).Scan(&live)
		switch {
		case err != nil:
			return err
		case live:
			return fmt.Errorf("its writer is alive: %w", a2asrv.ErrConcurrentModification)
		}
		if err := rewrite(r.db.wr, tx, scope, t, body, prev, next, r.db.instance); err != nil {
			return err
		}
		return queuePush(r.db.wr, tx, scope, t.ID, 1, taskBodies(body))
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: settle task %s: %w", t.ID, err)
	}
	return next, nil
}
