package gate

import (
	"errors"
	"fmt"
	"time"
)

// The gate's HTTP API, under APIPath on a NovaOS server. Every body is
// JSON; every error is an RFC 9457 problem (application/problem+json)
// whose "reason" member, when present, is a Reason. Agents call with a
// platform token carrying ScopeSubmit; the tenant and the agent are the
// token's (an agent_id naming another agent is refused, 403), and an
// agent acts only in the sessions it opened.
//
//	POST /api/v1/gate/sessions        SessionRequest → SessionInfo (201 new, 200 attached)
//	POST /api/v1/gate/sessions/end    SessionEnd → 204
//	POST /api/v1/gate/actions         Action → Verdict; with ?claim=1 a pass is also
//	                                  claimed in the same step (Verdict.Claim)
//	POST /api/v1/gate/actions/wait    WaitRequest → Verdict, answered when the hold is
//	                                  decided or the wait's timeout passes (still hold)
//	POST /api/v1/gate/claims          ClaimRequest → Claim
//	POST /api/v1/gate/acks            AckRequest → Ack (409 with a stale fencing token)
//
// Operators call with a token carrying ScopeOperate (or the server's
// admin token, which sees every tenant and names one with ?tenant=):
//
//	GET  /api/v1/gate/actions?state=held,unconfirmed&limit=&after=   → ActionList
//	GET  /api/v1/gate/actions/{session}/{action}                     → ActionRecord
//	POST /api/v1/gate/actions/{session}/{action}/decision            OperatorDecision → ActionRecord
//
// Rule sets and the audit log need ScopeAdmin (or the admin token):
//
//	PUT  /api/v1/gate/rules           RuleSetDocument → RuleSetInfo
//	GET  /api/v1/gate/rules[?version=N]                              → RuleSetInfo with Rules
//	GET  /api/v1/gate/audit?after=SEQ&limit=N                        → AuditPage
const APIPath = "/api/v1/gate"

// Token scopes of the gate.
const (
	ScopeSubmit  = "gate:submit"  // open sessions, submit actions, claim and acknowledge
	ScopeOperate = "gate:operate" // list, show and decide held and unconfirmed actions
	ScopeAdmin   = "gate:admin"   // rule sets and the audit log
)

