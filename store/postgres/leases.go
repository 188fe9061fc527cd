package postgres

import (
	"context"
	"fmt"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/store/lease"
)

// Each DB (one per replica) is an instance with a lease of its own
// (store/lease). Lease times are taken from the database's clock
// (clock_timestamp), so replicas whose clocks disagree still agree on who
// is dead.

// orphanStates is the SQL list of a2asrv.OrphanStates; the partial index of
// migration 0005 names the same states.
var orphanStates = sqlstore.StateList(a2asrv.OrphanStates())

// leaseLive is the condition "the instance that wrote task row t holds a
// live lease".
const leaseLive = `EXISTS (SELECT 1 FROM a2a_instances i WHERE i.id = t.instance_id AND i.expires_at >= clock_timestamp())`

// startLease registers the DB's instance and keeps its lease renewed. The
// first renewal happens here, so the lease exists before any task write.
func (db *DB) startLease(ctx context.Context, o lease.Options) error {
	db.instance = lease.NewID()
	expiry := o.Expiry.Milliseconds()
	// One statement per heartbeat: the renewal, and the purge of lapsed
	// leases, which decide nothing that a missing one does not and so are
	// dropped rather than kept forever. The purge spares this instance's
	// row, which a statement may not change twice.
	renew := func(ctx context.Context) error {
		_, err := db.pool.Exec(ctx, `
			WITH purged AS (DELETE FROM a2a_instances WHERE expires_at < clock_timestamp() AND id <> $1)
			INSERT INTO a2a_instances (id, heartbeat_at, expires_at)
			VALUES ($1, clock_timestamp(), clock_timestamp() + $2 * interval '1 millisecond')
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`,
			db.instance, expiry)
		return err
	}
	if err := renew(ctx); err != nil {
		return fmt.Errorf("postgres: register instance: %w", err)
	}
	db.lease = lease.Start(o, renew, func(err error) {
		db.log.Warn("postgres: renew instance lease", "instance", db.instance, "err", err)
	})
	return nil
}

// stopLease ends the heartbeat and gives the lease up, so the tasks this
// replica leaves unfinished are at once orphans for the other replicas.
func (db *DB) stopLease() {
	if db.lease == nil {
		return
	}
	db.lease.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := db.pool.Exec(ctx, `DELETE FROM a2a_instances WHERE id = $1`, db.instance); err != nil {
		db.log.Warn("postgres: release instance lease", "instance", db.instance, "err", err)
	}
}

// Recoverer returns the database's side of crash recovery: the tasks other
// replicas left SUBMITTED or WORKING when they died, for a2asrv.Recover.
// A row it cannot read is logged once per Recoverer, at its first sweep.
func (db *DB) Recoverer() a2asrv.Recoverer { return recoverer{db, new(lease.Noted)} }

type recoverer struct {
	db         *DB
	unreadable *lease.Noted
}

var _ a2asrv.Recoverer = recoverer{}

func (r recoverer) Orphans(ctx context.Context, after string, limit int) ([]a2asrv.Orphan, string, error) {
	// A replica never settles its own tasks: while it runs, their
	// executions are alive, even if its lease lapsed. Reading takes no
	// lock: Settle's version check is what claims an orphan.
	rows, err := r.db.pool.Query(ctx, `
		SELECT t.id, t.tenant, t.owner, t.version, t.body, `+eventsColumn+` FROM a2a_tasks t
		WHERE t.state IN `+orphanStates+` AND t.instance_id <> $1 AND t.id > $2 AND NOT `+leaseLive+`
		ORDER BY t.id LIMIT $3`, r.db.instance, after, limit)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: find orphans: %w", err)
	}
	defer rows.Close()
	var (
		out  []a2asrv.Orphan
		seen int
		id   string
	)
	for rows.Next() {
		var (
			o      a2asrv.Orphan
			body   []byte
			events [][]byte
		)
		if err := rows.Scan(&id, &o.Scope.Tenant, &o.Scope.Owner, &o.Version, &body, &events); err != nil {
			return nil, "", fmt.Errorf("postgres: find orphans: %w", err)
		}
		seen++
		t, err := decodeTask(body, events)
		if err == nil && t.ID != id {
			err = fmt.Errorf("its body names task %q", t.ID)
		}
		if err != nil {
			// Passed over, not fatal: one bad row must not keep every
			// other orphan from being settled.
			if r.unreadable.First(id) {
				r.db.log.Warn("postgres: an orphaned task cannot be read; it is left as it is", "task_id", id, "err", err)
			}
			continue
		}
		o.Task = t
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("postgres: find orphans: %w", err)
	}
	if seen < limit {
		id = ""
	}
	return out, id, nil
}

func (r recoverer) Settle(ctx context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	if !a2astore.ValidText(t.ID, scope.Tenant, scope.Owner) {
		return 0, fmt.Errorf("postgres: settle task %s: %w", t.ID, a2asrv.ErrNotFound)
	}
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return 0, fmt.Errorf("postgres: settle task: %w", err)
	}
	// The version check makes the claim: of two replicas settling one
	// orphan, the second finds the version moved and changes nothing. The
	// lease check keeps a writer that came back to life (a long pause)
	// from losing its task.
	next := prev + a2asrv.RecoveryVersionGap
	if err := (&taskStore{r.db}).rewrite(ctx, scope, t, body, prev, next, "NOT "+leaseLive,
		taskPush, pushArgs(scope, t.ID), announce{settle: true}); err != nil {
		return 0, fmt.Errorf("postgres: settle task %s: %w", t.ID, err)
	}
	return next, nil
}
