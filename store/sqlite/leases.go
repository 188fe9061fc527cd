package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/keyset"
	"novaos.dev/novaos/store/lease"
)

// A file is normally used by one process at a time, but nothing here
// assumes it: each DB is an instance with a lease of its own (store/lease),
// and a stale lease, not the absence of other processes, is what marks a
// task as left behind.

// orphanStates is the SQL list of a2asrv.OrphanStates; the partial index of
// migration 0005 names the same states.
var orphanStates = keyset.StateList(a2asrv.OrphanStates())

func nowMs() int64 { return time.Now().UnixMilli() }

// startLease registers the DB's instance and keeps its lease renewed. The
// first renewal happens here, so the lease exists before any task write.
func (db *DB) startLease(ctx context.Context, o lease.Options) error {
	db.instance = lease.NewID()
	renew := func(ctx context.Context) error {
		now := nowMs()
		return db.wr.do(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`
				INSERT INTO a2a_instances (id, heartbeat_ms, expires_ms) VALUES (?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms, expires_ms = excluded.expires_ms`,
				db.instance, now, now+o.Expiry.Milliseconds())
			return err
		})
	}
	if err := renew(ctx); err != nil {
		return fmt.Errorf("sqlite: register instance: %w", err)
	}
	db.lease = lease.Start(o, func(ctx context.Context) error {
		if err := renew(ctx); err != nil {
			return err
		}
		// Lapsed leases decide nothing that a missing one does not, so
		// they are dropped rather than kept forever.
		return db.wr.do(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`DELETE FROM a2a_instances WHERE expires_ms < ?`, nowMs())
			return err
		})
	}, func(err error) {
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
func (db *DB) Recoverer() a2asrv.Recoverer { return recoverer{db} }

type recoverer struct{ db *DB }

var _ a2asrv.Recoverer = recoverer{}

func (r recoverer) Orphans(ctx context.Context, limit int) ([]a2asrv.Orphan, error) {
	// An instance never settles its own tasks: while it runs, their
	// executions are alive, even if its lease lapsed (a suspended laptop).
	rows, err := r.db.r.QueryContext(ctx, `
		SELECT t.tenant, t.owner, t.id FROM a2a_tasks t
		WHERE t.state IN `+orphanStates+` AND t.instance_id <> ?
		AND NOT EXISTS (SELECT 1 FROM a2a_instances i WHERE i.id = t.instance_id AND i.expires_ms >= ?)
		LIMIT ?`, r.db.instance, nowMs(), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find orphans: %w", err)
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
			return nil, fmt.Errorf("sqlite: find orphans: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find orphans: %w", err)
	}
	// Each orphan is read as Get reads it, with its appended events.
	tasks := taskStore{r.db}
	out := make([]a2asrv.Orphan, 0, len(keys))
	for _, k := range keys {
		t, v, err := tasks.Get(ctx, k.scope, k.id)
		switch {
		case errors.Is(err, a2asrv.ErrNotFound):
			continue // deleted since
		case err != nil:
			return nil, fmt.Errorf("sqlite: find orphans: %w", err)
		}
		out = append(out, a2asrv.Orphan{Scope: k.scope, Task: t, Version: v})
	}
	return out, nil
}

func (r recoverer) Settle(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	body, err := keyset.EncodeTask(scope.Tenant, scope.Owner, t)
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
		return rewrite(r.db.wr, tx, scope, t, body, prev, next, r.db.instance)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: settle task %s: %w", t.ID, err)
	}
	return next, nil
}
