package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// GatewayStore returns the database's store of the execution gateway (a
// gateway.Store): installed agents, their runs and the runs' events. Any
// number of replicas may share it. A run write is one statement: the
// compare-and-set of the run, which locks its row until the write
// commits, the append of its events numbered after the run's last
// sequence, and the notification of the append, all committed together or
// not at all. Run writes commit group-wise through the database's writer,
// with the task store's: writes that wait share a round trip and a
// commit, and with it PostgreSQL's lock on notifying commits. Claims choose runs with FOR UPDATE SKIP LOCKED, so
// concurrent claimers, on any replica, pass over each other's runs
// instead of leasing them twice.
//
// WatchEvents reports every replica's appends. A write that appended
// events calls this handle's watchers once it has committed and sends a
// notification on the channel novaos_runs in its transaction, which the
// other replicas' listeners (the connection TaskFeed listens on) hand to
// their watchers; a write that appended none, or failed, is not reported.
// When the listening connection comes back after it broke, every watcher
// is called with ("", 0).
func (db *DB) GatewayStore() *GatewayStore {
	return &GatewayStore{sqlstore.NewGatewayStore(dialect, gatewaySQL{db}, &db.feed.runs)}
}

// GatewayStore keeps the execution gateway's records in the database (see
// gateway.Store).
type GatewayStore struct{ *gatewayStore }

// gatewayStore is the store both SQL databases share, over gatewaySQL.
type gatewayStore = sqlstore.GatewayStore

var _ gateway.Store = (*GatewayStore)(nil)

// gatewaySQL is the store's statements in this database's dialect.
type gatewaySQL struct{ db *DB }

// runsChannel is the channel run-event appends are announced on.
const runsChannel = "novaos_runs"

// maxNotifyRunID bounds the run id a notification names: a longer one
// would not fit a notification's payload, and is announced without its id
// (a reader then reads every run it follows again).
const maxNotifyRunID = 4000

// notifyTail is the end of a run append's notification payload, after
// "<last>:": "<origin>:<run id>".
func (db *DB) notifyTail(runID string) string {
	if len(runID) > maxNotifyRunID {
		runID = ""
	}
	return db.instance + ":" + runID
}

// decodeAppendNotification reads the payload of an append's
// notification, "<last>:<origin>:<id>", where id is a run's (runsChannel)
// or an agent's (deliveryChannel). An empty id says it did not fit.
func decodeAppendNotification(payload string) (last int64, origin, id string, err error) {
	lastText, rest, ok := strings.Cut(payload, ":")
	if !ok {
		return 0, "", "", errors.New("postgres: append notification: no origin")
	}
	origin, id, ok = strings.Cut(rest, ":")
	if !ok {
		return 0, "", "", errors.New("postgres: append notification: no id")
	}
	last, err = strconv.ParseInt(lastText, 10, 64)
	if err != nil || last < 1 {
		return 0, "", "", fmt.Errorf("postgres: append notification: bad sequence %q", lastText)
	}
	return last, origin, id, nil
}

// dispatchAppends hands an append's notification to ws, unless this
// replica made the write: its watchers heard of it when it committed.
func (f *feed) dispatchAppends(ws *sqlstore.EventWatchers, payload string) {
	last, origin, id, err := decodeAppendNotification(payload)
	switch {
	case err != nil:
		f.db.log.Warn("postgres: an unreadable append notification was skipped", "err", err)
	case origin == f.db.instance:
	case id == "":
		ws.Lost()
	default:
		ws.Announce(id, last)
	}
}

