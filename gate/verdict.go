package gate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Outcome is a verdict's decision, in the Python gate SDK's words.
type Outcome string

const (
	// Pass lets the write execute.
	Pass Outcome = "pass"
	// Hold pauses the write for a human operator (PAUSED on the operator page).
	Hold Outcome = "hold"
	// Kill blocks the write; it never runs (BLOCKED on the operator page).
	Kill Outcome = "kill"
	// ExecutionUnconfirmed is what a resume gets when an earlier run claimed
	// the write and never acknowledged it: the gate cannot know whether the
	// write landed, so it refuses until an operator settles it.
	ExecutionUnconfirmed Outcome = "execution_unconfirmed"
	// AlreadyExecuted is what a resume gets when the work item's write was
	// executed and acknowledged by an earlier run; it is not run again.
	AlreadyExecuted Outcome = "already_executed"
)

// Valid reports whether o is one of the five outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case Pass, Hold, Kill, ExecutionUnconfirmed, AlreadyExecuted:
		return true
	}
	return false
}

// Reason is a stable machine code for why a write was stopped or refused.
// Fail-closed reasons start with "fail_closed_" and resume refusals with
// "resume_"; both appear in error messages as a bracketed prefix, the
// form the Python gate SDK documents ("[fail_closed_config] …").
type Reason string

// The fail-closed reasons. The Python gate SDK names judge error, judge
// timeout, operator timeout, a server restart past the grace window and
// refused configuration; the rest are the further uncertainties the Go SDK
// and service meet (store, rule and protocol faults), each kept apart so an
// operator can tell an outage from a policy decision.
const (
	ReasonConfig            Reason = "fail_closed_config"             // session or write refused before any request
	ReasonJudgeError        Reason = "fail_closed_judge_error"        // the judge answered with an error (429, 5xx, 4xx, transport)
	ReasonJudgeTimeout      Reason = "fail_closed_judge_timeout"      // the judge did not answer in time
	ReasonJudgeMalformed    Reason = "fail_closed_judge_malformed"    // the judge's answer failed strict parsing
	ReasonJudgeRefused      Reason = "fail_closed_judge_refused"      // the model refused or stopped early
	ReasonOperatorTimeout   Reason = "fail_closed_operator_timeout"   // a hold's window elapsed with no decision
	ReasonRestartPastGrace  Reason = "fail_closed_restart_past_grace" // the server restarted and the hold outlived the grace window
	ReasonRulesUnavailable  Reason = "fail_closed_rules_unavailable"  // the tenant's rule set failed to load
	ReasonRuleError         Reason = "fail_closed_rule_error"         // a rule could not be evaluated (missing field, type error, cost limit)
	ReasonContextBuilder    Reason = "fail_closed_context_builder"    // the write's context builder failed
	ReasonServerUnavailable Reason = "fail_closed_server_unavailable" // the gate could not be reached or answered with an error
	ReasonProtocol          Reason = "fail_closed_protocol"           // the gate's answer failed strict decoding
	ReasonStore             Reason = "fail_closed_store"              // the decision could not be recorded durably
)

// The resume refusals the Python gate SDK lists. The first three are terminal
// and want a new action id; ResumeNoStandingVerdict means nothing has been
// decided yet and the resume should be retried.
const (
	ResumeFingerprintMismatch      Reason = "resume_fingerprint_mismatch"
	ResumeCommitmentUnversioned    Reason = "resume_commitment_unversioned"
	ResumeCommitmentVersionChanged Reason = "resume_commitment_version_changed"
	ResumeNoStandingVerdict        Reason = "resume_no_standing_verdict"
)

// ReasonOperatorDenied marks a hold an operator denied. It is a decision,
// not an uncertainty, so it carries no fail_closed_ prefix.
const ReasonOperatorDenied Reason = "operator_denied"

var knownReasons = map[Reason]bool{
	ReasonConfig: true, ReasonJudgeError: true, ReasonJudgeTimeout: true, ReasonJudgeMalformed: true,
	ReasonJudgeRefused: true, ReasonOperatorTimeout: true, ReasonRestartPastGrace: true,
	ReasonRulesUnavailable: true, ReasonRuleError: true, ReasonContextBuilder: true,
	ReasonServerUnavailable: true, ReasonProtocol: true, ReasonStore: true,
	ResumeFingerprintMismatch: true, ResumeCommitmentUnversioned: true,
	ResumeCommitmentVersionChanged: true, ResumeNoStandingVerdict: true, ReasonOperatorDenied: true,
}

