package gate

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of a Store. Stores wrap them with context; callers branch with
// errors.Is.
var (
	// ErrNotFound: no such session, action or rule set in the tenant.
	ErrNotFound = errors.New("gate: not found")
	// ErrConflict: an update named a version that is no longer current.
	// Every state change of an action is a compare-and-set on its version;
	// this is how a claim is granted once.
	ErrConflict = errors.New("gate: version conflict")
	// ErrExists: a session or action with that key exists already.
	ErrExists = errors.New("gate: already exists")
	// ErrLedgerAmount: a ledger entry's amount is not finite (NaN or
	// ±Inf), or it takes a series' running sum past float64's range. The
	// write that carries it is refused whole.
	ErrLedgerAmount = errors.New("gate: ledger amount or sum not finite")
)

// SessionState is where a session is in its life.
type SessionState string

const (
	SessionStateOpen      SessionState = "open"
	SessionStateSuspended SessionState = "suspended" // parked for a later run to attach
	SessionStateCompleted SessionState = "completed" // ended; it cannot be attached again
)

// SessionRecord is a session as the service keeps it. The key is
// (TenantID, ID).
type SessionRecord struct {
	TenantID  string `json:"tenant_id"`
	ID        string `json:"session_id"`
	TeamID    string `json:"team_id"`
	AgentID   string `json:"agent_id"`
	Resumable bool   `json:"resumable"`
	// HoldWindow is the window granted at creation (the smaller of the
	// deployment's and the declared one); zero with HoldIndefinite.
	HoldWindow     time.Duration `json:"hold_window"`
	HoldIndefinite bool          `json:"hold_indefinite"`
	State          SessionState  `json:"state"`
	Version        int64         `json:"version"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
}

// ActionState is where a gated write is. Terminal states are Killed,
// Denied, Expired and Executed; an Unconfirmed action waits for an operator.
type ActionState string

const (
	// ActionPassed: judged pass; the write may be claimed.
	ActionPassed ActionState = "passed"
	// ActionHeld: waiting for an operator until HoldExpiresAt.
	ActionHeld ActionState = "held"
	// ActionApproved: an operator approved the hold; the write may be
	// claimed.
	ActionApproved ActionState = "approved"
	// ActionClaimed: a claim was granted with the current FencingToken and
	// no acknowledgement has come yet.
	ActionClaimed ActionState = "claimed"
	// ActionUnconfirmed: a claim was granted and later found without its
	// acknowledgement (a crash between claim and ack); only an operator
	// settles it.
	ActionUnconfirmed ActionState = "unconfirmed"
	// ActionExecuted: the write was acknowledged (or an operator confirmed
	// it ran). Terminal.
	ActionExecuted ActionState = "executed"
	ActionKilled   ActionState = "killed"  // judged kill or failed closed. Terminal.
	ActionDenied   ActionState = "denied"  // an operator denied the hold. Terminal.
	ActionExpired  ActionState = "expired" // the hold's window elapsed. Terminal.
)

// Terminal reports whether no transition leaves s.
func (s ActionState) Terminal() bool {
	switch s {
	case ActionExecuted, ActionKilled, ActionDenied, ActionExpired:
		return true
	}
	return false
}

// ActionRecord is a gated write as the service keeps it: what was asked,
// what was decided, and where its execution is. The key is (TenantID,
// SessionID, ActionID).
type ActionRecord struct {
	TenantID   string `json:"tenant_id"`
	SessionID  string `json:"session_id"`
	ActionID   string `json:"action_id"`
	ActionType string `json:"action_type"`
	TeamID     string `json:"team_id"`
	AgentID    string `json:"agent_id"`
	// Action is the action as submitted (its JSON), for the operator and
	// the audit.
	Action json.RawMessage `json:"action"`
	// Fingerprint binds a standing verdict to the action's content (see
	// Fingerprint); FingerprintScheme and CommitmentVersion say how it was
	// computed and under which meaning of a commitment. Empty for actions
	// recorded before fingerprints existed.
	Fingerprint       string `json:"fingerprint,omitempty"`
	FingerprintScheme string `json:"fingerprint_scheme,omitempty"`
	CommitmentVersion string `json:"commitment_version,omitempty"`

	State ActionState `json:"state"`
	// Verdict is the judged outcome (pass, hold or kill) with its cited
	// rule, rationale and fail-closed or denial reason.
	Verdict     Outcome `json:"verdict"`
	RuleIDCited string  `json:"rule_id_cited,omitempty"`
	Rationale   string  `json:"rationale,omitempty"`
	Reason      Reason  `json:"reason,omitempty"`
	// Decision is the service's record of how the verdict was reached
	// (matched rules, aggregates, the judge's answer, timings), shown to
	// operators; stores keep it opaque.
	Decision json.RawMessage `json:"decision,omitempty"`

	// Hold: set when the verdict was hold. A zero HoldExpiresAt with
	// HoldIndefinite set never expires.
	HoldWindow     time.Duration `json:"hold_window,omitempty"`
	HoldIndefinite bool          `json:"hold_indefinite,omitempty"`
	HoldExpiresAt  time.Time     `json:"hold_expires_at,omitzero"`
	DecidedBy      string        `json:"decided_by,omitempty"`
	DecidedAt      time.Time     `json:"decided_at,omitzero"`

	// FencingToken is the latest claim's token; every grant increments it,
	// so an acknowledgement from an older claim is refused.
	FencingToken   uint64    `json:"fencing_token,omitempty"`
	ClaimedAt      time.Time `json:"claimed_at,omitzero"`
	AcknowledgedAt time.Time `json:"acknowledged_at,omitzero"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ActionWrite is one durable step of an action: its new record and what
// must be recorded with it in the same transaction.
type ActionWrite struct {
	Record ActionRecord
	// ExpectVersion 0 creates the record (ErrExists when the key exists);
	// otherwise the stored version must equal it (ErrConflict if not).
	// The store sets Record.Version to ExpectVersion+1 and UpdatedAt (and
	// CreatedAt on creation) to the write's time, Now.
	ExpectVersion int64
	Now           time.Time
	// Audit, when set, is appended to the audit chain in the same
	// transaction.
	Audit *AuditEntry
	// Ledger entries are appended in the same transaction.
	Ledger []LedgerEntry
}

// ActionFilter selects actions for the operator's lists. Results are in
// (CreatedAt, SessionID, ActionID, TenantID) order, oldest first; the
// tenant comes last so that a listing of every tenant pages correctly
// past two tenants' actions with the same ids and time.
type ActionFilter struct {
	TenantID string // empty: every tenant (operators with the admin token)
	States   []ActionState
	// After continues a listing after this key (from the last record of
	// the previous page).
	AfterCreated   time.Time
	AfterSessionID string
	AfterActionID  string
	AfterTenantID  string
	Limit          int // default and maximum 500
}

// LedgerEntry is one committed write in the time-indexed trajectory
// ledger that rule aggregates read. Subject is what the write concerns
// (a customer, vendor, or record id) as the rule set's aggregate names it.
//
// An entry belongs to two series, its subject's (TenantID, ActionType,
// Subject) and its action type's (TenantID, ActionType), and a store files
// it at the later of At and the latest time in either series, so that
// each series stays in time order and a window's total is a difference of
// running totals (see Store.Aggregate). An entry dated before its series'
// latest (from a replica whose clock is behind, or a caller's backdated
// At) is therefore counted from that latest time, not its own: a window
// may count it later than At says, never drop it.
type LedgerEntry struct {
	TenantID   string    `json:"tenant_id"`
	ActionType string    `json:"action_type"`
	Subject    string    `json:"subject"`
	Amount     float64   `json:"amount"`
	At         time.Time `json:"at"`
	SessionID  string    `json:"session_id"`
	ActionID   string    `json:"action_id"`
}

// LedgerQuery asks for the count and sum of amounts of a tenant's entries
// of one action type about one subject ("" for any subject) filed at or
// after Since (see LedgerEntry for the time an entry is filed at).
type LedgerQuery struct {
	TenantID   string
	ActionType string
	Subject    string
	Since      time.Time
}

// LedgerTotal answers a LedgerQuery.
type LedgerTotal struct {
	Count int64
	Sum   float64
}

// RuleSetRecord is one version of a tenant's rules as stored: Body is
// the rule set document (see the service) kept opaque by stores.
type RuleSetRecord struct {
	TenantID  string          `json:"tenant_id"`
	Version   int64           `json:"version"`
	Body      json.RawMessage `json:"body"`
	Hash      string          `json:"hash"`
	CreatedBy string          `json:"created_by,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// AuditEntry is one record of the hash-chained audit log. Kind, the ids
// and Body are given by the caller; the store assigns Seq (1, 2, … with no
// gap), At, PrevHash and Hash (ChainHash) in the appending transaction.
// At is the caller's when set and otherwise the write's time (the
// ActionWrite's Now, or the store's clock), in UTC truncated to AuditTime.
type AuditEntry struct {
	Seq       int64           `json:"seq"`
	At        time.Time       `json:"at"`
	Kind      string          `json:"kind"`
	TenantID  string          `json:"tenant_id"`
	SessionID string          `json:"session_id,omitempty"`
	ActionID  string          `json:"action_id,omitempty"`
	Actor     string          `json:"actor,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// Store persists the gate's sessions, actions (verdicts, holds, claims
// and acknowledgements), trajectory ledger, rule sets and audit chain.
// store/sqlite and store/postgres implement it; store/storetest is its
// contract suite. Implementations are safe for concurrent use.
type Store interface {
	// CreateSession stores a new session; ErrExists (with the stored
	// record returned) when (TenantID, ID) exists.
	CreateSession(ctx context.Context, s SessionRecord) (SessionRecord, error)
	GetSession(ctx context.Context, tenantID, sessionID string) (SessionRecord, error)
	// UpdateSession replaces a session whose stored version is
	// s.Version (ErrConflict otherwise) and returns it with the next
	// version.
	UpdateSession(ctx context.Context, s SessionRecord) (SessionRecord, error)

	// WriteAction creates or compare-and-sets an action (see ActionWrite)
	// and returns the stored record. On ErrExists or ErrConflict it also
	// returns the record as stored now, so the caller can answer from it.
	WriteAction(ctx context.Context, w ActionWrite) (ActionRecord, error)
	GetAction(ctx context.Context, tenantID, sessionID, actionID string) (ActionRecord, error)
	ListActions(ctx context.Context, f ActionFilter) ([]ActionRecord, error)
	// CountActions returns how many actions of every tenant are in
	// state, and when the oldest of them was created (zero when there is
	// none): the pending holds and how long the oldest has waited, for an
	// operator's metrics. It reads the state's index alone.
	CountActions(ctx context.Context, state ActionState) (n int, oldest time.Time, err error)
	// ExpiringHolds returns held actions of every tenant whose
	// HoldExpiresAt is set and not after before, oldest first.
	ExpiringHolds(ctx context.Context, before time.Time, limit int) ([]ActionRecord, error)

	// Aggregate totals the ledger for each of qs (see LedgerQuery) and
	// returns the totals in the order of qs, all read from one snapshot
	// (one statement), so no write lands between two of them. Empty qs
	// returns nil. Each query costs two index lookups, its series' head
	// and the series' last entry before Since, whatever the window's or
	// the ledger's size. Sums are kept compensated, so a window's sum
	// keeps its cents after a lifetime in the trillions.
	Aggregate(ctx context.Context, qs []LedgerQuery) ([]LedgerTotal, error)

	// PutRuleSet stores the next version of a tenant's rule set (the
	// current version + 1, or 1) and returns it.
	PutRuleSet(ctx context.Context, r RuleSetRecord) (RuleSetRecord, error)
	// RuleSet returns a version of a tenant's rule set; version 0 is
	// the current one. ErrNotFound when there is none.
	RuleSet(ctx context.Context, tenantID string, version int64) (RuleSetRecord, error)
	// RuleSetTenants lists the tenants that have a rule set.
	RuleSetTenants(ctx context.Context) ([]string, error)

	// AppendAudit appends one entry outside an action write (operator
	// actions on sessions, rule changes, restarts).
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// AppendAudits appends entries in order, all or none, as one write:
	// a service auditing many events of its own (the tool gateway's
	// calls) pays one commit for a batch.
	AppendAudits(ctx context.Context, entries []AuditEntry) ([]AuditEntry, error)
	// Audit returns entries with Seq > afterSeq in order, at most limit
	// (default and maximum 1000).
	Audit(ctx context.Context, afterSeq int64, limit int) ([]AuditEntry, error)
	// AuditHead returns the last entry's seq and hash (0 and AuditGenesis
	// for an empty chain). Stores keep it in its own row, updated with
	// each append, so removing entries from the end is detected too.
	AuditHead(ctx context.Context) (seq int64, hash string, err error)

	// Heartbeat records that the service is alive at now and returns
	// the time of the previous heartbeat (zero at the first), so a
	// starting service knows how long the gate was down.
	Heartbeat(ctx context.Context, now time.Time) (previous time.Time, err error)
}