func (g gatewaySQL) InsertInstance(ctx context.Context, args []any) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the name alike.
	return g.db.changeOne(ctx, `INSERT INTO gateway_instances (`+sqlstore.InstanceCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`, args...)
}

func (g gatewaySQL) Instance(ctx context.Context, tenantID, id string) (gateway.Instance, error) {
	return sqlstore.ScanInstance(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.InstanceCols+` FROM gateway_instances
		WHERE id = $1 AND tenant = $2`, id, tenantID))
}

func (g gatewaySQL) Instances(ctx context.Context, tenantID, afterName string, limit int) ([]gateway.Instance, error) {
	return queryAll(ctx, g.db.pool, sqlstore.ScanInstance, `SELECT `+sqlstore.InstanceCols+` FROM gateway_instances
		WHERE tenant = $1 AND name > $2 ORDER BY name LIMIT $3`, tenantID, afterName, limit)
}

func (g gatewaySQL) UpdateInstance(ctx context.Context, in *gateway.Instance, args []any, expect int64) (int64, error) {
	// args are in InstanceCols' order: id, tenant, name, version,
	// created_us, updated_us, sealed_secrets, body. The row lock taken
	// here orders concurrent updates; one that waited checks the version
	// again against the winner's row and updates nothing.
	var created int64
	err := g.db.pool.QueryRow(ctx, `UPDATE gateway_instances SET name = $3, version = $4, updated_us = $5, sealed_secrets = $6,
		body = $7 WHERE id = $1 AND tenant = $2 AND version = $8 RETURNING created_us`,
		args[0], args[1], args[2], args[3], args[5], args[6], args[7], expect).Scan(&created)
	switch {
	case err == nil:
		return created, nil
	case isUniqueViolation(err):
		return 0, gateway.ErrExists
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, err
	}
	var v int64
	if err := g.db.pool.QueryRow(ctx, `SELECT version FROM gateway_instances WHERE id = $1 AND tenant = $2`, in.ID, in.TenantID).Scan(&v); err != nil {
		return 0, err
	}
	return 0, sqlstore.VersionConflict(expect, v)
}

func (g gatewaySQL) DeleteInstance(ctx context.Context, tenantID, id string) (bool, error) {
	return g.db.changeOne(ctx, `DELETE FROM gateway_instances WHERE id = $1 AND tenant = $2`, id, tenantID)
}

// eventArrays are a write's events as the arrays the append statements
// unnest, in order: types, payloads, times, trace and span ids.
func eventArrays(evs []gateway.Event) []any {
	types, payloads, ats := make([]string, len(evs)), make([][]byte, len(evs)), make([]int64, len(evs))
	traces, spans := make([]string, len(evs)), make([]string, len(evs))
	for i, e := range evs {
		types[i], payloads[i], ats[i] = e.Type, sqlstore.Raw(e.Payload), sqlstore.Micros(e.At)
		traces[i], spans[i] = e.TraceID, e.SpanID
	}
	return []any{types, payloads, ats, traces, spans}
}

// The statements of a run's creation and of a run write. Each is one
// statement that commits, with the batch the database's writer puts it in
// (writer.go), the run, its events and, when there are events, the
// notification ($n: how many; the tail: notifyTail). Each returns one row
// whatever happened, as the writer's batches need: whether the write took
// place, and what the caller needs to know either way. CASE keeps
// pg_notify from being called for a write that appends nothing.
var (
	createRunSQL = `WITH r AS (
		INSERT INTO gateway_runs (` + sqlstore.RunCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT (id) DO NOTHING RETURNING id, last_seq
	), e AS (
		INSERT INTO gateway_run_events (` + sqlstore.EventCols + `)
		SELECT r.id, u.ord, u.type, u.payload, u.at_us, u.trace_id, u.span_id
		FROM r, unnest($21::text[], $22::bytea[], $23::bigint[], $24::text[], $25::text[])
			WITH ORDINALITY AS u(type, payload, at_us, trace_id, span_id, ord)
	)
	SELECT r.id IS NOT NULL,
		coalesce(CASE WHEN r.last_seq > 0 THEN pg_notify('` + runsChannel + `', r.last_seq || ':' || $26) IS NOT NULL END, false)
	FROM (SELECT 1) AS one LEFT JOIN r ON true`

	// writeRunSQL returns the run's last sequence and creation time when
	// it was written, else the version the statement found (NULL: no such
	// run); the subquery reads the row as it was before the statement.
	writeRunSQL = `WITH r AS (
		UPDATE gateway_runs SET (` + sqlstore.RunSetCols + `) = ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16),
			last_seq = last_seq + $17
		WHERE id = $18 AND tenant = $19 AND version = $20 RETURNING id, last_seq, created_us
	), e AS (
		INSERT INTO gateway_run_events (` + sqlstore.EventCols + `)
		SELECT r.id, r.last_seq - $17 + u.ord, u.type, u.payload, u.at_us, u.trace_id, u.span_id
		FROM r, unnest($21::text[], $22::bytea[], $23::bigint[], $24::text[], $25::text[])
			WITH ORDINALITY AS u(type, payload, at_us, trace_id, span_id, ord)
	)
	SELECT r.last_seq, r.created_us, (SELECT version FROM gateway_runs WHERE id = $18 AND tenant = $19),
		coalesce(CASE WHEN r.id IS NOT NULL AND $17 > 0 THEN pg_notify('` + runsChannel + `', r.last_seq || ':' || $26) IS NOT NULL END, false)
	FROM (SELECT 1) AS one LEFT JOIN r ON true`
)

// runWriteKey is the key of a run's writes in the database's writer,
// which puts at most one write of a key in a batch; the prefix keeps runs
// apart from the tasks the writer also writes.
func runWriteKey(id string) string { return "gateway-run\x00" + id }

func (g gatewaySQL) CreateRun(ctx context.Context, w *gateway.RunWrite, args []any) (bool, error) {
	var created, notified bool
	err := g.db.wr.do(ctx, newWrite(runWriteKey(w.Run.ID), createRunSQL,
		slices.Concat(args, eventArrays(w.Events), []any{g.db.notifyTail(w.Run.ID)}), &created, &notified))
	return created, err
}

// countRunsSQL counts the runs by status, reading the whole table: fine
// for the thousands of runs a server keeps; an index on status would make
// it read the index alone.
const countRunsSQL = `SELECT status, COUNT(*) FROM gateway_runs GROUP BY status`

func (g gatewaySQL) CountRuns(ctx context.Context) (map[gateway.Status]int64, error) {
	rows, err := g.db.pool.Query(ctx, countRunsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.CountBy[gateway.Status](rows)
}

func (g gatewaySQL) Run(ctx context.Context, tenantID, id string) (gateway.Run, error) {
	if tenantID == "" {
		return sqlstore.ScanRun(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.RunCols+` FROM gateway_runs WHERE id = $1`, id))
	}
	return sqlstore.ScanRun(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.RunCols+` FROM gateway_runs WHERE id = $1 AND tenant = $2`, id, tenantID))
}

// listRunsSQL is ListRuns' statement and arguments for f.
func listRunsSQL(f gateway.RunFilter) (q string, args []any) {
	var where []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.TenantID != "" {
		where = append(where, `tenant = `+arg(f.TenantID))
	}
	if f.UserID != "" {
		where = append(where, `user_id = `+arg(f.UserID))
	}
	if f.InstanceID != "" {
		where = append(where, `instance_id = `+arg(f.InstanceID))
	}
	if f.ThreadID != "" {
		// thread_id <> '' lets the thread index, which holds only runs
		// of a thread, serve a generic plan too.
		where = append(where, `thread_id = `+arg(f.ThreadID)+` AND thread_id <> ''`)
	}
	if len(f.Statuses) > 0 {
		statuses := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			statuses[i] = string(s)
		}
		where = append(where, `status = ANY(`+arg(statuses)+`)`)
	}
	if !f.AfterCreated.IsZero() || f.AfterID != "" {
		where = append(where, `(created_us, id) < (`+arg(sqlstore.Micros(f.AfterCreated))+`, `+arg(f.AfterID)+`)`)
	}
	q = `SELECT ` + sqlstore.RunCols + ` FROM gateway_runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return q + ` ORDER BY created_us DESC, id DESC LIMIT ` + arg(sqlstore.Limit(f.Limit, gateway.MaxPage)), args
}

func (g gatewaySQL) Runs(ctx context.Context, f gateway.RunFilter) ([]gateway.Run, error) {
	q, args := listRunsSQL(f)
	return queryAll(ctx, g.db.pool, sqlstore.ScanRun, q, args...)
}

func (g gatewaySQL) WriteRun(ctx context.Context, w *gateway.RunWrite, args []any) (int64, int64, error) {
	args = slices.Concat(args, eventArrays(w.Events), []any{g.db.notifyTail(w.Run.ID)})
	// The row lock the update takes orders concurrent writers; one that
	// waited checks the version again against the winner's row and
	// writes nothing, events included.
	var (
		last, created, found *int64
		notified             bool
	)
	if err := g.db.wr.do(ctx, newWrite(runWriteKey(w.Run.ID), writeRunSQL, args, &last, &created, &found, &notified)); err != nil {
		return 0, 0, err
	}
	switch {
	case last != nil && created != nil:
	case found == nil:
		return 0, 0, pgx.ErrNoRows
	default:
		return 0, 0, sqlstore.VersionConflict(w.ExpectVersion, *found)
	}
	sqlstore.Number(w.Events, *last-int64(len(w.Events)))
	return *last, *created, nil
}

func (g gatewaySQL) Events(ctx context.Context, runID string, after int64, limit int) ([]gateway.Event, error) {
	return queryAll(ctx, g.db.pool, sqlstore.ScanEvent, `SELECT `+sqlstore.EventCols+` FROM gateway_run_events
		WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, runID, after, limit)
}

// claimRunsSQL leases the oldest due runs that no concurrent claim has
// locked: SKIP LOCKED passes over the rows another claimer chose, and a
// row another claimer leased and committed since this statement's
// snapshot is checked again when locked, and left, its lease now live.
// MATERIALIZED keeps the choice, and its locks, to one evaluation.
const claimRunsSQL = `WITH c AS MATERIALIZED (
		SELECT id FROM gateway_runs
		WHERE status IN ` + sqlstore.ClaimableStatuses + ` AND lease_until_us <= $1 AND not_before_us <= $1 AND ` + sqlstore.NotHeld + `
		ORDER BY created_us, id LIMIT $2
		FOR UPDATE SKIP LOCKED
	)
	UPDATE gateway_runs SET lease_owner = $3, lease_until_us = $4, version = version + 1, updated_us = $1
	WHERE id IN (SELECT id FROM c)
	RETURNING ` + sqlstore.RunCols

func (g gatewaySQL) ClaimRuns(ctx context.Context, owner string, nowUS, untilUS int64, limit int) ([]gateway.Run, error) {
	return queryAll(ctx, g.db.pool, sqlstore.ScanRun, claimRunsSQL, nowUS, limit, owner, untilUS)
}
