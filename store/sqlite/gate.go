package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// GateStore returns the database's store of the governance gate (a
// gate.Store): sessions, gated actions, the trajectory ledger, rule sets,
// the hash-chained audit log and the service's heartbeat. Its writes go
// through the database's single writer, so action writes and audit
// appends are serialized in the process by construction: the chain cannot
// fork, and a compare-and-set reads and writes in one transaction.
func (db *DB) GateStore() *GateStore { return &GateStore{db} }

// GateStore keeps the governance gate's records in the database (see
// gate.Store).
type GateStore struct{ db *DB }

var _ gate.Store = (*GateStore)(nil)

func (g *GateStore) CreateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	sqlstore.PrepareSession(&s)
	var stored gate.SessionRecord
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO gate_sessions (`+sqlstore.SessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, id) DO NOTHING`,
			sqlstore.SessionArgs(&s)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		if stored, err = sqlstore.ScanSession(tx.QueryRow(`SELECT `+sqlstore.SessionCols+` FROM gate_sessions WHERE tenant = ? AND id = ?`,
			s.TenantID, s.ID)); err != nil {
			return err
		}
		return gate.ErrExists
	})
	if errors.Is(err, gate.ErrExists) {
		return stored, fmt.Errorf("sqlite: create gate session %s: %w", s.ID, err)
	}
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("sqlite: create gate session %s: %w", s.ID, err)
	}
	return s, nil
}

func (g *GateStore) GetSession(ctx context.Context, tenantID, sessionID string) (gate.SessionRecord, error) {
	s, err := sqlstore.ScanSession(g.db.queryRow(ctx, `SELECT `+sqlstore.SessionCols+` FROM gate_sessions WHERE tenant = ? AND id = ?`,
		tenantID, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("sqlite: get gate session %s: %w", sessionID, err)
	}
	return s, nil
}

func (g *GateStore) UpdateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	var out gate.SessionRecord
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		var err error
		// The creation time is the stored one: an update replaces what
		// the session is, not when it began.
		out, err = sqlstore.ScanSession(tx.QueryRow(`UPDATE gate_sessions SET team_id = ?, agent_id = ?, resumable = ?,
			hold_window_ns = ?, hold_indefinite = ?, state = ?, version = version + 1, updated_us = ?
			WHERE tenant = ? AND id = ? AND version = ? RETURNING `+sqlstore.SessionCols,
			s.TeamID, s.AgentID, s.Resumable, int64(s.HoldWindow), s.HoldIndefinite, string(s.State), sqlstore.Micros(s.UpdatedAt),
			s.TenantID, s.ID, s.Version))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var v int64
		err = tx.QueryRow(`SELECT version FROM gate_sessions WHERE tenant = ? AND id = ?`, s.TenantID, s.ID).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return gate.ErrNotFound
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("version %d is not the current %d: %w", s.Version, v, gate.ErrConflict)
	})
	if err != nil {
		return gate.SessionRecord{}, fmt.Errorf("sqlite: update gate session %s: %w", s.ID, err)
	}
	return out, nil
}

// The statements of every action write, prepared once on the write
// connection (writer.exec, writer.queryRow).
const (
	getActionSQL    = `SELECT ` + sqlstore.ActionCols + ` FROM gate_actions WHERE tenant = ? AND session_id = ? AND action_id = ?`
	insertActionSQL = `INSERT INTO gate_actions (` + sqlstore.ActionCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	updateActionSQL = `UPDATE gate_actions SET (` + sqlstore.ActionCols + `) =
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		WHERE tenant = ? AND session_id = ? AND action_id = ?`
	subjectHeadSQL  = `SELECT n, hi, lo, at_us FROM gate_ledger_subject_heads WHERE tenant = ? AND action_type = ? AND subject = ?`
	wideHeadSQL     = `SELECT n, hi, lo, at_us FROM gate_ledger_wide_heads WHERE tenant = ? AND action_type = ?`
	insertLedgerSQL = `INSERT INTO gate_ledger (tenant, action_type, subject, amount, at_us, session_id, action_id,
		subject_n, subject_hi, subject_lo, wide_n, wide_hi, wide_lo) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	putSubjectHeadSQL = `INSERT INTO gate_ledger_subject_heads (tenant, action_type, subject, n, hi, lo, at_us)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, action_type, subject)
		DO UPDATE SET n = excluded.n, hi = excluded.hi, lo = excluded.lo, at_us = excluded.at_us`
	putWideHeadSQL = `INSERT INTO gate_ledger_wide_heads (tenant, action_type, n, hi, lo, at_us)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, action_type)
		DO UPDATE SET n = excluded.n, hi = excluded.hi, lo = excluded.lo, at_us = excluded.at_us`
	auditHeadSQL   = `SELECT seq, hash FROM gate_audit_head WHERE id = 1`
	insertAuditSQL = `INSERT INTO gate_audit (seq, at_us, kind, tenant, session_id, action_id, actor, body, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	moveAuditHeadSQL = `UPDATE gate_audit_head SET seq = ?, hash = ? WHERE id = 1`
)

