package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// GatewayStore returns the database's store of the execution gateway (a
// gateway.Store): installed agents, their runs and the runs' events. Its
// writes go through the database's single writer, so a run's
// compare-and-set, the numbering of its events and a claim each read and
// write in one step: no two writers number the same sequence, and no two
// claimers lease the same run, in this process or another using the file.
//
// WatchEvents reports the writes of this handle only (a file shared with
// another process is not watched): fn is called after each CreateRun or
// WriteRun that appended events, once it has committed, never for a write
// that appended none or failed. Concurrent writes to one run may be
// reported out of order; last is how far the run's events reached at
// least.
func (db *DB) GatewayStore() *GatewayStore { return &GatewayStore{db} }

// GatewayStore keeps the execution gateway's records in the database (see
// gateway.Store).
type GatewayStore struct{ db *DB }

var _ gateway.Store = (*GatewayStore)(nil)

// The statements of the gateway's writes, prepared once on the write
// connection (writer.exec, writer.queryRow).
const (
	insertInstanceSQL = `INSERT INTO gateway_instances (` + sqlstore.InstanceCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	insertRunSQL = `INSERT INTO gateway_runs (` + sqlstore.RunCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	// updateRunSQL replaces the run if its version is still the one
	// expected, moving its last sequence on by the events appended.
	updateRunSQL = `UPDATE gateway_runs SET (` + sqlstore.RunSetCols + `) = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?),
		last_seq = last_seq + ? WHERE id = ? AND tenant = ? AND version = ? RETURNING last_seq, created_us`
	runVersionSQL     = `SELECT version FROM gateway_runs WHERE id = ? AND tenant = ?`
	insertRunEventSQL = `INSERT INTO gateway_run_events (` + sqlstore.EventCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)`
	claimRunsSQL      = `UPDATE gateway_runs SET lease_owner = ?, lease_until_us = ?, version = version + 1, updated_us = ?
		WHERE id IN (SELECT id FROM gateway_runs WHERE status IN ` + sqlstore.ClaimableStatuses + `
			AND lease_until_us <= ? AND not_before_us <= ? AND ` + sqlstore.NotHeld + ` ORDER BY created_us, id LIMIT ?)
		RETURNING ` + sqlstore.RunCols
)

// gatewayWrites are the statements Open prepares for the gateway store.
var gatewayWrites = []string{insertInstanceSQL, insertRunSQL, updateRunSQL, runVersionSQL, insertRunEventSQL, claimRunsSQL}

// The gateway's hot reads, prepared once per handle (DB.stmt).
const (
	getRunSQL       = `SELECT ` + sqlstore.RunCols + ` FROM gateway_runs WHERE id = ?`
	getTenantRunSQL = `SELECT ` + sqlstore.RunCols + ` FROM gateway_runs WHERE id = ? AND tenant = ?`
	eventsSQL       = `SELECT ` + sqlstore.EventCols + ` FROM gateway_run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	getInstanceSQL  = `SELECT ` + sqlstore.InstanceCols + ` FROM gateway_instances WHERE id = ? AND tenant = ?`
)

func (g *GatewayStore) CreateInstance(ctx context.Context, in gateway.Instance, now time.Time) (gateway.Instance, error) {
	what := "sqlite: create gateway instance " + in.ID
	if err := sqlstore.PrepareInstance(&in, 0, now); err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	args, err := sqlstore.InstanceArgs(&in)
	if err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	err = g.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := g.db.wr.exec(tx, insertInstanceSQL, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		// The id, or the name in the tenant, is taken.
		return gateway.ErrExists
	})
	if err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	return in, nil
}

