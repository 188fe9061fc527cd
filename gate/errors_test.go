package gate

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

func TestErrorMessages(t *testing.T) {
	acked := time.Date(2026, 9, 4, 2, 0, 3, 500, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"rule kill", NewKillError(Verdict{ActionID: "a1", SessionID: "s1", Verdict: Kill, RuleIDCited: "CS-3", Rationale: "fourth refund this week"}),
			"gate: write blocked: fourth refund this week (verdict=kill rule=CS-3 action=a1 session=s1)"},
		{"judge timeout", FailClosed(ReasonJudgeTimeout, "a1", "s1", nil),
			"[fail_closed_judge_timeout] gate: write failed closed (verdict=kill action=a1 session=s1)"},
		{"transport fault wrapped", FailClosed(ReasonServerUnavailable, "a1", "s1", io.ErrUnexpectedEOF),
			"[fail_closed_server_unavailable] gate: write failed closed (verdict=kill action=a1 session=s1): unexpected EOF"},
		{"operator timeout on a hold", NewKillError(Verdict{ActionID: "a1", SessionID: "s1", Verdict: Hold, RuleIDCited: "AP-2", Reason: ReasonOperatorTimeout}),
			"[fail_closed_operator_timeout] gate: write failed closed (verdict=hold rule=AP-2 action=a1 session=s1)"},
		{"restart past grace", FailClosed(ReasonRestartPastGrace, "a1", "s1", nil),
			"[fail_closed_restart_past_grace] gate: write failed closed (verdict=kill action=a1 session=s1)"},
		{"operator deny", NewKillError(Verdict{ActionID: "a1", SessionID: "s1", Verdict: Hold, RuleIDCited: "AP-2", Rationale: "not this vendor", Reason: ReasonOperatorDenied}),
			"[operator_denied] gate: write denied by an operator: not this vendor (verdict=hold rule=AP-2 action=a1 session=s1)"},
		{"resume refusal", NewKillError(Verdict{ActionID: "po-1", SessionID: "n1", Verdict: Kill, Reason: ResumeFingerprintMismatch}),
			"[resume_fingerprint_mismatch] gate: write refused on resume (verdict=kill action=po-1 session=n1)"},
		{"execution unconfirmed", NewKillError(Verdict{ActionID: "po-1", SessionID: "n1", Verdict: ExecutionUnconfirmed}),
			"gate: write unconfirmed: an earlier claim was never acknowledged; an operator must settle it (verdict=execution_unconfirmed action=po-1 session=n1)"},
		{"paused from a verdict", NewPausedError(Verdict{ActionID: "po-1", SessionID: "n1", Verdict: Hold, RuleIDCited: "AP-2", Rationale: "new vendor"}),
			"gate: write paused for an operator: new vendor (verdict=hold rule=AP-2 action=po-1 session=n1)"},
		{"paused", &PausedError{SessionID: "n1", ActionID: "po-1", RuleIDCited: "AP-2", Rationale: "new vendor"},
			"gate: write paused for an operator: new vendor (verdict=hold rule=AP-2 action=po-1 session=n1)"},
		{"already executed, time in UTC", &AlreadyExecutedError{SessionID: "n1", ActionID: "po-1", AcknowledgedAt: acked},
			"gate: action po-1 already executed, acknowledged at 2026-09-04T00:00:03.0000005Z (session n1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestErrorsAs(t *testing.T) {
	kill := FailClosed(ReasonJudgeError, "a", "s", io.EOF)
	wrapped := fmt.Errorf("issue_refund: %w", kill)

	var k *KillError
	if !errors.As(wrapped, &k) || k.Reason != ReasonJudgeError || !k.FailedClosed() {
		t.Fatalf("errors.As(KillError) = %v, %+v", errors.As(wrapped, &k), k)
	}
	if !errors.Is(wrapped, io.EOF) {
		t.Fatal("the fault is not reachable through Unwrap")
	}
	var p *PausedError
	if errors.As(wrapped, &p) {
		t.Fatal("a kill matched PausedError")
	}

	paused := fmt.Errorf("stage_po: %w", &PausedError{ActionID: "po-1"})
	if !errors.As(paused, &p) || p.ActionID != "po-1" {
		t.Fatal("PausedError not found")
	}
	if errors.As(paused, &k) {
		t.Fatal("a pause matched KillError: a batch could not tell deferred from refused")
	}

	done := fmt.Errorf("stage_po: %w", &AlreadyExecutedError{ActionID: "po-1", AcknowledgedAt: time.Unix(1, 0)})
	var ae *AlreadyExecutedError
	if !errors.As(done, &ae) || !ae.AcknowledgedAt.Equal(time.Unix(1, 0)) {
		t.Fatal("AlreadyExecutedError not found")
	}
}

func TestReasons(t *testing.T) {
	failClosed := []Reason{ReasonConfig, ReasonJudgeError, ReasonJudgeTimeout, ReasonJudgeMalformed, ReasonJudgeRefused,
		ReasonOperatorTimeout, ReasonRestartPastGrace, ReasonRulesUnavailable, ReasonRuleError, ReasonContextBuilder,
		ReasonServerUnavailable, ReasonProtocol, ReasonStore}
	resume := []Reason{ResumeFingerprintMismatch, ResumeCommitmentUnversioned, ResumeCommitmentVersionChanged, ResumeNoStandingVerdict}
	for _, r := range failClosed {
		if !r.Known() || !r.FailClosed() || r.ResumeRefusal() || r.Retryable() {
			t.Errorf("%s: known=%v failClosed=%v resume=%v retry=%v", r, r.Known(), r.FailClosed(), r.ResumeRefusal(), r.Retryable())
		}
	}
	for _, r := range resume {
		if !r.Known() || r.FailClosed() || !r.ResumeRefusal() || r.Retryable() != (r == ResumeNoStandingVerdict) {
			t.Errorf("%s: known=%v failClosed=%v resume=%v retry=%v", r, r.Known(), r.FailClosed(), r.ResumeRefusal(), r.Retryable())
		}
	}
	if len(knownReasons) != len(failClosed)+len(resume)+1 {
		t.Fatalf("knownReasons has %d codes; this test lists %d", len(knownReasons), len(failClosed)+len(resume)+1)
	}
	if Reason("fail_closed_nope").Known() || ReasonOperatorDenied.FailClosed() {
		t.Fatal("unknown code known, or a denial counted as fail-closed")
	}
}