// gateWrites are the statements Open prepares for the gate store.
var gateWrites = []string{getActionSQL, insertActionSQL, updateActionSQL, subjectHeadSQL, wideHeadSQL, insertLedgerSQL,
	putSubjectHeadSQL, putWideHeadSQL, auditHeadSQL, insertAuditSQL, moveAuditHeadSQL}

// fileLedger files es after their series' heads and moves the heads, in
// tx. The single writer runs one write at a time, so the heads it reads
// are still the heads when it moves them; no lock is needed.
func (g *GateStore) fileLedger(tx *sql.Tx, es []gate.LedgerEntry) error {
	if len(es) == 0 {
		return nil
	}
	subjects, wides := sqlstore.LedgerSeries(es)
	heads := sqlstore.NewLedgerHeads()
	for _, k := range subjects {
		var h sqlstore.LedgerHead
		err := g.db.wr.queryRow(tx, subjectHeadSQL, k.TenantID, k.ActionType, k.Subject).Scan(&h.N, &h.Hi, &h.Lo, &h.AtUS)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		heads.Subject[k] = h
	}
	for _, k := range wides {
		var h sqlstore.LedgerHead
		err := g.db.wr.queryRow(tx, wideHeadSQL, k.TenantID, k.ActionType).Scan(&h.N, &h.Hi, &h.Lo, &h.AtUS)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		heads.Wide[k] = h
	}
	filed, err := heads.File(es)
	if err != nil {
		return err
	}
	for _, f := range filed {
		if _, err := g.db.wr.exec(tx, insertLedgerSQL, f.TenantID, f.ActionType, f.Subject, f.Amount, f.AtUS, f.SessionID, f.ActionID,
			f.SubjectTotal.N, f.SubjectTotal.Hi, f.SubjectTotal.Lo, f.WideTotal.N, f.WideTotal.Hi, f.WideTotal.Lo); err != nil {
			return err
		}
	}
	for _, k := range subjects {
		h := heads.Subject[k]
		if _, err := g.db.wr.exec(tx, putSubjectHeadSQL, k.TenantID, k.ActionType, k.Subject, h.N, h.Hi, h.Lo, h.AtUS); err != nil {
			return err
		}
	}
	for _, k := range wides {
		h := heads.Wide[k]
		if _, err := g.db.wr.exec(tx, putWideHeadSQL, k.TenantID, k.ActionType, h.N, h.Hi, h.Lo, h.AtUS); err != nil {
			return err
		}
	}
	return nil
}