func (g *GatewayStore) GetInstance(ctx context.Context, tenantID, id string) (gateway.Instance, error) {
	in, err := sqlstore.ScanInstance(g.db.queryRow(ctx, getInstanceSQL, id, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		err = gateway.ErrNotFound
	}
	if err != nil {
		return gateway.Instance{}, fmt.Errorf("sqlite: get gateway instance %s: %w", id, err)
	}
	return in, nil
}

func (g *GatewayStore) ListInstances(ctx context.Context, f gateway.InstanceFilter) ([]gateway.Instance, error) {
	rows, err := g.db.query(ctx, `SELECT `+sqlstore.InstanceCols+` FROM gateway_instances
		WHERE tenant = ? AND name > ? ORDER BY name LIMIT ?`, f.TenantID, f.AfterName, sqlstore.Limit(f.Limit, gateway.MaxPage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gateway instances: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanInstance)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gateway instances: %w", err)
	}
	return out, nil
}

func (g *GatewayStore) UpdateInstance(ctx context.Context, in gateway.Instance, expectVersion int64, now time.Time) (gateway.Instance, error) {
	what := "sqlite: update gateway instance " + in.ID
	if expectVersion <= 0 {
		return gateway.Instance{}, fmt.Errorf("%s: an update needs the version it replaces, not %d", what, expectVersion)
	}
	if err := sqlstore.PrepareInstance(&in, expectVersion, now); err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	args, err := sqlstore.InstanceArgs(&in)
	if err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	var created int64
	err = g.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer runs these reads and the update with no other
		// write in between: the compare and the set are one step.
		var v int64
		err := tx.QueryRow(`SELECT version, created_us FROM gateway_instances WHERE id = ? AND tenant = ?`, in.ID, in.TenantID).
			Scan(&v, &created)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return gateway.ErrNotFound
		case err != nil:
			return err
		case v != expectVersion:
			return fmt.Errorf("version %d is not the current %d: %w", expectVersion, v, gateway.ErrConflict)
		}
		var other string
		err = tx.QueryRow(`SELECT id FROM gateway_instances WHERE tenant = ? AND name = ? AND id <> ?`, in.TenantID, in.Name, in.ID).Scan(&other)
		if err == nil {
			return fmt.Errorf("name %q: %w", in.Name, gateway.ErrExists)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// args are in InstanceCols' order: id, tenant, name, version,
		// created_us, updated_us, sealed_secrets, body.
		_, err = tx.Exec(`UPDATE gateway_instances SET name = ?, version = ?, updated_us = ?, sealed_secrets = ?, body = ?
			WHERE id = ?`, args[2], args[3], args[5], args[6], args[7], in.ID)
		return err
	})
	if err != nil {
		return gateway.Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	in.CreatedAt = sqlstore.FromMicros(created)
	return in, nil
}

func (g *GatewayStore) DeleteInstance(ctx context.Context, tenantID, id string) error {
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM gateway_instances WHERE id = ? AND tenant = ?`, id, tenantID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return gateway.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete gateway instance %s: %w", id, err)
	}
	return nil
}

// appendEvents inserts evs, numbered already, in tx.
func (g *GatewayStore) appendEvents(tx *sql.Tx, evs []gateway.Event) error {
	for _, e := range evs {
		if _, err := g.db.wr.exec(tx, insertRunEventSQL, e.RunID, e.Sequence, e.Type, sqlstore.Raw(e.Payload), sqlstore.Micros(e.At),
			e.TraceID, e.SpanID); err != nil {
			return err
		}
	}
	return nil
}

func (g *GatewayStore) CreateRun(ctx context.Context, w gateway.RunWrite) (gateway.Run, []gateway.Event, error) {
	what := "sqlite: create gateway run " + w.Run.ID
	if err := sqlstore.PrepareRunWrite(&w, true); err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	w.Run.LastSequence = sqlstore.Number(w.Events, 0)
	args, err := sqlstore.RunArgs(&w.Run)
	if err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	err = g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := g.db.wr.exec(tx, insertRunSQL, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return gateway.ErrExists
		}
		return g.appendEvents(tx, w.Events)
	})
	if err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(w.Events) > 0 {
		g.db.gatewayWatchers.Announce(w.Run.ID, w.Run.LastSequence)
	}
	return w.Run, w.Events, nil
}

// countRunsSQL counts the runs by status, reading the whole table: fine
// for the thousands of runs a server keeps; an index on status would make
// it read the index alone.
const countRunsSQL = `SELECT status, COUNT(*) FROM gateway_runs GROUP BY status`

// CountRuns implements gateway.Store.
func (g *GatewayStore) CountRuns(ctx context.Context) (map[gateway.Status]int64, error) {
	rows, err := g.db.r.QueryContext(ctx, countRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count gateway runs: %w", err)
	}
	defer rows.Close()
	out := map[gateway.Status]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count gateway runs: %w", err)
		}
		out[gateway.Status(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: count gateway runs: %w", err)
	}
	return out, nil
}

func (g *GatewayStore) GetRun(ctx context.Context, tenantID, id string) (gateway.Run, error) {
	var row *sql.Row
	if tenantID == "" {
		row = g.db.queryRow(ctx, getRunSQL, id)
	} else {
		row = g.db.queryRow(ctx, getTenantRunSQL, id, tenantID)
	}
	r, err := sqlstore.ScanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = gateway.ErrNotFound
	}
	if err != nil {
		return gateway.Run{}, fmt.Errorf("sqlite: get gateway run %s: %w", id, err)
	}
	return r, nil
}

// listRunsSQL is ListRuns' statement and arguments for f.
func listRunsSQL(f gateway.RunFilter) (string, []any) {
	var where []string
	var args []any
	if f.TenantID != "" {
		where, args = append(where, `tenant = ?`), append(args, f.TenantID)
	}
	if f.UserID != "" {
		where, args = append(where, `user_id = ?`), append(args, f.UserID)
	}
	if f.InstanceID != "" {
		where, args = append(where, `instance_id = ?`), append(args, f.InstanceID)
	}
	if f.ThreadID != "" {
		// thread_id <> '' lets the thread index, which holds only runs
		// of a thread, serve the statement whatever the argument.
		where, args = append(where, `thread_id = ? AND thread_id <> ''`), append(args, f.ThreadID)
	}
	if len(f.Statuses) > 0 {
		where = append(where, `status IN (?`+strings.Repeat(`, ?`, len(f.Statuses)-1)+`)`)
		for _, s := range f.Statuses {
			args = append(args, string(s))
		}
	}
	if !f.AfterCreated.IsZero() || f.AfterID != "" {
		where, args = append(where, `(created_us, id) < (?, ?)`), append(args, sqlstore.Micros(f.AfterCreated), f.AfterID)
	}
	q := `SELECT ` + sqlstore.RunCols + ` FROM gateway_runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return q + ` ORDER BY created_us DESC, id DESC LIMIT ?`, append(args, sqlstore.Limit(f.Limit, gateway.MaxPage))
}