// WaitRequest asks for a held action's verdict once it is decided.
type WaitRequest struct {
	SessionID string `json:"session_id"`
	ActionID  string `json:"action_id"`
	// TimeoutS bounds this wait in seconds (the server caps it); the
	// answer is the hold still pending when it passes, and the caller
	// asks again.
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// OperatorDecisionKind is what an operator does to an action.
type OperatorDecisionKind string

const (
	DecisionApprove            OperatorDecisionKind = "approve"              // a held action may run
	DecisionDeny               OperatorDecisionKind = "deny"                 // a held action never runs
	DecisionConfirmExecuted    OperatorDecisionKind = "confirm_executed"     // an unconfirmed write did land
	DecisionConfirmNotExecuted OperatorDecisionKind = "confirm_not_executed" // it did not; a later run may claim it again
)

// Valid reports whether k is one of the four decisions.
func (k OperatorDecisionKind) Valid() bool {
	switch k {
	case DecisionApprove, DecisionDeny, DecisionConfirmExecuted, DecisionConfirmNotExecuted:
		return true
	}
	return false
}

// OperatorDecision is an operator's decision on one action.
type OperatorDecision struct {
	Decision OperatorDecisionKind `json:"decision"`
	Note     string               `json:"note,omitempty"`
}

// DecodeOperatorDecision decodes an operator decision strictly.
func DecodeOperatorDecision(data []byte) (OperatorDecision, error) {
	var d OperatorDecision
	if err := decodeStrict(data, &d); err != nil {
		return OperatorDecision{}, fmt.Errorf("gate: decode decision: %w", err)
	}
	if !d.Decision.Valid() {
		return OperatorDecision{}, fmt.Errorf("gate: decode decision: decision: %q is not approve, deny, confirm_executed or confirm_not_executed", d.Decision)
	}
	if len(d.Note) > 4<<10 {
		return OperatorDecision{}, errors.New("gate: decode decision: note: longer than 4 KiB")
	}
	return d, nil
}

// ActionList is a page of actions for operators.
type ActionList struct {
	Actions []ActionRecord `json:"actions"`
	// Next continues the listing (?after=Next), empty on the last page.
	Next string `json:"next,omitempty"`
}

// Decision is how the service reached a verdict, kept with the action
// (ActionRecord.Decision) and in its audit entry, and shown to operators.
type Decision struct {
	RuleSetVersion int64  `json:"rule_set_version"`
	RuleSetHash    string `json:"rule_set_hash,omitempty"`
	// Shadow is set when the rule set is log-only: Would is what it would
	// have decided, and the enforced verdict ignored it.
	Shadow bool    `json:"shadow,omitempty"`
	Would  Outcome `json:"would,omitempty"`
	// Floor is set when the action's floor raised the verdict.
	Floor Outcome `json:"floor,omitempty"`
	// Rules is the deterministic layer's verdict, Matched its matches.
	Rules      Outcome            `json:"rules"`
	Matched    []RuleMatch        `json:"matched,omitempty"`
	Aggregates map[string]float64 `json:"aggregates,omitempty"`
	Judge      *JudgeDecision     `json:"judge,omitempty"`
	// Fingerprint scheme and commitment version the verdict is bound to.
	FingerprintScheme string `json:"fingerprint_scheme,omitempty"`
	CommitmentVersion string `json:"commitment_version,omitempty"`
	// Latency of each layer and in total, in microseconds.
	RulesMicros int64 `json:"rules_us"`
	JudgeMicros int64 `json:"judge_us,omitempty"`
	TotalMicros int64 `json:"total_us"`
}

// RuleMatch is one rule whose condition held (or failed closed).
type RuleMatch struct {
	RuleID  string  `json:"rule_id"`
	Text    string  `json:"text,omitempty"`
	Verdict Outcome `json:"verdict"`
	Error   string  `json:"error,omitempty"`
}

// JudgeDecision is the LLM judge's part of a decision.
type JudgeDecision struct {
	Model         string   `json:"model"`
	PromptVersion string   `json:"prompt_version"`
	Verdict       Outcome  `json:"verdict,omitempty"`
	RuleIDCited   string   `json:"rule_id_cited,omitempty"`
	Rationale     string   `json:"rationale,omitempty"`
	Signals       []string `json:"signals,omitempty"`
	// Failure is set when the judge failed (and the verdict failed closed).
	Failure string `json:"failure,omitempty"`
}

// RuleSetDocument is a tenant's rule set as an administrator writes it.
type RuleSetDocument struct {
	// Shadow makes the set log-only: its decisions are recorded as what
	// would have happened, and every write passes the rule layer.
	Shadow     bool            `json:"shadow,omitempty"`
	Rules      []RuleDocument  `json:"rules"`
	Aggregates []AggregateSpec `json:"aggregates,omitempty"`
}

// RuleDocument is one rule: plain-English text, with an optional CEL
// condition that imposes Verdict (hold or kill) when it holds. A rule
// without a condition is read by the LLM judge only.
type RuleDocument struct {
	ID      string  `json:"id"`
	Text    string  `json:"text"`
	When    string  `json:"when,omitempty"`
	Verdict Outcome `json:"verdict,omitempty"`
}

// AggregateSpec names a trajectory aggregate rules read as agg.<Name>:
// the count (or sum of amounts) of the tenant's committed writes of
// ActionType within Window, about the same subject as the write being
// judged (the context field SubjectField names, default record_id), or
// about any subject when Scope is "tenant".
type AggregateSpec struct {
	Name         string   `json:"name"`
	ActionType   string   `json:"action_type"`
	Measure      string   `json:"measure"` // "count" or "sum"
	Window       Duration `json:"window"`
	SubjectField string   `json:"subject_field,omitempty"`
	Scope        string   `json:"scope,omitempty"` // "subject" (default) or "tenant"
}

// RuleSetInfo describes a stored rule set version.
type RuleSetInfo struct {
	TenantID  string           `json:"tenant_id"`
	Version   int64            `json:"version"`
	Hash      string           `json:"hash"`
	CreatedAt time.Time        `json:"created_at"`
	CreatedBy string           `json:"created_by,omitempty"`
	Document  *RuleSetDocument `json:"document,omitempty"`
}

// AuditPage is a page of the audit chain, with the chain's head so a
// verifier notices entries removed from its end.
type AuditPage struct {
	Entries  []AuditEntry `json:"entries"`
	HeadSeq  int64        `json:"head_seq"`
	HeadHash string       `json:"head_hash"`
}

// Duration is a time.Duration written as Go duration text ("168h") in
// JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("a duration is a string such as \"168h\"")
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