func (g *GateStore) WriteAction(ctx context.Context, w gate.ActionWrite) (gate.ActionRecord, error) {
	sqlstore.PrepareActionWrite(&w)
	r := w.Record
	var current gate.ActionRecord
	err := g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var err error
		current, err = sqlstore.ScanAction(g.db.wr.queryRow(tx, getActionSQL, r.TenantID, r.SessionID, r.ActionID))
		exists := err == nil
		if !exists && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// The single writer runs this read and the write below with no
		// other write in between: the compare and the set are one step.
		switch {
		case w.ExpectVersion == 0 && exists:
			return gate.ErrExists
		case w.ExpectVersion == 0:
			if _, err := g.db.wr.exec(tx, insertActionSQL, sqlstore.ActionArgs(&r)...); err != nil {
				return err
			}
		case !exists:
			return gate.ErrNotFound
		case current.Version != w.ExpectVersion:
			return fmt.Errorf("version %d is not the current %d: %w", w.ExpectVersion, current.Version, gate.ErrConflict)
		default:
			r.CreatedAt = current.CreatedAt
			args := sqlstore.ActionArgs(&r)
			if _, err := g.db.wr.exec(tx, updateActionSQL, append(args, r.TenantID, r.SessionID, r.ActionID)...); err != nil {
				return err
			}
		}
		if err := g.fileLedger(tx, w.Ledger); err != nil {
			return err
		}
		if w.Audit == nil {
			return nil
		}
		_, err = g.appendAudit(tx, *w.Audit)
		return err
	})
	what := fmt.Sprintf("sqlite: write gate action %s/%s", r.SessionID, r.ActionID)
	switch {
	case errors.Is(err, gate.ErrExists) || errors.Is(err, gate.ErrConflict):
		return current, fmt.Errorf("%s: %w", what, err)
	case err != nil:
		return gate.ActionRecord{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

func (g *GateStore) GetAction(ctx context.Context, tenantID, sessionID, actionID string) (gate.ActionRecord, error) {
	a, err := sqlstore.ScanAction(g.db.queryRow(ctx, `SELECT `+sqlstore.ActionCols+` FROM gate_actions
		WHERE tenant = ? AND session_id = ? AND action_id = ?`, tenantID, sessionID, actionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.ActionRecord{}, fmt.Errorf("sqlite: get gate action %s/%s: %w", sessionID, actionID, err)
	}
	return a, nil
}

func scanActions(rows *sql.Rows) ([]gate.ActionRecord, error) {
	defer rows.Close()
	return sqlstore.Collect(rows, sqlstore.ScanAction)
}

func (g *GateStore) ListActions(ctx context.Context, f gate.ActionFilter) ([]gate.ActionRecord, error) {
	var where []string
	var args []any
	if f.TenantID != "" {
		where, args = append(where, `tenant = ?`), append(args, f.TenantID)
	}
	if len(f.States) > 0 {
		where = append(where, `state IN (?`+strings.Repeat(`, ?`, len(f.States)-1)+`)`)
		for _, s := range f.States {
			args = append(args, string(s))
		}
	}
	if !f.AfterCreated.IsZero() || f.AfterSessionID != "" || f.AfterActionID != "" || f.AfterTenantID != "" {
		where = append(where, `(created_us, session_id, action_id, tenant) > (?, ?, ?, ?)`)
		args = append(args, sqlstore.Micros(f.AfterCreated), f.AfterSessionID, f.AfterActionID, f.AfterTenantID)
	}
	q := `SELECT ` + sqlstore.ActionCols + ` FROM gate_actions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_us, session_id, action_id, tenant LIMIT ?`
	rows, err := g.db.r.QueryContext(ctx, q, append(args, sqlstore.Limit(f.Limit, sqlstore.MaxActionPage))...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gate actions: %w", err)
	}
	out, err := scanActions(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list gate actions: %w", err)
	}
	return out, nil
}

// CountActions implements gate.Store.
func (g *GateStore) CountActions(ctx context.Context, state gate.ActionState) (int, time.Time, error) {
	var n int
	var oldest *int64
	if err := g.db.r.QueryRowContext(ctx, `SELECT COUNT(*), MIN(created_us) FROM gate_actions WHERE state = ?`, string(state)).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: count gate actions %s: %w", state, err)
	}
	if oldest == nil {
		return n, time.Time{}, nil
	}
	return n, sqlstore.FromMicros(*oldest), nil
}

func (g *GateStore) ExpiringHolds(ctx context.Context, before time.Time, limit int) ([]gate.ActionRecord, error) {
	rows, err := g.db.r.QueryContext(ctx, `SELECT `+sqlstore.ActionCols+` FROM gate_actions
		WHERE state = 'held' AND hold_expires_us <> 0 AND hold_expires_us <= ?
		ORDER BY hold_expires_us, tenant, session_id, action_id LIMIT ?`, sqlstore.Micros(before), sqlstore.Limit(limit, sqlstore.MaxActionPage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: expiring gate holds: %w", err)
	}
	out, err := scanActions(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: expiring gate holds: %w", err)
	}
	return out, nil
}

// Each query's part of Aggregate's statement: its index, its series'
// head and the series' last entry before Since (the greatest time, then
// the greatest n, of the covering index's range), zeros for either when
// there is none.
const (
	subjectTotalSQL = `SELECT ?, coalesce(h.n, 0), coalesce(h.hi, 0), coalesce(h.lo, 0),
		coalesce(b.subject_n, 0), coalesce(b.subject_hi, 0), coalesce(b.subject_lo, 0)
	FROM (SELECT 1)
	LEFT JOIN gate_ledger_subject_heads h ON h.tenant = ? AND h.action_type = ? AND h.subject = ?
	LEFT JOIN (SELECT subject_n, subject_hi, subject_lo FROM gate_ledger
		WHERE tenant = ? AND action_type = ? AND subject = ? AND at_us < ?
		ORDER BY at_us DESC, subject_n DESC LIMIT 1) b ON 1`
	wideTotalSQL = `SELECT ?, coalesce(h.n, 0), coalesce(h.hi, 0), coalesce(h.lo, 0),
		coalesce(b.wide_n, 0), coalesce(b.wide_hi, 0), coalesce(b.wide_lo, 0)
	FROM (SELECT 1)
	LEFT JOIN gate_ledger_wide_heads h ON h.tenant = ? AND h.action_type = ?
	LEFT JOIN (SELECT wide_n, wide_hi, wide_lo FROM gate_ledger
		WHERE tenant = ? AND action_type = ? AND at_us < ?
		ORDER BY at_us DESC, wide_n DESC LIMIT 1) b ON 1`
)

// maxTotalsPerStatement bounds the queries of one statement, below
// SQLite's 500 terms of a compound SELECT. A rule set has at most 64
// aggregates; a longer batch takes several statements in one read
// transaction.
const maxTotalsPerStatement = 128

// aggregateSQL is one statement totalling qs (at most
// maxTotalsPerStatement), the index of each row being first + its place in
// qs: the queries' parts joined by UNION ALL, subjects' first, so that
// its text depends only on how many of each kind there are and a rule
// set's batch prepares once.
func aggregateSQL(qs []gate.LedgerQuery, first int) (string, []any) {
	var parts []string
	var args []any
	for _, subject := range []bool{true, false} {
		for i, q := range qs {
			since := sqlstore.Micros(q.Since)
			switch {
			case subject && q.Subject != "":
				parts = append(parts, subjectTotalSQL)
				args = append(args, first+i, q.TenantID, q.ActionType, q.Subject, q.TenantID, q.ActionType, q.Subject, since)
			case !subject && q.Subject == "":
				parts = append(parts, wideTotalSQL)
				args = append(args, first+i, q.TenantID, q.ActionType, q.TenantID, q.ActionType, since)
			}
		}
	}
	return strings.Join(parts, "\n\tUNION ALL\n\t"), args
}

func (g *GateStore) Aggregate(ctx context.Context, qs []gate.LedgerQuery) ([]gate.LedgerTotal, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	out := make([]gate.LedgerTotal, len(qs))
	if len(qs) <= maxTotalsPerStatement {
		query, args := aggregateSQL(qs, 0)
		rows, err := g.db.query(ctx, query, args...)
		if err == nil {
			defer rows.Close()
			err = sqlstore.ReadLedgerTotals(rows, out)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: aggregate gate ledger: %w", err)
		}
		return out, nil
	}
	// One read transaction: its statements read one snapshot.
	tx, err := g.db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: aggregate gate ledger: %w", err)
	}
	defer tx.Rollback()
	for first := 0; first < len(qs); first += maxTotalsPerStatement {
		query, args := aggregateSQL(qs[first:min(first+maxTotalsPerStatement, len(qs))], first)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err == nil {
			err = sqlstore.ReadLedgerTotals(rows, out)
			rows.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: aggregate gate ledger: %w", err)
		}
	}
	return out, nil
}

func (g *GateStore) PutRuleSet(ctx context.Context, r gate.RuleSetRecord) (gate.RuleSetRecord, error) {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	r.CreatedAt = sqlstore.Stored(r.CreatedAt)
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer makes reading the current version and
		// inserting the next one atomic.
		if err := tx.QueryRow(`SELECT coalesce(max(version), 0) + 1 FROM gate_rule_sets WHERE tenant = ?`, r.TenantID).
			Scan(&r.Version); err != nil {
			return err
		}
		body := r.Body
		if body == nil {
			body = []byte{}
		}
		_, err := tx.Exec(`INSERT INTO gate_rule_sets (tenant, version, body, hash, created_by, created_us)
			VALUES (?, ?, ?, ?, ?, ?)`, r.TenantID, r.Version, []byte(body), r.Hash, r.CreatedBy, sqlstore.Micros(r.CreatedAt))
		return err
	})
	if err != nil {
		return gate.RuleSetRecord{}, fmt.Errorf("sqlite: put gate rule set of %s: %w", r.TenantID, err)
	}
	return r, nil
}