func (g *GatewayStore) ListRuns(ctx context.Context, f gateway.RunFilter) ([]gateway.Run, error) {
	q, args := listRunsSQL(f)
	rows, err := g.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gateway runs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanRun)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gateway runs: %w", err)
	}
	return out, nil
}

func (g *GatewayStore) WriteRun(ctx context.Context, w gateway.RunWrite) (gateway.Run, []gateway.Event, error) {
	what := "sqlite: write gateway run " + w.Run.ID
	if err := sqlstore.PrepareRunWrite(&w, false); err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	args, err := sqlstore.RunArgs(&w.Run)
	if err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	args = append(sqlstore.RunSetArgs(args), len(w.Events), w.Run.ID, w.Run.TenantID, w.ExpectVersion)
	var last, created int64
	err = g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		err := g.db.wr.queryRow(tx, updateRunSQL, args...).Scan(&last, &created)
		if errors.Is(err, sql.ErrNoRows) {
			var v int64
			switch err := g.db.wr.queryRow(tx, runVersionSQL, w.Run.ID, w.Run.TenantID).Scan(&v); {
			case errors.Is(err, sql.ErrNoRows):
				return gateway.ErrNotFound
			case err != nil:
				return err
			}
			return fmt.Errorf("version %d is not the current %d: %w", w.ExpectVersion, v, gateway.ErrConflict)
		}
		if err != nil {
			return err
		}
		sqlstore.Number(w.Events, last-int64(len(w.Events)))
		return g.appendEvents(tx, w.Events)
	})
	if err != nil {
		return gateway.Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	w.Run.LastSequence, w.Run.CreatedAt = last, sqlstore.FromMicros(created)
	if len(w.Events) > 0 {
		g.db.gatewayWatchers.Announce(w.Run.ID, last)
	}
	return w.Run, w.Events, nil
}

func (g *GatewayStore) Events(ctx context.Context, runID string, after int64, limit int) ([]gateway.Event, error) {
	rows, err := g.db.query(ctx, eventsSQL, runID, after, sqlstore.Limit(limit, gateway.MaxPage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: gateway run %s events: %w", runID, err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("sqlite: gateway run %s events: %w", runID, err)
	}
	return out, nil
}

func (g *GatewayStore) ClaimRuns(ctx context.Context, owner string, now, until time.Time, limit int) ([]gateway.Run, error) {
	if owner == "" {
		return nil, errors.New("sqlite: claim gateway runs: no owner")
	}
	var out []gateway.Run
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer makes the choice and the lease one step: no
		// other claim runs in between, in this process or in another,
		// whose write transaction waits for the file's lock.
		rows, err := g.db.wr.query(tx, claimRunsSQL, owner, sqlstore.Micros(until), sqlstore.Micros(now),
			sqlstore.Micros(now), sqlstore.Micros(now), sqlstore.Limit(limit, gateway.MaxPage))
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, sqlstore.ScanRun)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim gateway runs: %w", err)
	}
	sqlstore.SortClaimed(out)
	return out, nil
}

func (g *GatewayStore) WatchEvents(ctx context.Context, fn func(runID string, last int64)) error {
	if err := g.db.gatewayWatchers.Watch(ctx, fn); err != nil {
		return fmt.Errorf("sqlite: watch gateway events: %w", err)
	}
	return nil
}
