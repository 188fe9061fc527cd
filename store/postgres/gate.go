package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// GateStore returns the database's store of the governance gate (a
// gate.Store): sessions, gated actions, the trajectory ledger, rule sets,
// the hash-chained audit log and the service's heartbeat. Any number of
// replicas may share it: an action write is a compare-and-set in one
// transaction, and every audit append, alone or inside an action write,
// locks the chain's head row until it commits, so the chain never forks.
func (db *DB) GateStore() *GateStore { return &GateStore{db} }

// GateStore keeps the governance gate's records in the database (see
// gate.Store).
type GateStore struct{ db *DB }

var _ gate.Store = (*GateStore)(nil)

// errGateText: PostgreSQL text holds neither NUL nor invalid UTF-8, so a
// record with such text cannot be stored, and a key with it names nothing.
var errGateText = errors.New("text with NUL or invalid UTF-8")

func sessionText(s *gate.SessionRecord) bool {
	return a2astore.ValidText(s.TenantID, s.ID, s.TeamID, s.AgentID, string(s.State))
}

func (g *GateStore) CreateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	what := "postgres: create gate session " + s.ID
	if !sessionText(&s) {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, errGateText)
	}
	sqlstore.PrepareSession(&s)
	tag, err := g.db.pool.Exec(ctx, `INSERT INTO gate_sessions (`+sqlstore.SessionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (tenant, id) DO NOTHING`,
		sqlstore.SessionArgs(&s)...)
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 1 {
		return s, nil
	}
	// ON CONFLICT waited for the session's writer to commit, so this
	// statement's snapshot sees it.
	stored, err := sqlstore.ScanSession(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.SessionCols+` FROM gate_sessions WHERE tenant = $1 AND id = $2`,
		s.TenantID, s.ID))
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return stored, fmt.Errorf("%s: %w", what, gate.ErrExists)
}

func (g *GateStore) GetSession(ctx context.Context, tenantID, sessionID string) (gate.SessionRecord, error) {
	what := "postgres: get gate session " + sessionID
	if !a2astore.ValidText(tenantID, sessionID) {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, gate.ErrNotFound)
	}
	s, err := sqlstore.ScanSession(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.SessionCols+` FROM gate_sessions WHERE tenant = $1 AND id = $2`,
		tenantID, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return s, nil
}

func (g *GateStore) UpdateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	what := "postgres: update gate session " + s.ID
	if !sessionText(&s) {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, errGateText)
	}
	// The creation time is the stored one: an update replaces what the
	// session is, not when it began.
	out, err := sqlstore.ScanSession(g.db.pool.QueryRow(ctx, `UPDATE gate_sessions SET team_id = $1, agent_id = $2, resumable = $3,
		hold_window_ns = $4, hold_indefinite = $5, state = $6, version = version + 1, updated_us = $7
		WHERE tenant = $8 AND id = $9 AND version = $10 RETURNING `+sqlstore.SessionCols,
		s.TeamID, s.AgentID, s.Resumable, int64(s.HoldWindow), s.HoldIndefinite, string(s.State), sqlstore.Micros(s.UpdatedAt),
		s.TenantID, s.ID, s.Version))
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	var v int64
	err = g.db.pool.QueryRow(ctx, `SELECT version FROM gate_sessions WHERE tenant = $1 AND id = $2`, s.TenantID, s.ID).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = gate.ErrNotFound
	case err == nil:
		err = fmt.Errorf("version %d is not the current %d: %w", s.Version, v, gate.ErrConflict)
	}
	return gate.SessionRecord{}, fmt.Errorf("%s: %w", what, err)
}

// actionParams are the placeholders of sqlstore.ActionCols.
var actionParams = func() string {
	p := make([]string, 27)
	for i := range p {
		p[i] = "$" + strconv.Itoa(i+1)
	}
	return strings.Join(p, ", ")
}()

// updateActionSQL sets every column but the key and the creation time
// from updateArgs, if the version is still $27.
const updateActionSQL = `UPDATE gate_actions SET (action_type, team_id, agent_id, action, fingerprint, fingerprint_scheme,
	commitment_version, state, verdict, rule_id_cited, rationale, reason, decision, hold_window_ns, hold_indefinite,
	hold_expires_us, decided_by, decided_us, fencing_token, claimed_us, acknowledged_us, version, updated_us) =
	($4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)
	WHERE tenant = $1 AND session_id = $2 AND action_id = $3 AND version = $27
	RETURNING created_us`

// updateArgs are updateActionSQL's arguments.
func updateArgs(r *gate.ActionRecord, expect int64) []any {
	return append(sqlstore.ActionArgs(r)[:25], sqlstore.Micros(r.UpdatedAt), expect)
}

func actionText(r *gate.ActionRecord) bool {
	return a2astore.ValidText(r.TenantID, r.SessionID, r.ActionID, r.ActionType, r.TeamID, r.AgentID, r.Fingerprint,
		r.FingerprintScheme, r.CommitmentVersion, string(r.State), string(r.Verdict), r.RuleIDCited, r.Rationale,
		string(r.Reason), r.DecidedBy)
}

func writeText(w *gate.ActionWrite) bool {
	if !actionText(&w.Record) || (w.Audit != nil && !auditText(w.Audit)) {
		return false
	}
	for _, e := range w.Ledger {
		if !a2astore.ValidText(e.TenantID, e.ActionType, e.Subject, e.SessionID, e.ActionID) {
			return false
		}
	}
	return true
}

func (g *GateStore) WriteAction(ctx context.Context, w gate.ActionWrite) (gate.ActionRecord, error) {
	sqlstore.PrepareActionWrite(&w)
	r := w.Record
	what := fmt.Sprintf("postgres: write gate action %s/%s", r.SessionID, r.ActionID)
	if !writeText(&w) {
		return gate.ActionRecord{}, fmt.Errorf("%s: %w", what, errGateText)
	}
	var current gate.ActionRecord
	getCurrent := func(tx pgx.Tx) error {
		var err error
		current, err = sqlstore.ScanAction(tx.QueryRow(ctx, `SELECT `+sqlstore.ActionCols+` FROM gate_actions
			WHERE tenant = $1 AND session_id = $2 AND action_id = $3`, r.TenantID, r.SessionID, r.ActionID))
		return err
	}
	err := pgx.BeginFunc(ctx, g.db.pool, func(tx pgx.Tx) error {
		if w.ExpectVersion == 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO gate_actions (`+sqlstore.ActionCols+`) VALUES (`+actionParams+`)
				ON CONFLICT (tenant, session_id, action_id) DO NOTHING`, sqlstore.ActionArgs(&r)...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				// ON CONFLICT waited for the other creation to commit;
				// this statement's snapshot sees it.
				if err := getCurrent(tx); err != nil {
					return err
				}
				return gate.ErrExists
			}
		} else {
			// The row lock taken here orders concurrent writers; a
			// writer that waited re-checks the version against the
			// winner's row and updates nothing.
			var cus int64
			err := tx.QueryRow(ctx, updateActionSQL, updateArgs(&r, w.ExpectVersion)...).Scan(&cus)
			if errors.Is(err, pgx.ErrNoRows) {
				if err := getCurrent(tx); errors.Is(err, pgx.ErrNoRows) {
					return gate.ErrNotFound
				} else if err != nil {
					return err
				}
				return fmt.Errorf("version %d is not the current %d: %w", w.ExpectVersion, current.Version, gate.ErrConflict)
			}
			if err != nil {
				return err
			}
			r.CreatedAt = sqlstore.FromMicros(cus)
		}
		return fileAndAppend(ctx, tx, w.Ledger, w.Audit)
	})
	switch {
	case errors.Is(err, gate.ErrExists) || errors.Is(err, gate.ErrConflict):
		return current, fmt.Errorf("%s: %w", what, err)
	case err != nil:
		return gate.ActionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

// The statements of a write's ledger and audit entries. Each is queued
// once per row into a batch, rather than once per write over arrays: a
// statement over arrays of unknown length never settles on a cached
// generic plan (see aggregateSQL), and planning it afresh at every write
// cost more than the rest of the write's work.
//
// The lock statements create a head that is missing and lock it (a no-op
// update) in the order they are queued: subjects' heads in LedgerSeries'
// sorted order, then action types', then the audit chain's head. Every
// writer taking its locks in that one order, no two can wait for each
// other.
const (
	lockSubjectHeadSQL = `INSERT INTO gate_ledger_subject_heads AS h (tenant, action_type, subject, n, hi, lo, at_us)
		VALUES ($1, $2, $3, 0, 0, 0, 0) ON CONFLICT (tenant, action_type, subject) DO UPDATE SET n = h.n
		RETURNING n, hi, lo, at_us`
	lockWideHeadSQL = `INSERT INTO gate_ledger_wide_heads AS h (tenant, action_type, n, hi, lo, at_us)
		VALUES ($1, $2, 0, 0, 0, 0) ON CONFLICT (tenant, action_type) DO UPDATE SET n = h.n
		RETURNING n, hi, lo, at_us`
	lockAuditHeadSQL = `SELECT seq, hash FROM gate_audit_head WHERE id = 1 FOR UPDATE`
	insertLedgerSQL  = `INSERT INTO gate_ledger (tenant, action_type, subject, amount, at_us, session_id, action_id,
		subject_n, subject_hi, subject_lo, wide_n, wide_hi, wide_lo) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	moveSubjectHeadSQL = `UPDATE gate_ledger_subject_heads SET n = $4, hi = $5, lo = $6, at_us = $7
		WHERE tenant = $1 AND action_type = $2 AND subject = $3`
	moveWideHeadSQL = `UPDATE gate_ledger_wide_heads SET n = $3, hi = $4, lo = $5, at_us = $6 WHERE tenant = $1 AND action_type = $2`
)

// fileAndAppend files the ledger entries es after their series' heads
// and appends the audit entry e (when set) to the chain, in tx, in two
// round trips: one takes every head's lock and reads it, the next writes
// the entries and moves the heads. The locks, held to commit, serialize
// the writers of a series (and of the chain) across connections and
// replicas.
func fileAndAppend(ctx context.Context, tx pgx.Tx, es []gate.LedgerEntry, e *gate.AuditEntry) error {
	if len(es) == 0 && e == nil {
		return nil
	}
	subjects, wides := sqlstore.LedgerSeries(es)
	heads := sqlstore.NewLedgerHeads()
	var locks pgx.Batch
	for _, k := range subjects {
		locks.Queue(lockSubjectHeadSQL, k.TenantID, k.ActionType, k.Subject).QueryRow(func(row pgx.Row) error {
			var h sqlstore.LedgerHead
			err := row.Scan(&h.N, &h.Hi, &h.Lo, &h.AtUS)
			heads.Subject[k] = h
			return err
		})
	}
	for _, k := range wides {
		locks.Queue(lockWideHeadSQL, k.TenantID, k.ActionType).QueryRow(func(row pgx.Row) error {
			var h sqlstore.LedgerHead
			err := row.Scan(&h.N, &h.Hi, &h.Lo, &h.AtUS)
			heads.Wide[k] = h
			return err
		})
	}
	var seq int64
	var prev string
	if e != nil {
		locks.Queue(lockAuditHeadSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&seq, &prev) })
	}
	if err := tx.SendBatch(ctx, &locks).Close(); err != nil {
		return err
	}
	var writes pgx.Batch
	if len(es) > 0 {
		filed, err := heads.File(es)
		if err != nil {
			return err
		}
		for _, f := range filed {
			writes.Queue(insertLedgerSQL, f.TenantID, f.ActionType, f.Subject, f.Amount, f.AtUS, f.SessionID, f.ActionID,
				f.SubjectTotal.N, f.SubjectTotal.Hi, f.SubjectTotal.Lo, f.WideTotal.N, f.WideTotal.Hi, f.WideTotal.Lo)
		}
		for _, k := range subjects {
			h := heads.Subject[k]
			writes.Queue(moveSubjectHeadSQL, k.TenantID, k.ActionType, k.Subject, h.N, h.Hi, h.Lo, h.AtUS)
		}
		for _, k := range wides {
			h := heads.Wide[k]
			writes.Queue(moveWideHeadSQL, k.TenantID, k.ActionType, h.N, h.Hi, h.Lo, h.AtUS)
		}
	}
	if e != nil {
		queueAudit(&writes, e, seq, prev)
	}
	return tx.SendBatch(ctx, &writes).Close()
}

func (g *GateStore) GetAction(ctx context.Context, tenantID, sessionID, actionID string) (gate.ActionRecord, error) {
	what := fmt.Sprintf("postgres: get gate action %s/%s", sessionID, actionID)
	if !a2astore.ValidText(tenantID, sessionID, actionID) {
		return gate.ActionRecord{}, fmt.Errorf("%s: %w", what, gate.ErrNotFound)
	}
	a, err := sqlstore.ScanAction(g.db.pool.QueryRow(ctx, `SELECT `+sqlstore.ActionCols+` FROM gate_actions
		WHERE tenant = $1 AND session_id = $2 AND action_id = $3`, tenantID, sessionID, actionID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.ActionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return a, nil
}

func scanActions(rows pgx.Rows) ([]gate.ActionRecord, error) {
	defer rows.Close()
	return sqlstore.Collect(rows, sqlstore.ScanAction)
}

func (g *GateStore) ListActions(ctx context.Context, f gate.ActionFilter) ([]gate.ActionRecord, error) {
	states := make([]string, len(f.States))
	for i, s := range f.States {
		states[i] = string(s)
	}
	if !a2astore.ValidText(append(states, f.TenantID, f.AfterSessionID, f.AfterActionID, f.AfterTenantID)...) {
		return []gate.ActionRecord{}, nil // such text names nothing stored
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.TenantID != "" {
		where = append(where, `tenant = `+arg(f.TenantID))
	}
	if len(states) > 0 {
		where = append(where, `state = ANY(`+arg(states)+`)`)
	}
	// Ids order byte-wise (COLLATE "C"), as in the SQLite store and the
	// indexes, whatever the database's collation.
	if !f.AfterCreated.IsZero() || f.AfterSessionID != "" || f.AfterActionID != "" || f.AfterTenantID != "" {
		where = append(where, `(created_us, session_id COLLATE "C", action_id COLLATE "C", tenant COLLATE "C") > (`+
			arg(sqlstore.Micros(f.AfterCreated))+`, `+arg(f.AfterSessionID)+`, `+arg(f.AfterActionID)+`, `+arg(f.AfterTenantID)+`)`)
	}
	q := `SELECT ` + sqlstore.ActionCols + ` FROM gate_actions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_us, session_id COLLATE "C", action_id COLLATE "C", tenant COLLATE "C" LIMIT ` + arg(sqlstore.Limit(f.Limit, sqlstore.MaxActionPage))
	rows, err := g.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list gate actions: %w", err)
	}
	out, err := scanActions(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: list gate actions: %w", err)
	}
	return out, nil
}

// CountActions implements gate.Store.
func (g *GateStore) CountActions(ctx context.Context, state gate.ActionState) (int, time.Time, error) {
	var n int
	var oldest *int64
	if err := g.db.pool.QueryRow(ctx, `SELECT COUNT(*), MIN(created_us) FROM gate_actions WHERE state = $1`, string(state)).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("postgres: count gate actions %s: %w", state, err)
	}
	if oldest == nil {
		return n, time.Time{}, nil
	}
	return n, sqlstore.FromMicros(*oldest), nil
}

func (g *GateStore) ExpiringHolds(ctx context.Context, before time.Time, limit int) ([]gate.ActionRecord, error) {
	rows, err := g.db.pool.Query(ctx, `SELECT `+sqlstore.ActionCols+` FROM gate_actions
		WHERE state = 'held' AND hold_expires_us <> 0 AND hold_expires_us <= $1
		ORDER BY hold_expires_us, tenant COLLATE "C", session_id COLLATE "C", action_id COLLATE "C" LIMIT $2`,
		sqlstore.Micros(before), sqlstore.Limit(limit, sqlstore.MaxActionPage))
	if err != nil {
		return nil, fmt.Errorf("postgres: expiring gate holds: %w", err)
	}
	out, err := scanActions(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: expiring gate holds: %w", err)
	}
	return out, nil
}

// aggregateSQL totals n queries in one statement, so from one snapshot:
// for each, from the VALUES list of its index, tenant, action type,
// subject ("" for any) and since (µs), its series' head and the series'
// last entry before since (the greatest time, then the greatest n: a
// backward range of the series' index, one entry read), zeros for either
// when there is none. Each LATERAL's branches are gated on the query's
// kind, so one index is probed per lookup.
//
// A VALUES list rather than unnest of arrays: the planner knows its
// length, so after a few executions of the prepared statement it settles
// on the generic plan; with arrays of unknown length the generic plan
// looks ten times dearer and every execution was planned afresh, which
// doubled its time.
func aggregateSQL(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT q.i, coalesce(h.n, 0), coalesce(h.hi, 0), coalesce(h.lo, 0),
		coalesce(b.n, 0), coalesce(b.hi, 0), coalesce(b.lo, 0)
	FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, $%d::text, $%d::text, $%d::text, $%d::int8)", i, 4*i+1, 4*i+2, 4*i+3, 4*i+4)
	}
	b.WriteString(`) AS q(i, tenant, action_type, subject, since)
	LEFT JOIN LATERAL (
		SELECT n, hi, lo FROM gate_ledger_subject_heads
		WHERE q.subject <> '' AND tenant = q.tenant AND action_type = q.action_type AND subject = q.subject
		UNION ALL
		SELECT n, hi, lo FROM gate_ledger_wide_heads
		WHERE q.subject = '' AND tenant = q.tenant AND action_type = q.action_type
	) h ON true
	LEFT JOIN LATERAL (
		(SELECT subject_n, subject_hi, subject_lo FROM gate_ledger
		WHERE q.subject <> '' AND tenant = q.tenant AND action_type = q.action_type AND subject = q.subject AND at_us < q.since
		ORDER BY at_us DESC, subject_n DESC LIMIT 1)
		UNION ALL
		(SELECT wide_n, wide_hi, wide_lo FROM gate_ledger
		WHERE q.subject = '' AND tenant = q.tenant AND action_type = q.action_type AND at_us < q.since
		ORDER BY at_us DESC, wide_n DESC LIMIT 1)
	) b(n, hi, lo) ON true`)
	return b.String()
}

// aggregateArgs are aggregateSQL's arguments for qs.
func aggregateArgs(qs []gate.LedgerQuery) []any {
	args := make([]any, 0, 4*len(qs))
	for _, q := range qs {
		args = append(args, q.TenantID, q.ActionType, q.Subject, sqlstore.Micros(q.Since))
	}
	return args
}

// maxTotalsPerStatement bounds the queries of one statement, whose
// parameters PostgreSQL numbers up to 65,535; a rule set has at most 64
// aggregates. A longer batch takes several statements in one read-only
// repeatable-read transaction, so one snapshot still.
const maxTotalsPerStatement = 1000

func (g *GateStore) Aggregate(ctx context.Context, qs []gate.LedgerQuery) ([]gate.LedgerTotal, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	out := make([]gate.LedgerTotal, len(qs))
	// A query with text PostgreSQL cannot hold names nothing stored: its
	// total stays zero, and it is left out of the statement.
	var valid []gate.LedgerQuery
	var at []int // valid[k] is qs[at[k]]
	for i, q := range qs {
		if a2astore.ValidText(q.TenantID, q.ActionType, q.Subject) {
			valid, at = append(valid, q), append(at, i)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	totals := make([]gate.LedgerTotal, len(valid))
	read := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		for first := 0; first < len(valid); first += maxTotalsPerStatement {
			chunk := valid[first:min(first+maxTotalsPerStatement, len(valid))]
			rows, err := q.Query(ctx, aggregateSQL(len(chunk)), aggregateArgs(chunk)...)
			if err != nil {
				return err
			}
			err = sqlstore.ReadLedgerTotals(rows, totals[first:first+len(chunk)])
			rows.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if len(valid) <= maxTotalsPerStatement {
		err = read(g.db.pool)
	} else {
		err = pgx.BeginTxFunc(ctx, g.db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return read(tx) })
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: aggregate gate ledger: %w", err)
	}
	for k, i := range at {
		out[i] = totals[k]
	}
	return out, nil
}

func (g *GateStore) PutRuleSet(ctx context.Context, r gate.RuleSetRecord) (gate.RuleSetRecord, error) {
	what := "postgres: put gate rule set of " + r.TenantID
	if !a2astore.ValidText(r.TenantID, r.Hash, r.CreatedBy) {
		return gate.RuleSetRecord{}, fmt.Errorf("%s: %w", what, errGateText)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	r.CreatedAt = sqlstore.Stored(r.CreatedAt)
	body := []byte(r.Body)
	if body == nil {
		body = []byte{}
	}
	err := pgx.BeginFunc(ctx, g.db.pool, func(tx pgx.Tx) error {
		// The head row's lock, held to commit, makes concurrent puts of
		// a tenant take successive versions.
		if err := tx.QueryRow(ctx, `INSERT INTO gate_rule_set_heads (tenant, version) VALUES ($1, 1)
			ON CONFLICT (tenant) DO UPDATE SET version = gate_rule_set_heads.version + 1 RETURNING version`,
			r.TenantID).Scan(&r.Version); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO gate_rule_sets (tenant, version, body, hash, created_by, created_us)
			VALUES ($1, $2, $3, $4, $5, $6)`, r.TenantID, r.Version, body, r.Hash, r.CreatedBy, sqlstore.Micros(r.CreatedAt))
		return err
	})
	if err != nil {
		return gate.RuleSetRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

func (g *GateStore) RuleSet(ctx context.Context, tenantID string, version int64) (gate.RuleSetRecord, error) {
	what := fmt.Sprintf("postgres: gate rule set %d of %s", version, tenantID)
	if !a2astore.ValidText(tenantID) {
		return gate.RuleSetRecord{}, fmt.Errorf("%s: %w", what, gate.ErrNotFound)
	}
	q := `SELECT tenant, version, body, hash, created_by, created_us FROM gate_rule_sets WHERE tenant = $1`
	args := []any{tenantID}
	if version == 0 {
		q += ` ORDER BY version DESC LIMIT 1`
	} else {
		q += ` AND version = $2`
		args = append(args, version)
	}
	var r gate.RuleSetRecord
	var body []byte
	var cus int64
	err := g.db.pool.QueryRow(ctx, q, args...).Scan(&r.TenantID, &r.Version, &body, &r.Hash, &r.CreatedBy, &cus)
	if errors.Is(err, pgx.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.RuleSetRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	r.Body, r.CreatedAt = sqlstore.Raw(body), sqlstore.FromMicros(cus)
	return r, nil
}

func (g *GateStore) RuleSetTenants(ctx context.Context) ([]string, error) {
	rows, err := g.db.pool.Query(ctx, `SELECT tenant FROM gate_rule_set_heads ORDER BY tenant COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("postgres: gate rule set tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: gate rule set tenants: %w", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func auditText(e *gate.AuditEntry) bool {
	return a2astore.ValidText(e.Kind, e.TenantID, e.SessionID, e.ActionID, e.Actor)
}

// queueAudit chains e after the head (seq, prev), which the transaction
// holds locked, and queues its insert and the head's move.
func queueAudit(b *pgx.Batch, e *gate.AuditEntry, seq int64, prev string) {
	sqlstore.Chain(e, seq, prev)
	b.Queue(`INSERT INTO gate_audit (seq, at_us, kind, tenant, session_id, action_id, actor, body, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.Seq, e.At.UnixMicro(), e.Kind, e.TenantID, e.SessionID, e.ActionID, e.Actor, sqlstore.Raw(e.Body), e.PrevHash, e.Hash)
	b.Queue(`UPDATE gate_audit_head SET seq = $1, hash = $2 WHERE id = 1`, e.Seq, e.Hash)
}

func (g *GateStore) AppendAudit(ctx context.Context, e gate.AuditEntry) (gate.AuditEntry, error) {
	if !auditText(&e) {
		return gate.AuditEntry{}, fmt.Errorf("postgres: append gate audit: %w", errGateText)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	// The head row's lock, held to commit, serializes appends across
	// every connection and replica.
	err := pgx.BeginFunc(ctx, g.db.pool, func(tx pgx.Tx) error { return fileAndAppend(ctx, tx, nil, &e) })
	if err != nil {
		return gate.AuditEntry{}, fmt.Errorf("postgres: append gate audit: %w", err)
	}
	return e, nil
}

func (g *GateStore) AppendAudits(ctx context.Context, entries []gate.AuditEntry) ([]gate.AuditEntry, error) {
	now := time.Now()
	out := make([]gate.AuditEntry, len(entries))
	for i, e := range entries {
		if !auditText(&e) {
			return nil, fmt.Errorf("postgres: append gate audit: %w", errGateText)
		}
		if e.At.IsZero() {
			e.At = now
		}
		out[i] = e
	}
	if len(out) == 0 {
		return out, nil
	}
	// One transaction holds the head row's lock for the whole batch.
	err := pgx.BeginFunc(ctx, g.db.pool, func(tx pgx.Tx) error {
		for i := range out {
			if err := fileAndAppend(ctx, tx, nil, &out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: append gate audit: %w", err)
	}
	return out, nil
}

func (g *GateStore) Audit(ctx context.Context, afterSeq int64, limit int) ([]gate.AuditEntry, error) {
	rows, err := g.db.pool.Query(ctx, `SELECT `+sqlstore.AuditCols+`
		FROM gate_audit WHERE seq > $1 ORDER BY seq LIMIT $2`, afterSeq, sqlstore.Limit(limit, sqlstore.MaxAuditPage))
	if err != nil {
		return nil, fmt.Errorf("postgres: read gate audit: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanAudit)
	if err != nil {
		return nil, fmt.Errorf("postgres: read gate audit: %w", err)
	}
	return out, nil
}

func (g *GateStore) AuditHead(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	if err := g.db.pool.QueryRow(ctx, `SELECT seq, hash FROM gate_audit_head WHERE id = 1`).Scan(&seq, &hash); err != nil {
		return 0, "", fmt.Errorf("postgres: gate audit head: %w", err)
	}
	return seq, hash, nil
}

func (g *GateStore) Heartbeat(ctx context.Context, now time.Time) (time.Time, error) {
	var prev int64
	err := pgx.BeginFunc(ctx, g.db.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT at_us FROM gate_heartbeat WHERE id = 1 FOR UPDATE`).Scan(&prev); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE gate_heartbeat SET at_us = $1 WHERE id = 1`, sqlstore.Micros(now))
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: gate heartbeat: %w", err)
	}
	return sqlstore.FromMicros(prev), nil
}
