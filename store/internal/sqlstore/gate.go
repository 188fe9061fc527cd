package sqlstore

import (
	"time"

	"novaos.dev/novaos/gate"
)

// The gate store's records in the column layout both SQL stores share
// (their 0008_gate migrations): times in microseconds since the Unix
// epoch, 0 for the zero time; durations in nanoseconds; the fencing
// token's uint64 bits in a signed 64-bit column; opaque JSON as bytes,
// NULL when empty.

// Page bounds of gate.Store's listings.
const (
	MaxActionPage = 500  // ActionFilter.Limit's default and maximum
	MaxAuditPage  = 1000 // Audit's
)

// Limit is limit when it is in (0, most], else most.
func Limit(limit, most int) int {
	if limit <= 0 || limit > most {
		return most
	}
	return limit
}

// Micros is t in microseconds since the Unix epoch, 0 for the zero time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromMicros is the time Micros stored, in UTC.
func FromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// Stored is t as it reads back once stored.
func Stored(t time.Time) time.Time { return FromMicros(Micros(t)) }

// Raw is b, or nil (SQL NULL) when empty.
func Raw(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Scanner is a row of database/sql or pgx.
type Scanner interface{ Scan(dest ...any) error }

// SessionCols are the columns of gate_sessions, in ScanSession's order.
const SessionCols = `tenant, id, team_id, agent_id, resumable, hold_window_ns, hold_indefinite, state, version, created_us, updated_us`

// SessionArgs are s's values in SessionCols' order.
func SessionArgs(s *gate.SessionRecord) []any {
	return []any{s.TenantID, s.ID, s.TeamID, s.AgentID, s.Resumable, int64(s.HoldWindow), s.HoldIndefinite, string(s.State),
		s.Version, Micros(s.CreatedAt), Micros(s.UpdatedAt)}
}

// ScanSession reads a row of SessionCols.
func ScanSession(r Scanner) (gate.SessionRecord, error) {
	var s gate.SessionRecord
	var window, cus, uus int64
	var state string
	err := r.Scan(&s.TenantID, &s.ID, &s.TeamID, &s.AgentID, &s.Resumable, &window, &s.HoldIndefinite, &state,
		&s.Version, &cus, &uus)
	s.HoldWindow, s.State, s.CreatedAt, s.UpdatedAt = time.Duration(window), gate.SessionState(state), FromMicros(cus), FromMicros(uus)
	return s, err
}

// PrepareSession sets what CreateSession stores: version 1, the times to
// the microsecond, and, when unset, the creation time to now and the
// update time to the creation time.
func PrepareSession(s *gate.SessionRecord) {
	if s.CreatedAt.IsZero() {
		s.CreatedAt = time.Now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	s.CreatedAt, s.UpdatedAt, s.Version = Stored(s.CreatedAt), Stored(s.UpdatedAt), 1
}

// ActionCols are the columns of gate_actions, in ScanAction's order.
const ActionCols = `tenant, session_id, action_id, action_type, team_id, agent_id, action, fingerprint, fingerprint_scheme,
	commitment_version, state, verdict, rule_id_cited, rationale, reason, decision, hold_window_ns, hold_indefinite,
	hold_expires_us, decided_by, decided_us, fencing_token, claimed_us, acknowledged_us, version, created_us, updated_us`

// ActionArgs are r's values in ActionCols' order.
func ActionArgs(r *gate.ActionRecord) []any {
	return []any{r.TenantID, r.SessionID, r.ActionID, r.ActionType, r.TeamID, r.AgentID, Raw(r.Action), r.Fingerprint,
		r.FingerprintScheme, r.CommitmentVersion, string(r.State), string(r.Verdict), r.RuleIDCited, r.Rationale,
		string(r.Reason), Raw(r.Decision), int64(r.HoldWindow), r.HoldIndefinite, Micros(r.HoldExpiresAt), r.DecidedBy,
		Micros(r.DecidedAt), int64(r.FencingToken), Micros(r.ClaimedAt), Micros(r.AcknowledgedAt), r.Version,
		Micros(r.CreatedAt), Micros(r.UpdatedAt)}
}

// ScanAction reads a row of ActionCols.
func ScanAction(r Scanner) (gate.ActionRecord, error) {
	var (
		a                                               gate.ActionRecord
		state, verdict, reason                          string
		action, decision                                []byte
		window, expires, decided, token, claimed, acked int64
		cus, uus                                        int64
	)
	err := r.Scan(&a.TenantID, &a.SessionID, &a.ActionID, &a.ActionType, &a.TeamID, &a.AgentID, &action, &a.Fingerprint,
		&a.FingerprintScheme, &a.CommitmentVersion, &state, &verdict, &a.RuleIDCited, &a.Rationale, &reason, &decision,
		&window, &a.HoldIndefinite, &expires, &a.DecidedBy, &decided, &token, &claimed, &acked, &a.Version, &cus, &uus)
	a.Action, a.Decision = Raw(action), Raw(decision)
	a.State, a.Verdict, a.Reason = gate.ActionState(state), gate.Outcome(verdict), gate.Reason(reason)
	a.HoldWindow, a.HoldExpiresAt, a.DecidedAt = time.Duration(window), FromMicros(expires), FromMicros(decided)
	a.FencingToken, a.ClaimedAt, a.AcknowledgedAt = uint64(token), FromMicros(claimed), FromMicros(acked)
	a.CreatedAt, a.UpdatedAt = FromMicros(cus), FromMicros(uus)
	return a, err
}

// PrepareActionWrite fills in what the store assigns before it writes w:
// the record's version and times (an update's creation time is the
// stored one, which the store sets), every time to the microsecond, and
// for each ledger entry and the audit entry what they leave unset: the
// record's tenant and ids, and the write's time (time.Now when w.Now is
// unset). The audit entry's chain fields are set when it is appended.
// w's slices and entry are copied, not changed.
func PrepareActionWrite(w *gate.ActionWrite) {
	if w.Now.IsZero() {
		w.Now = time.Now()
	}
	w.Now = Stored(w.Now)
	r := &w.Record
	r.Version, r.UpdatedAt = w.ExpectVersion+1, w.Now
	if w.ExpectVersion == 0 {
		r.CreatedAt = w.Now
	}
	r.HoldExpiresAt, r.DecidedAt = Stored(r.HoldExpiresAt), Stored(r.DecidedAt)
	r.ClaimedAt, r.AcknowledgedAt = Stored(r.ClaimedAt), Stored(r.AcknowledgedAt)
	ledger := make([]gate.LedgerEntry, len(w.Ledger))
	for i, e := range w.Ledger {
		if e.TenantID == "" {
			e.TenantID = r.TenantID
		}
		if e.SessionID == "" && e.ActionID == "" {
			e.SessionID, e.ActionID = r.SessionID, r.ActionID
		}
		if e.At.IsZero() {
			e.At = w.Now
		}
		ledger[i] = e
	}
	w.Ledger = ledger
	if w.Audit != nil {
		e := *w.Audit
		if e.At.IsZero() {
			e.At = w.Now
		}
		w.Audit = &e
	}
}

// Chain sets e's place in the audit chain after the entry at seq with
// hash prev: its seq, its time in UTC to gate.AuditTime, and its hashes.
func Chain(e *gate.AuditEntry, seq int64, prev string) {
	e.Seq, e.PrevHash = seq+1, prev
	e.At = e.At.UTC().Truncate(gate.AuditTime)
	e.Hash = gate.ChainHash(e.PrevHash, *e)
}

// Collect scans every row of rows with scan (the caller closes rows).
func Collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// AuditCols are the columns of gate_audit, in ScanAudit's order.
const AuditCols = `seq, at_us, kind, tenant, session_id, action_id, actor, body, prev_hash, hash`

// ScanAudit reads a row of AuditCols.
func ScanAudit(r Scanner) (gate.AuditEntry, error) {
	var e gate.AuditEntry
	var at int64
	var body []byte
	if err := r.Scan(&e.Seq, &at, &e.Kind, &e.TenantID, &e.SessionID, &e.ActionID, &e.Actor, &body, &e.PrevHash, &e.Hash); err != nil {
		return gate.AuditEntry{}, err
	}
	// The instant 0 is a real time here: the store always sets At.
	e.At, e.Body = time.UnixMicro(at).UTC(), Raw(body)
	return e, nil
}

// ScanText reads a row of one text column.
func ScanText(r Scanner) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}