func (g *GateStore) RuleSet(ctx context.Context, tenantID string, version int64) (gate.RuleSetRecord, error) {
	q := `SELECT tenant, version, body, hash, created_by, created_us FROM gate_rule_sets WHERE tenant = ?`
	args := []any{tenantID}
	if version == 0 {
		q += ` ORDER BY version DESC LIMIT 1`
	} else {
		q += ` AND version = ?`
		args = append(args, version)
	}
	var r gate.RuleSetRecord
	var body []byte
	var cus int64
	err := g.db.r.QueryRowContext(ctx, q, args...).Scan(&r.TenantID, &r.Version, &body, &r.Hash, &r.CreatedBy, &cus)
	if errors.Is(err, sql.ErrNoRows) {
		err = gate.ErrNotFound
	}
	if err != nil {
		return gate.RuleSetRecord{}, fmt.Errorf("sqlite: gate rule set %d of %s: %w", version, tenantID, err)
	}
	r.Body, r.CreatedAt = sqlstore.Raw(body), sqlstore.FromMicros(cus)
	return r, nil
}

func (g *GateStore) RuleSetTenants(ctx context.Context) ([]string, error) {
	rows, err := g.db.r.QueryContext(ctx, `SELECT DISTINCT tenant FROM gate_rule_sets ORDER BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: gate rule set tenants: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanText)
	if err != nil {
		return nil, fmt.Errorf("sqlite: gate rule set tenants: %w", err)
	}
	return out, nil
}

// appendAudit chains e after the head in tx. Every append runs on the
// single writer, one at a time, so no two read the same head.
func (g *GateStore) appendAudit(tx *sql.Tx, e gate.AuditEntry) (gate.AuditEntry, error) {
	var seq int64
	var prev string
	if err := g.db.wr.queryRow(tx, auditHeadSQL).Scan(&seq, &prev); err != nil {
		return gate.AuditEntry{}, err
	}
	sqlstore.Chain(&e, seq, prev)
	if _, err := g.db.wr.exec(tx, insertAuditSQL, e.Seq, e.At.UnixMicro(), e.Kind, e.TenantID, e.SessionID, e.ActionID, e.Actor, sqlstore.Raw(e.Body), e.PrevHash, e.Hash); err != nil {
		return gate.AuditEntry{}, err
	}
	if _, err := g.db.wr.exec(tx, moveAuditHeadSQL, e.Seq, e.Hash); err != nil {
		return gate.AuditEntry{}, err
	}
	return e, nil
}

func (g *GateStore) AppendAudit(ctx context.Context, e gate.AuditEntry) (gate.AuditEntry, error) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	var out gate.AuditEntry
	err := g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = g.appendAudit(tx, e)
		return err
	})
	if err != nil {
		return gate.AuditEntry{}, fmt.Errorf("sqlite: append gate audit: %w", err)
	}
	return out, nil
}

func (g *GateStore) AppendAudits(ctx context.Context, entries []gate.AuditEntry) ([]gate.AuditEntry, error) {
	now := time.Now()
	out := make([]gate.AuditEntry, len(entries))
	err := g.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		for i, e := range entries {
			if e.At.IsZero() {
				e.At = now
			}
			var err error
			if out[i], err = g.appendAudit(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: append gate audit: %w", err)
	}
	return out, nil
}

func (g *GateStore) Audit(ctx context.Context, afterSeq int64, limit int) ([]gate.AuditEntry, error) {
	rows, err := g.db.r.QueryContext(ctx, `SELECT `+sqlstore.AuditCols+`
		FROM gate_audit WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, sqlstore.Limit(limit, sqlstore.MaxAuditPage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read gate audit: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanAudit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read gate audit: %w", err)
	}
	return out, nil
}

func (g *GateStore) AuditHead(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	if err := g.db.r.QueryRowContext(ctx, `SELECT seq, hash FROM gate_audit_head WHERE id = 1`).Scan(&seq, &hash); err != nil {
		return 0, "", fmt.Errorf("sqlite: gate audit head: %w", err)
	}
	return seq, hash, nil
}

func (g *GateStore) Heartbeat(ctx context.Context, now time.Time) (time.Time, error) {
	var prev int64
	err := g.db.wr.do(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow(`SELECT at_us FROM gate_heartbeat WHERE id = 1`).Scan(&prev); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE gate_heartbeat SET at_us = ? WHERE id = 1`, sqlstore.Micros(now))
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: gate heartbeat: %w", err)
	}
	return sqlstore.FromMicros(prev), nil
}
