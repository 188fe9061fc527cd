package gate

import (
	"fmt"
	"strings"
	"time"
)

// KillError is every way a write can be stopped: blocked by a rule, denied
// by an operator, refused on resume, or failed closed. Agent code that
// catches this one error type has covered all of them (the Python gate
// SDK's NovarchKillError). A write that returned a KillError never ran.
type KillError struct {
	// Verdict is kill for a block, a fail-closed stop, a resume refusal
	// and a hold that an operator denied or that expired (the hold's final
	// verdict, as the gate records it; RuleIDCited is still the rule that
	// held it), and execution_unconfirmed when an earlier claim was never
	// acknowledged.
	Verdict     Outcome
	RuleIDCited string
	Rationale   string
	ActionID    string
	SessionID   string
	// Reason is empty for a plain rule decision; otherwise a fail_closed_*
	// code, a resume_* refusal or operator_denied.
	Reason Reason
	// Err is the underlying fault of a fail-closed stop, if any.
	Err error
}

// Error renders "[reason] gate: write blocked: …" with the bracketed
// prefix the Python gate SDK documents for fail-closed stops.
func (e *KillError) Error() string {
	var b strings.Builder
	if e.Reason != "" {
		fmt.Fprintf(&b, "[%s] ", e.Reason)
	}
	b.WriteString("gate: write ")
	switch {
	case e.Verdict == ExecutionUnconfirmed:
		b.WriteString("unconfirmed: an earlier claim was never acknowledged; an operator must settle it")
	case e.Reason.ResumeRefusal():
		b.WriteString("refused on resume")
	case e.Reason == ReasonOperatorDenied:
		b.WriteString("denied by an operator")
	case e.Reason.FailClosed():
		b.WriteString("failed closed")
	default:
		b.WriteString("blocked")
	}
	if e.Rationale != "" {
		b.WriteString(": ")
		b.WriteString(e.Rationale)
	}
	writeIDs(&b, e.Verdict, e.RuleIDCited, e.ActionID, e.SessionID)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying fault.
func (e *KillError) Unwrap() error { return e.Err }

// FailedClosed reports whether the stop came from an uncertainty rather
// than a decision.
func (e *KillError) FailedClosed() bool { return e.Reason.FailClosed() }

// NewKillError returns the error for a verdict that stops a write (kill,
// execution_unconfirmed, or a hold that ended without approval), carrying
// its rule, rationale, ids and reason.
func NewKillError(v Verdict) *KillError {
	return &KillError{
		Verdict: v.Verdict, RuleIDCited: v.RuleIDCited, Rationale: v.Rationale,
		ActionID: v.ActionID, SessionID: v.SessionID, Reason: v.Reason,
	}
}

// FailClosed returns a kill error for an uncertainty: reason must be a
// fail_closed_* code, and err (which may be nil) is the fault. err's text
// becomes part of the message, so it must not carry secrets.
func FailClosed(reason Reason, actionID, sessionID string, err error) *KillError {
	return &KillError{Verdict: Kill, Reason: reason, ActionID: actionID, SessionID: sessionID, Err: err}
}

// configError is the [fail_closed_config] refusal, raised before any request.
func configError(sessionID, actionID, rationale string) *KillError {
	return &KillError{Verdict: Kill, Reason: ReasonConfig, SessionID: sessionID, ActionID: actionID, Rationale: rationale}
}

// PausedError reports a held write in a session that declared it can park
// (Session.Resumable): a person is deciding, and a later run resumes the
// session to pick the answer up. It is distinct from KillError so a batch
// can tell "deferred" from "refused". The write has not run.
type PausedError struct {
	SessionID   string
	ActionID    string
	RuleIDCited string
	Rationale   string
	// Hold is the hold as the gate reported it, when it did.
	Hold *HoldStatus
}

// NewPausedError returns the error for a hold verdict in a session that
// parks.
func NewPausedError(v Verdict) *PausedError {
	return &PausedError{SessionID: v.SessionID, ActionID: v.ActionID, RuleIDCited: v.RuleIDCited, Rationale: v.Rationale, Hold: v.Hold}
}

func (e *PausedError) Error() string {
	var b strings.Builder
	b.WriteString("gate: write paused for an operator")
	if e.Rationale != "" {
		b.WriteString(": ")
		b.WriteString(e.Rationale)
	}
	writeIDs(&b, Hold, e.RuleIDCited, e.ActionID, e.SessionID)
	return b.String()
}

// AlreadyExecutedError reports a resume that presented a work item whose
// write has already been executed and acknowledged; the write was not run
// again.
type AlreadyExecutedError struct {
	SessionID      string
	ActionID       string
	AcknowledgedAt time.Time
}

func (e *AlreadyExecutedError) Error() string {
	return fmt.Sprintf("gate: action %s already executed, acknowledged at %s (session %s)",
		e.ActionID, e.AcknowledgedAt.UTC().Format(time.RFC3339Nano), e.SessionID)
}

func writeIDs(b *strings.Builder, v Outcome, rule, action, session string) {
	b.WriteString(" (")
	fmt.Fprintf(b, "verdict=%s", v)
	if rule != "" {
		fmt.Fprintf(b, " rule=%s", rule)
	}
	if action != "" {
		fmt.Fprintf(b, " action=%s", action)
	}
	if session != "" {
		fmt.Fprintf(b, " session=%s", session)
	}
	b.WriteString(")")
}