// Known reports whether r is one of the codes this package defines.
func (r Reason) Known() bool { return knownReasons[r] }

// FailClosed reports whether r is a fail-closed code.
func (r Reason) FailClosed() bool { return strings.HasPrefix(string(r), "fail_closed_") }

// ResumeRefusal reports whether r is one of the four resume refusals.
func (r Reason) ResumeRefusal() bool { return strings.HasPrefix(string(r), "resume_") }

// Retryable reports whether the same action id may be presented again:
// only ResumeNoStandingVerdict, where a first attempt may still be in front
// of the judge and a new id would pay twice.
func (r Reason) Retryable() bool { return r == ResumeNoStandingVerdict }

// Verdict is the gate's answer to a submitted Action.
type Verdict struct {
	ActionID  string  `json:"action_id"`
	SessionID string  `json:"session_id"`
	Verdict   Outcome `json:"verdict"`
	// RuleIDCited is the rule the decision rests on; required for hold and
	// kill unless Reason explains a fail-closed stop.
	RuleIDCited string `json:"rule_id_cited,omitempty"`
	Rationale   string `json:"rationale,omitempty"`
	// Reason is set when the verdict is not a plain rule decision: a
	// fail-closed stop or a resume refusal.
	Reason Reason `json:"reason,omitempty"`
	// Signals are the evidence the decision names ("bank details changed
	// 3 days ago"), for alerting and the audit trail.
	Signals []string `json:"signals,omitempty"`
	// Shadow is true when the rule set runs in log-only mode: the recorded
	// decision is what would have happened, and the verdict is pass.
	Shadow bool `json:"shadow,omitempty"`
	// Hold is set with a hold verdict: how long the hold may wait.
	Hold *HoldStatus `json:"hold,omitempty"`
	// AcknowledgedAt is set with already_executed: when the earlier run's
	// write was acknowledged.
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
	// Claim is the claim granted with a pass when the submit asked for
	// one (?claim=1), saving a round trip.
	Claim *Claim `json:"claim,omitempty"`
}

// Validate checks the rules a verdict must meet before the SDK acts on it.
// Anything it refuses is treated as a fail-closed protocol fault, never a
// pass.
func (v *Verdict) Validate() error {
	var errs []error
	if v.ActionID == "" {
		errs = append(errs, errors.New("action_id: required"))
	}
	if v.SessionID == "" {
		errs = append(errs, errors.New("session_id: required"))
	}
	if !v.Verdict.Valid() {
		errs = append(errs, fmt.Errorf("verdict: %q is not pass, hold, kill, execution_unconfirmed or already_executed", v.Verdict))
	}
	if v.Reason != "" && !v.Reason.Known() {
		errs = append(errs, fmt.Errorf("reason: unknown code %q", v.Reason))
	}
	switch v.Verdict {
	case Pass:
		if v.Reason != "" {
			errs = append(errs, fmt.Errorf("reason: a pass carries no reason, got %q", v.Reason))
		}
	case Hold, Kill:
		if v.RuleIDCited == "" && v.Reason == "" {
			errs = append(errs, fmt.Errorf("rule_id_cited: required for %s without a reason", v.Verdict))
		}
	}
	if (v.Verdict == AlreadyExecuted) != (v.AcknowledgedAt != nil) {
		errs = append(errs, errors.New("acknowledged_at: set with already_executed and only then"))
	}
	if v.Verdict == Hold && v.Hold == nil {
		errs = append(errs, errors.New("hold: required with a hold verdict"))
	}
	if v.Claim != nil {
		if v.Verdict != Pass {
			errs = append(errs, errors.New("claim: only with a pass"))
		} else if err := v.Claim.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("claim: %w", err))
		}
	}
	if v.Hold != nil {
		if err := v.Hold.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("hold: %w", err))
		}
	}
	return errors.Join(errs...)
}

// DecodeVerdict decodes a verdict strictly: duplicate member names at any
// depth, unknown fields, trailing data and out-of-enum values are refused,
// because the verdict decides whether a write runs.
func DecodeVerdict(data []byte) (Verdict, error) {
	var v Verdict
	if err := decodeStrict(data, &v); err != nil {
		return Verdict{}, fmt.Errorf("gate: decode verdict: %w", err)
	}
	if err := v.Validate(); err != nil {
		return Verdict{}, fmt.Errorf("gate: decode verdict: %w", err)
	}
	return v, nil
}
