package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

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
func (db *DB) GatewayStore() *GatewayStore {
	return &GatewayStore{sqlstore.NewGatewayStore(dialect, gatewaySQL{db}, &db.gatewayWatchers)}
}

// GatewayStore keeps the execution gateway's records in the database (see
// gateway.Store).
type GatewayStore struct{ *gatewayStore }

// gatewayStore is the store both SQL databases share, over gatewaySQL.
type gatewayStore = sqlstore.GatewayStore

var _ gateway.Store = (*GatewayStore)(nil)

// gatewaySQL is the store's statements in this database's dialect.
type gatewaySQL struct{ db *DB }

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

func (g gatewaySQL) InsertInstance(ctx context.Context, args []any) (bool, error) {
	return g.db.changeOne(ctx, insertInstanceSQL, args...)
}

func (g gatewaySQL) Instance(ctx context.Context, tenantID, id string) (gateway.Instance, error) {
	return sqlstore.ScanInstance(g.db.queryRow(ctx, getInstanceSQL, id, tenantID))
}

func (g gatewaySQL) Instances(ctx context.Context, tenantID, afterName string, limit int) ([]gateway.Instance, error) {
	return queryAll(ctx, g.db.query, sqlstore.ScanInstance, `SELECT `+sqlstore.InstanceCols+` FROM gateway_instances
		WHERE tenant = ? AND name > ? ORDER BY name LIMIT ?`, tenantID, afterName, limit)
}

func (g gatewaySQL) UpdateInstance(ctx context.Context, in *gateway.Instance, args []any, expect int64) (int64, error) {
	var created int64
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer runs these reads and the update with no other
		// write in between: the compare and the set are one step.
		var v int64
		if err := tx.QueryRow(`SELECT version, created_us FROM gateway_instances WHERE id = ? AND tenant = ?`, in.ID, in.TenantID).
			Scan(&v, &created); err != nil {
			return err
		}
		if v != expect {
			return sqlstore.VersionConflict(expect, v)
		}
		var other string
		err := tx.QueryRow(`SELECT id FROM gateway_instances WHERE tenant = ? AND name = ? AND id <> ?`, in.TenantID, in.Name, in.ID).Scan(&other)
		if err == nil {
			return gateway.ErrExists
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
	return created, err
}

func (g gatewaySQL) DeleteInstance(ctx context.Context, tenantID, id string) (bool, error) {
	return g.db.changeOne(ctx, `DELETE FROM gateway_instances WHERE id = ? AND tenant = ?`, id, tenantID)
}

// appendEvents inserts evs, numbered already, in tx.
func (g gatewaySQL) appendEvents(tx *sql.Tx, evs []gateway.Event) error {
	for _, e := range evs {
		if _, err := g.db.wr.exec(tx, insertRunEventSQL, e.RunID, e.Sequence, e.Type, sqlstore.Raw(e.Payload), sqlstore.Micros(e.At),
			e.TraceID, e.SpanID); err != nil {
			return err
		}
	}
	return nil
}

func (g gatewaySQL) CreateRun(ctx context.Context, w *gateway.RunWrite, args []any) (bool, error) {
	var created bool
	err := g.db.wr.doAtomic(ctx, func(tx *sql.Tx) (err error) {
		created, err = affected(g.db.wr.exec(tx, insertRunSQL, args...))
		if err != nil || !created {
			return err
		}
		return g.appendEvents(tx, w.Events)
	})
	return created, err
}

// countRunsSQL counts the runs by status, reading the whole table: fine
// for the thousands of runs a server keeps; an index on status would make
// it read the index alone.
const countRunsSQL = `SELECT status, COUNT(*) FROM gateway_runs GROUP BY status`

func (g gatewaySQL) CountRuns(ctx context.Context) (map[gateway.Status]int64, error) {
	rows, err := g.db.r.QueryContext(ctx, countRunsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.CountBy[gateway.Status](rows)
}

func (g gatewaySQL) Run(ctx context.Context, tenantID, id string) (gateway.Run, error) {
	if tenantID == "" {
		return sqlstore.ScanRun(g.db.queryRow(ctx, getRunSQL, id))
	}
	return sqlstore.ScanRun(g.db.queryRow(ctx, getTenantRunSQL, id, tenantID))
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

func (g gatewaySQL) Runs(ctx context.Context, f gateway.RunFilter) ([]gateway.Run, error) {
	q, args := listRunsSQL(f)
	return queryAll(ctx, g.db.r.QueryContext, sqlstore.ScanRun, q, args...)
}

func (g gatewaySQL) WriteRun(ctx context.Context, w *gateway.RunWrite, args []any) (int64, int64, error) {
	var last, created int64
	err := g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		err := g.db.wr.queryRow(tx, updateRunSQL, args...).Scan(&last, &created)
		if errors.Is(err, sql.ErrNoRows) {
			var v int64
			if err := g.db.wr.queryRow(tx, runVersionSQL, w.Run.ID, w.Run.TenantID).Scan(&v); err != nil {
				return err
			}
			return sqlstore.VersionConflict(w.ExpectVersion, v)
		}
		if err != nil {
			return err
		}
		sqlstore.Number(w.Events, last-int64(len(w.Events)))
		return g.appendEvents(tx, w.Events)
	})
	return last, created, err
}

func (g gatewaySQL) Events(ctx context.Context, runID string, after int64, limit int) ([]gateway.Event, error) {
	return queryAll(ctx, g.db.query, sqlstore.ScanEvent, eventsSQL, runID, after, limit)
}

func (g gatewaySQL) ClaimRuns(ctx context.Context, owner string, nowUS, untilUS int64, limit int) ([]gateway.Run, error) {
	var out []gateway.Run
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer makes the choice and the lease one step: no
		// other claim runs in between, in this process or in another,
		// whose write transaction waits for the file's lock.
		rows, err := g.db.wr.query(tx, claimRunsSQL, owner, untilUS, nowUS, nowUS, nowUS, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, sqlstore.ScanRun)
		return err
	})
	return out, err
}
