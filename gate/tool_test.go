package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/resilience"
)

type refund struct {
	Customer string  `json:"customer"`
	Amount   float64 `json:"amount"`
	PO       string  `json:"po,omitempty"`
}

func refundContext(a refund) (gate.Context, error) {
	return gate.GenericContext{RecordID: a.Customer, Amount: &a.Amount}, nil
}

var fresh = gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot"}

var resumed = gate.Session{TenantID: "hallway", TeamID: "field-ops", AgentID: "po-agent",
	ID: "nightly-2026-09-03", Attach: true, Resume: true, Resumable: true, MaxHold: gate.AdoptDeploymentWindow}

// want describes how a gated write must end.
type want struct {
	ran    bool        // fn ran (exactly once)
	reason gate.Reason // a *KillError with this reason (with kill set)
	kill   bool
	// verdict of the KillError, when set.
	verdict  gate.Outcome
	paused   bool // a *PausedError
	executed bool // an *AlreadyExecutedError
	fencing  uint64
	end      gate.SessionEndState // how the session ended ("" : completed)
}

func TestWriteVerdictPaths(t *testing.T) {
	ackT := t0.Add(time.Hour)
	kill := func(rule string, reason gate.Reason) handler {
		return verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: rule, Rationale: "scripted", Reason: reason})
	}
	held := verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Rationale: "bank details changed", Hold: pending(60)})
	approved := verdict(gate.Verdict{Verdict: gate.Pass, Hold: &gate.HoldStatus{State: gate.HoldApproved, WindowS: 60, DecidedBy: "op"}})
	tests := []struct {
		name    string
		session gate.Session
		routes  map[string]handler
		want    want
	}{
		{"pass with a granted claim", fresh, map[string]handler{
			"POST /actions": passClaimed(7), "POST /acks": ackOK,
		}, want{ran: true, fencing: 7}},
		{"shadow pass", fresh, map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass, Shadow: true, Claim: granted(3)}), "POST /acks": ackOK,
		}, want{ran: true, fencing: 3}},
		{"pass without a claim is claimed", fresh, map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass}),
			"POST /claims":  claimAnswer(*granted(11)), "POST /acks": ackOK,
		}, want{ran: true, fencing: 11}},
		{"hold then approve", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": approved,
			"POST /claims": claimAnswer(*granted(5)), "POST /acks": ackOK,
		}, want{ran: true, fencing: 5}},
		{"hold, still pending, then approve", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": seq(held, held, approved),
			"POST /claims": claimAnswer(*granted(6)), "POST /acks": ackOK,
		}, want{ran: true, fencing: 6}},
		{"hold then deny", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": kill("AP-2", gate.ReasonOperatorDenied),
		}, want{kill: true, reason: gate.ReasonOperatorDenied, verdict: gate.Kill}},
		{"hold then expire", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": kill("AP-2", gate.ReasonOperatorTimeout),
		}, want{kill: true, reason: gate.ReasonOperatorTimeout}},
		{"hold past the restart grace", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": kill("", gate.ReasonRestartPastGrace),
		}, want{kill: true, reason: gate.ReasonRestartPastGrace}},
		{"hold reported denied", fresh, map[string]handler{
			"POST /actions": held,
			"POST /actions/wait": verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2",
				Hold: &gate.HoldStatus{State: gate.HoldDenied, WindowS: 60}}),
		}, want{kill: true, reason: gate.ReasonOperatorDenied, verdict: gate.Hold}},
		{"hold that the client times out (the server never answers)", fresh, map[string]handler{
			"POST /actions":      verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(0.2)}),
			"POST /actions/wait": hang,
		}, want{kill: true, reason: gate.ReasonOperatorTimeout}},
		{"hold that the client times out (the server keeps it pending)", fresh, map[string]handler{
			"POST /actions":      verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(0.2)}),
			"POST /actions/wait": verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(0.2)}),
		}, want{kill: true, reason: gate.ReasonOperatorTimeout}},
		{"approved but the claim went to another run", fresh, map[string]handler{
			"POST /actions": held, "POST /actions/wait": approved,
			"POST /claims": claimAnswer(gate.Claim{Status: gate.ClaimExecutionUnconfirmed}),
		}, want{kill: true, verdict: gate.ExecutionUnconfirmed}},
		{"kill by a rule", fresh, map[string]handler{
			"POST /actions": kill("CS-4", ""),
		}, want{kill: true, verdict: gate.Kill}},
		{"kill failed closed by the judge", fresh, map[string]handler{
			"POST /actions": kill("", gate.ReasonJudgeTimeout),
		}, want{kill: true, reason: gate.ReasonJudgeTimeout}},
		{"park: a resumable session with an indefinite window", with(resumed, func(s *gate.Session) { s.Attach, s.Resume = false, false }), map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: &gate.HoldStatus{State: gate.HoldPending, Indefinite: true}}),
		}, want{paused: true}},
		{"a resumable session with a finite window waits", with(resumed, func(s *gate.Session) { s.Attach, s.Resume = false, false }), map[string]handler{
			"POST /actions": held, "POST /actions/wait": approved,
			"POST /claims": claimAnswer(*granted(9)), "POST /acks": ackOK,
		}, want{ran: true, fencing: 9}},
		{"resume: the standing pass, claimed", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  passClaimed(12), "POST /acks": ackOK,
		}, want{ran: true, fencing: 12}},
		{"resume: approved overnight, claimed separately", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  approved, "POST /claims": claimAnswer(*granted(13)), "POST /acks": ackOK,
		}, want{ran: true, fencing: 13}},
		{"resume: still pending parks again", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: &gate.HoldStatus{State: gate.HoldPending, Indefinite: true}}),
		}, want{paused: true}},
		{"resume: already executed", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.AlreadyExecuted, AcknowledgedAt: &ackT}),
		}, want{executed: true}},
		{"resume: the claim finds it executed", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimAlreadyExecuted, AcknowledgedAt: &ackT}}),
		}, want{executed: true}},
		{"resume: execution unconfirmed", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.ExecutionUnconfirmed}),
		}, want{kill: true, verdict: gate.ExecutionUnconfirmed}},
		{"resume: the claim finds it unconfirmed", resumed, map[string]handler{
			"POST /sessions": sessionOK(0, true),
			"POST /actions":  verdict(gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimExecutionUnconfirmed}}),
		}, want{kill: true, verdict: gate.ExecutionUnconfirmed}},
		{"resume: fingerprint mismatch", resumed, map[string]handler{
			"POST /actions": kill("", gate.ResumeFingerprintMismatch),
		}, want{kill: true, reason: gate.ResumeFingerprintMismatch}},
		{"resume: commitment unversioned", resumed, map[string]handler{
			"POST /actions": kill("", gate.ResumeCommitmentUnversioned),
		}, want{kill: true, reason: gate.ResumeCommitmentUnversioned}},
		{"resume: commitment version changed", resumed, map[string]handler{
			"POST /actions": kill("", gate.ResumeCommitmentVersionChanged),
		}, want{kill: true, reason: gate.ResumeCommitmentVersionChanged}},
		{"resume: no standing verdict parks the session", resumed, map[string]handler{
			"POST /actions": kill("", gate.ResumeNoStandingVerdict),
		}, want{kill: true, reason: gate.ResumeNoStandingVerdict, end: gate.SessionSuspended}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.routes)
			c, logs := f.client(nil)
			var ran atomic.Int32
			write := gate.Write(c, gate.WriteSpec[refund]{
				ActionType: "issue_refund", Context: refundContext,
				ActionID: func(a refund) (string, error) { return a.PO, nil },
			}, func(ctx context.Context, a refund) (string, error) {
				ran.Add(1)
				return "refunded " + a.Customer, nil
			})
			var res string
			var werr error
			err := c.Run(context.Background(), tt.session, func(ctx context.Context) error {
				res, werr = write(ctx, refund{Customer: "cust-4821", Amount: 240, PO: "po-1234"})
				return nil
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			check(t, tt.want, werr, ran.Load(), f, logs)
			if tt.want.paused && f.count("POST /actions/wait") != 0 {
				t.Fatal("a session that parks waited on the hold")
			}
			if tt.want.ran && res != "refunded cust-4821" {
				t.Fatalf("result %q", res)
			}
			var end gate.SessionEnd
			json.Unmarshal(f.last("POST /sessions/end"), &end)
			wantEnd := tt.want.end
			if wantEnd == "" {
				wantEnd = gate.SessionCompleted
			}
			if end.State != wantEnd {
				t.Fatalf("session ended %q, want %q", end.State, wantEnd)
			}
			// Every submit asks for the claim in the same step, and a
			// resumed session's write presents the caller's action id.
			for _, cl := range f.all() {
				if cl.method+" "+cl.path == "POST /actions" {
					a := action(t, cl.body)
					if cl.query != "claim=1" || a.Resume != tt.session.Resume || a.ActionID != "po-1234" {
						t.Fatalf("submit ?%s resume=%v id=%q", cl.query, a.Resume, a.ActionID)
					}
				}
			}
		})
	}
}

// check asserts how a write ended: fn ran exactly when a claim was
// granted, the ack carried the claim's fencing token, the error is the
// right kind with the right reason, and the token shows nowhere.
func check(t *testing.T, w want, err error, ran int32, f *fakeGate, logs *logBuf) {
	t.Helper()
	if w.ran != (ran == 1) || ran > 1 {
		t.Fatalf("fn ran %d times, want ran=%v (err %v)", ran, w.ran, err)
	}
	granted := false
	for _, cl := range f.all() {
		if cl.method+" "+cl.path == "POST /acks" {
			var ack gate.AckRequest
			if jerr := json.Unmarshal(cl.body, &ack); jerr != nil || ack.FencingToken != w.fencing || ack.ExecutedAt.IsZero() {
				t.Fatalf("ack %s, want fencing token %d", cl.body, w.fencing)
			}
			granted = true
		}
	}
	if granted != w.ran {
		t.Fatalf("acks sent: %v, fn ran: %v", granted, w.ran)
	}
	var k *gate.KillError
	var p *gate.PausedError
	var x *gate.AlreadyExecutedError
	switch {
	case w.kill:
		if !errors.As(err, &k) || k.Reason != w.reason {
			t.Fatalf("err = %v, want a KillError with reason %q", err, w.reason)
		}
		if w.verdict != "" && k.Verdict != w.verdict {
			t.Fatalf("verdict %q, want %q", k.Verdict, w.verdict)
		}
		if k.ActionID == "" || k.SessionID == "" {
			t.Fatalf("KillError without ids: %#v", k)
		}
		if w.reason != "" && !strings.HasPrefix(err.Error(), "["+string(w.reason)+"] ") {
			t.Fatalf("message %q lacks the reason prefix", err)
		}
	case w.paused:
		if !errors.As(err, &p) || p.ActionID != "po-1234" || p.RuleIDCited != "AP-2" {
			t.Fatalf("err = %v, want a PausedError", err)
		}
	case w.executed:
		if !errors.As(err, &x) || !x.AcknowledgedAt.Equal(t0.Add(time.Hour)) || x.ActionID != "po-1234" {
			t.Fatalf("err = %v, want an AlreadyExecutedError acknowledged at %v", err, t0.Add(time.Hour))
		}
	default:
		if err != nil {
			t.Fatalf("unexpected %v", err)
		}
	}
	if err != nil {
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, testToken) {
				t.Fatalf("the token leaked into an error: %s", s)
			}
		}
	}
	if strings.Contains(logs.String(), testToken) {
		t.Fatalf("the token leaked into the log")
	}
}

func with(s gate.Session, f func(*gate.Session)) gate.Session { f(&s); return s }

// Every way the gate can fail to give a usable answer fails closed with
// its reason, and the write never runs.
func TestWriteFailsClosed(t *testing.T) {
	big := `{"action_id":"x","pad":"` + strings.Repeat("a", 17<<20) + `"}`
	held := verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(60)})
	tests := []struct {
		name   string
		routes map[string]handler
		opts   *gate.ClientOptions
		reason gate.Reason
	}{
		{"malformed JSON", map[string]handler{"POST /actions": raw(200, `{"verdict":"pass",`)}, nil, gate.ReasonProtocol},
		{"duplicate verdict key", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-1234","session_id":"s","verdict":"kill","rule_id_cited":"R","verdict":"pass"}`)}, nil, gate.ReasonProtocol},
		{"case-folded duplicate", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-1234","session_id":"s","verdict":"kill","rule_id_cited":"R","Verdict":"pass"}`)}, nil, gate.ReasonProtocol},
		{"unknown field", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-1234","session_id":"s","verdict":"pass","approved":true}`)}, nil, gate.ReasonProtocol},
		{"unknown verdict", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-1234","session_id":"s","verdict":"allow"}`)}, nil, gate.ReasonProtocol},
		{"trailing data", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-1234","session_id":"s","verdict":"pass"} {"verdict":"pass"}`)}, nil, gate.ReasonProtocol},
		{"answer over the document limit", map[string]handler{"POST /actions": raw(200, big[:5<<20]+`"}`)}, nil, gate.ReasonProtocol},
		{"answer over the read limit", map[string]handler{"POST /actions": raw(200, big)}, nil, gate.ReasonProtocol},
		{"another action's verdict", map[string]handler{"POST /actions": raw(200,
			`{"action_id":"po-9999","session_id":"other","verdict":"pass","claim":{"session_id":"other","action_id":"po-9999","status":"granted","fencing_token":1,"claimed_at":"2026-09-03T02:00:00Z"}}`)}, nil, gate.ReasonProtocol},
		{"a verdict for another session", map[string]handler{"POST /actions": skewed(passClaimed(1), "other", "session_id")}, nil, gate.ReasonProtocol},
		{"a verdict for another action", map[string]handler{"POST /actions": skewed(passClaimed(1), "po-9999", "action_id")}, nil, gate.ReasonProtocol},
		{"a claim in the verdict for another session", map[string]handler{"POST /actions": skewed(passClaimed(1), "other", "claim", "session_id")}, nil, gate.ReasonProtocol},
		{"a claim in the verdict for another action", map[string]handler{"POST /actions": skewed(passClaimed(1), "po-9999", "claim", "action_id")}, nil, gate.ReasonProtocol},
		{"the claim answers another session", map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass}), "POST /claims": skewed(claimAnswer(*granted(1)), "other", "session_id"),
		}, nil, gate.ReasonProtocol},
		{"the claim answers another action", map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass}), "POST /claims": skewed(claimAnswer(*granted(1)), "po-9999", "action_id"),
		}, nil, gate.ReasonProtocol},
		{"the wait answers another session", map[string]handler{
			"POST /actions": held, "POST /actions/wait": skewed(verdict(gate.Verdict{Verdict: gate.Pass, Hold: &gate.HoldStatus{State: gate.HoldApproved, WindowS: 60}}), "other", "session_id"),
			"POST /claims": claimAnswer(*granted(1)),
		}, nil, gate.ReasonProtocol},
		{"the wait answers another action", map[string]handler{
			"POST /actions": held, "POST /actions/wait": skewed(verdict(gate.Verdict{Verdict: gate.Pass, Hold: &gate.HoldStatus{State: gate.HoldApproved, WindowS: 60}}), "po-9999", "action_id"),
			"POST /claims": claimAnswer(*granted(1)),
		}, nil, gate.ReasonProtocol},
		{"a granted claim without a fencing token", map[string]handler{"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass,
			Claim: &gate.Claim{Status: gate.ClaimGranted, ClaimedAt: &t0}})}, nil, gate.ReasonProtocol},
		{"empty 200", map[string]handler{"POST /actions": raw(200, ``)}, nil, gate.ReasonProtocol},
		{"unexpected 204", map[string]handler{"POST /actions": raw(204, ``)}, nil, gate.ReasonProtocol},
		{"429 every time", map[string]handler{"POST /actions": problem(429, "")}, nil, gate.ReasonServerUnavailable},
		{"503 every time", map[string]handler{"POST /actions": problem(503, "")}, nil, gate.ReasonServerUnavailable},
		{"500", map[string]handler{"POST /actions": problem(500, "")}, nil, gate.ReasonServerUnavailable},
		{"502 with an HTML page", map[string]handler{"POST /actions": raw(502, `<html>bad gateway</html>`)}, nil, gate.ReasonServerUnavailable},
		{"timeout", map[string]handler{"POST /actions": hang}, &gate.ClientOptions{HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}}, gate.ReasonServerUnavailable},
		{"401", map[string]handler{"POST /actions": problem(401, "")}, nil, gate.ReasonConfig},
		{"403", map[string]handler{"POST /actions": problem(403, "")}, nil, gate.ReasonConfig},
		{"404", map[string]handler{"POST /actions": problem(404, "")}, nil, gate.ReasonProtocol},
		{"a problem with the gate's reason", map[string]handler{"POST /actions": problem(503, gate.ReasonRulesUnavailable)}, nil, gate.ReasonRulesUnavailable},
		{"a problem with an unknown reason", map[string]handler{"POST /actions": problem(422, "fail_closed_whatever")}, nil, gate.ReasonProtocol},
		{"the claim answer is malformed", map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass}), "POST /claims": raw(200, `{"status":"granted"}`),
		}, nil, gate.ReasonProtocol},
		{"the claim fails", map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Pass}), "POST /claims": problem(503, ""),
		}, nil, gate.ReasonServerUnavailable},
		{"the wait answer has a duplicate key", map[string]handler{
			"POST /actions": held, "POST /actions/wait": raw(200, `{"action_id":"po-1234","session_id":"S","verdict":"kill","rule_id_cited":"R","verdict":"pass"}`),
		}, nil, gate.ReasonProtocol},
		{"the wait keeps failing", map[string]handler{"POST /actions": held, "POST /actions/wait": problem(503, "")}, nil, gate.ReasonServerUnavailable},
		{"the wait is refused", map[string]handler{"POST /actions": held, "POST /actions/wait": problem(400, "")}, nil, gate.ReasonProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.routes)
			c, logs := f.client(tt.opts)
			var ran atomic.Int32
			write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext,
				ActionID: func(a refund) (string, error) { return a.PO, nil }},
				func(ctx context.Context, a refund) (string, error) { ran.Add(1); return "", nil })
			var werr error
			if err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
				_, werr = write(ctx, refund{Customer: "c1", Amount: 10, PO: "po-1234"})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			check(t, want{kill: true, reason: tt.reason}, werr, ran.Load(), f, logs)
		})
	}
}

// Transient faults are retried before failing closed, and a submit
// retried after one is answered normally.
func TestWriteRetriesTransientFaults(t *testing.T) {
	f := newFake(t, map[string]handler{
		"POST /actions": seq(problem(503, ""), raw(502, ""), passClaimed(4)),
		"POST /acks":    seq(problem(429, ""), ackOK),
	})
	c, logs := f.client(nil)
	var ran atomic.Int32
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
		func(ctx context.Context, a refund) (int, error) { ran.Add(1); return 1, nil })
	var werr error
	c.Run(context.Background(), fresh, func(ctx context.Context) error { _, werr = write(ctx, refund{Customer: "c", Amount: 1}); return nil })
	check(t, want{ran: true, fencing: 4}, werr, ran.Load(), f, logs)
	if n := f.count("POST /actions"); n != 3 {
		t.Fatalf("%d submits, want 3", n)
	}
	// The retries presented the same action id: the gate keys on it.
	ids := map[string]bool{}
	for _, cl := range f.all() {
		if cl.path == "/actions" {
			ids[action(t, cl.body).ActionID] = true
		}
	}
	if len(ids) != 1 {
		t.Fatalf("retried submits carried %d action ids", len(ids))
	}
}

// An acknowledgement that fails for good does not undo the write: the
// result comes back, and the failure is logged for operators.
func TestWriteAckFailureReturnsResult(t *testing.T) {
	for _, ack := range []handler{problem(500, ""), problem(409, ""), raw(200, `{"acknowledged_at":"x"}`)} {
		f := newFake(t, map[string]handler{"POST /actions": passClaimed(8), "POST /acks": ack})
		c, logs := f.client(nil)
		write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
			func(ctx context.Context, a refund) (string, error) { return "done", nil })
		var res string
		var werr error
		c.Run(context.Background(), fresh, func(ctx context.Context) error { res, werr = write(ctx, refund{Customer: "c", Amount: 1}); return nil })
		if werr != nil || res != "done" {
			t.Fatalf("got %q, %v; want the result", res, werr)
		}
		if !strings.Contains(logs.String(), "execution_unconfirmed") || strings.Contains(logs.String(), testToken) {
			t.Fatalf("log: %s", logs)
		}
	}
}

// A write whose function fails is not acknowledged: whether it landed is
// for an operator to settle.
func TestWriteFnErrorIsNotAcknowledged(t *testing.T) {
	f := newFake(t, map[string]handler{"POST /actions": passClaimed(8), "POST /acks": ackOK})
	c, _ := f.client(nil)
	boom := errors.New("downstream refused")
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) { return "", boom })
	var werr error
	c.Run(context.Background(), fresh, func(ctx context.Context) error { _, werr = write(ctx, refund{Customer: "c", Amount: 1}); return nil })
	if !errors.Is(werr, boom) || f.count("POST /acks") != 0 {
		t.Fatalf("err %v, acks %d", werr, f.count("POST /acks"))
	}
}

// Configuration the Python gate SDK refuses before any request is refused with
// [fail_closed_config] and nothing is sent.
func TestConfigRefusedBeforeAnyRequest(t *testing.T) {
	f := newFake(t, nil)
	c, _ := f.client(nil)
	noop := func(ctx context.Context, a refund) (string, error) { t.Error("the write ran"); return "", nil }
	spec := gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext}
	tests := []struct {
		name string
		run  func() error
	}{
		{"resume without attach", func() error {
			return c.Run(context.Background(), with(resumed, func(s *gate.Session) { s.Attach = false }), func(context.Context) error {
				t.Error("fn ran")
				return nil
			})
		}},
		{"attach without a session id", func() error {
			return c.Run(context.Background(), gate.Session{TenantID: "a", TeamID: "b", AgentID: "c", Attach: true}, func(context.Context) error { return nil })
		}},
		{"a session without a tenant", func() error {
			return c.Run(context.Background(), gate.Session{TeamID: "b", AgentID: "c"}, func(context.Context) error { return nil })
		}},
		{"a write outside any session", func() error {
			_, err := gate.Write(c, spec, noop)(context.Background(), refund{Customer: "c", Amount: 1})
			return err
		}},
		{"a write in a session never opened on the gate", func() error {
			_, err := gate.Write(c, spec, noop)(gate.WithSession(context.Background(), fresh), refund{Customer: "c", Amount: 1})
			return err
		}},
		{"a write with no context builder", func() error {
			return writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x"}, noop))
		}},
		{"a write with no action type", func() error {
			return writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{Context: refundContext}, noop))
		}},
		{"a resumed session's write without an action-id builder", func() error {
			return writeIn(c, resumed, gate.Write(c, spec, noop))
		}},
		{"a resumed session's write whose builder gives no id", func() error {
			return writeIn(c, resumed, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext,
				ActionID: func(refund) (string, error) { return "", nil }}, noop))
		}},
		{"an action over the gate's document limit", func() error {
			return c.Run(context.Background(), fresh, func(ctx context.Context) error {
				gate.SetReasoning(ctx, strings.Repeat("because ", gate.MaxDocumentSize/8+1))
				_, err := gate.Write(c, spec, noop)(ctx, refund{Customer: "c", Amount: 1})
				return err
			})
		}},
		{"Suspend in a session that cannot park", func() error {
			return c.Run(context.Background(), fresh, func(ctx context.Context) error { return gate.Suspend(ctx) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := countActions(f)
			err := tt.run()
			var k *gate.KillError
			if !errors.As(err, &k) || k.Reason != gate.ReasonConfig {
				t.Fatalf("err = %v, want [fail_closed_config]", err)
			}
			if countActions(f) != before {
				t.Fatal("a request about the action went out")
			}
		})
	}
	// The session refusals sent nothing at all.
	if n := f.count("POST /sessions"); n != 6 {
		t.Fatalf("%d session opens, want the 6 of the cases that validly open one", n)
	}
	if _, err := gate.NewClient(gate.Config{URL: "ftp://x"}, nil); err == nil {
		t.Fatal("NewClient accepted an unusable config")
	}
}

func countActions(f *fakeGate) int {
	n := 0
	for _, cl := range f.all() {
		if strings.HasPrefix(cl.path, "/actions") || cl.path == "/claims" || cl.path == "/acks" {
			n++
		}
	}
	return n
}

func writeIn(c *gate.Client, s gate.Session, w func(context.Context, refund) (string, error)) error {
	var werr error
	if err := c.Run(context.Background(), s, func(ctx context.Context) error {
		_, werr = w(ctx, refund{Customer: "c", Amount: 1})
		return nil
	}); err != nil {
		return err
	}
	return werr
}

// A failing context builder stops the write before the gate is asked.
func TestContextBuilderFailsClosed(t *testing.T) {
	f := newFake(t, nil)
	c, _ := f.client(nil)
	noop := func(ctx context.Context, a refund) (string, error) { t.Error("the write ran"); return "", nil }
	for _, b := range []func(refund) (gate.Context, error){
		func(refund) (gate.Context, error) { return nil, errors.New("CRM down") },
		func(refund) (gate.Context, error) { return nil, nil },
		func(refund) (gate.Context, error) { return gate.GenericContext{}, nil }, // no record id
	} {
		err := writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: b}, noop))
		var k *gate.KillError
		if !errors.As(err, &k) || k.Reason != gate.ReasonContextBuilder {
			t.Fatalf("err = %v", err)
		}
	}
	if countActions(f) != 0 {
		t.Fatal("the gate was asked")
	}
}

// A write waiting on a hold wakes as soon as the long-poll answers: the
// approval lands in the middle of the second poll, and that poll's
// answer runs the write (no further poll, no pause in between).
func TestWaitWakesOnApproval(t *testing.T) {
	decided := make(chan struct{})
	secondPoll := make(chan struct{})
	var approved atomic.Bool
	f := newFake(t, map[string]handler{
		"POST /actions": verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(60)}),
		"POST /actions/wait": func(n int, r *http.Request, body []byte) reply {
			var req gate.WaitRequest
			json.Unmarshal(body, &req)
			if req.TimeoutS <= 0 {
				t.Errorf("wait without a timeout: %s", body)
			}
			if n == 2 {
				close(secondPoll)
			}
			select {
			case <-decided:
				return verdict(gate.Verdict{Verdict: gate.Pass, Hold: &gate.HoldStatus{State: gate.HoldApproved, WindowS: 60}})(n, r, body)
			case <-time.After(time.Duration(req.TimeoutS * float64(time.Second))):
				return verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(60)})(n, r, body)
			case <-r.Context().Done():
				return reply{status: http.StatusServiceUnavailable}
			}
		},
		"POST /claims": claimAnswer(*granted(2)), "POST /acks": ackOK,
	})
	// Polls of 300 ms: the first one times out pending.
	c, _ := f.client(&gate.ClientOptions{WaitPoll: 300 * time.Millisecond})
	var ranBeforeApproval, ran atomic.Int32
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) {
			ran.Add(1)
			if !approved.Load() {
				ranBeforeApproval.Add(1)
			}
			return "", nil
		})
	go func() {
		<-secondPoll
		approved.Store(true)
		close(decided)
	}()
	if err := writeIn(c, fresh, write); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 || ranBeforeApproval.Load() != 0 {
		t.Fatalf("the write ran %d times, %d before the approval", ran.Load(), ranBeforeApproval.Load())
	}
	if n := f.count("POST /actions/wait"); n != 2 {
		t.Fatalf("%d polls, want 2: the approval landed mid-poll in the second", n)
	}
}

// The caller's context ending mid-wait stops the write, fail closed.
func TestWaitCancelled(t *testing.T) {
	f := newFake(t, map[string]handler{
		"POST /actions":      verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(60)}),
		"POST /actions/wait": hang,
	})
	c, _ := f.client(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var ran atomic.Int32
	var werr error
	c.Run(ctx, fresh, func(ctx context.Context) error {
		_, werr = gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
			func(ctx context.Context, a refund) (string, error) { ran.Add(1); return "", nil })(ctx, refund{Customer: "c", Amount: 1})
		return nil
	})
	var k *gate.KillError
	if !errors.As(werr, &k) || k.Reason != gate.ReasonOperatorTimeout || !errors.Is(werr, context.DeadlineExceeded) || ran.Load() != 0 {
		t.Fatalf("err = %v", werr)
	}
	if k.Rationale != "the caller stopped waiting for an operator" {
		t.Fatalf("rationale %q", k.Rationale)
	}
	// The session was ended although the run's context had ended.
	if f.count("POST /sessions/end") != 1 {
		t.Fatal("the session was not ended")
	}
}

// Holds the client gave up on are not an outage: they must not open the
// breaker shared by the client's calls, or a few slow operators would
// stop every other write.
func TestClientHoldTimeoutsDoNotOpenTheBreaker(t *testing.T) {
	f := newFake(t, map[string]handler{
		"POST /actions": func(n int, r *http.Request, body []byte) reply {
			if a := action(t, body); a.ActionID != "last" {
				return verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(0.05)})(n, r, body)
			}
			return passClaimed(1)(n, r, body)
		},
		"POST /actions/wait": hang,
		"POST /acks":         ackOK,
	})
	c, _ := f.client(&gate.ClientOptions{Retry: &resilience.Policy{Attempts: 3, Base: time.Millisecond, NoJitter: true,
		Breaker: resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 2})}})
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext,
		ActionID: func(a refund) (string, error) { return a.PO, nil }},
		func(ctx context.Context, a refund) (string, error) { return "ran", nil })
	err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
		errs := make(chan error, 4)
		for i := range 4 {
			go func() {
				_, err := write(ctx, refund{Customer: "c", Amount: 1, PO: fmt.Sprint("held-", i)})
				errs <- err
			}()
		}
		for range 4 {
			var k *gate.KillError
			if err := <-errs; !errors.As(err, &k) || k.Reason != gate.ReasonOperatorTimeout {
				t.Errorf("held write: %v", err)
			}
		}
		res, err := write(ctx, refund{Customer: "c", Amount: 1, PO: "last"})
		if err != nil || res != "ran" {
			t.Errorf("the write after the timed-out holds: %q, %v", res, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// skewed answers as h does, with the member at path set to value: an
// answer about another session or action than the one asked about.
func skewed(h handler, value string, path ...string) handler {
	return func(n int, r *http.Request, body []byte) reply {
		rep := h(n, r, body)
		var doc map[string]any
		if err := json.Unmarshal([]byte(rep.body), &doc); err != nil {
			panic(err)
		}
		m := doc
		for _, k := range path[:len(path)-1] {
			m = m[k].(map[string]any)
		}
		m[path[len(path)-1]] = value
		b, err := json.Marshal(doc)
		if err != nil {
			panic(err)
		}
		rep.body = string(b)
		return rep
	}
}

// A hold the client gives up on says why, with the hold's own rationale.
func TestWaitGivesUp(t *testing.T) {
	f := newFake(t, map[string]handler{
		"POST /actions":      verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Rationale: "bank details changed", Hold: pending(0.1)}),
		"POST /actions/wait": hang,
	})
	c, _ := f.client(nil)
	err := writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) { t.Error("the write ran"); return "", nil }))
	var k *gate.KillError
	if !errors.As(err, &k) || k.Reason != gate.ReasonOperatorTimeout || k.Rationale != "no operator decided within the hold window (held: bank details changed)" {
		t.Fatalf("err = %v", err)
	}
}

// A long-poll that fails with a transient fault, or a 5xx without the
// gate's reason, is asked again, waitRounds times at most; a refusal with
// the gate's reason ends the write with it; an answer that comes a little
// after the poll's timeout is still read.
func TestWaitRetries(t *testing.T) {
	approved := verdict(gate.Verdict{Verdict: gate.Pass, Hold: &gate.HoldStatus{State: gate.HoldApproved, WindowS: 60}})
	late := func(n int, r *http.Request, body []byte) reply {
		var req gate.WaitRequest
		json.Unmarshal(body, &req)
		select {
		case <-time.After(time.Duration(req.TimeoutS*float64(time.Second)) + 50*time.Millisecond):
		case <-r.Context().Done():
		}
		return approved(n, r, body)
	}
	for _, tc := range []struct {
		name   string
		wait   handler
		ran    bool
		reason gate.Reason
		polls  int
	}{
		{"a 500, then the approval", seq(problem(500, ""), approved), true, "", 2},
		{"a 503, then the approval", seq(problem(503, ""), approved), true, "", 2},
		{"four 503s, then the approval", seq(problem(503, ""), problem(503, ""), problem(503, ""), problem(503, ""), approved), true, "", 5},
		{"503 every time", problem(503, ""), false, gate.ReasonServerUnavailable, 5},
		{"a 500 with the gate's reason", problem(500, gate.ReasonRulesUnavailable), false, gate.ReasonRulesUnavailable, 1},
		{"a 503 with the gate's reason, every time", problem(503, gate.ReasonRulesUnavailable), false, gate.ReasonRulesUnavailable, 5},
		{"an answer just after the poll's timeout", late, true, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, map[string]handler{
				"POST /actions":      verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(60)}),
				"POST /actions/wait": tc.wait,
				"POST /claims":       claimAnswer(*granted(1)), "POST /acks": ackOK,
			})
			c, _ := f.client(&gate.ClientOptions{WaitPoll: 100 * time.Millisecond,
				Retry: &resilience.Policy{Attempts: 1, Base: time.Microsecond, Max: time.Microsecond, NoJitter: true}})
			var ran atomic.Int32
			err := writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
				func(ctx context.Context, a refund) (string, error) { ran.Add(1); return "", nil }))
			if tc.ran != (ran.Load() == 1) || (tc.ran && err != nil) {
				t.Fatalf("ran %d, err %v", ran.Load(), err)
			}
			var k *gate.KillError
			if !tc.ran && (!errors.As(err, &k) || k.Reason != tc.reason) {
				t.Fatalf("err = %v, want a kill with %s", err, tc.reason)
			}
			if n := f.count("POST /actions/wait"); n != tc.polls {
				t.Fatalf("%d polls, want %d", n, tc.polls)
			}
		})
	}
}

// A gate that answers "still pending" at once is not polled in a busy
// loop: the client pauses between such answers. (However slow the
// machine, it can only poll less often than this bound allows.)
func TestWaitPendingIsNotBusy(t *testing.T) {
	held := verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "AP-2", Hold: pending(1)})
	f := newFake(t, map[string]handler{"POST /actions": held, "POST /actions/wait": held})
	c, _ := f.client(&gate.ClientOptions{WaitPoll: 10 * time.Second})
	err := writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) { t.Error("the write ran"); return "", nil }))
	var k *gate.KillError
	if !errors.As(err, &k) || k.Reason != gate.ReasonOperatorTimeout {
		t.Fatalf("err = %v", err)
	}
	// A 1 s window and 200 ms pauses: six polls at most, and a few spare.
	if n := f.count("POST /actions/wait"); n > 10 {
		t.Fatalf("%d polls within a 1 s hold window: the client spins", n)
	}
}

// The write ran whatever the acknowledgement says, but an answer about
// another action or session is a failed acknowledgement: it is logged
// for the operators who will see the action unconfirmed.
func TestAckAnswerChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		ack  handler
		warn bool
	}{
		{"the action's", ackOK, false},
		{"another action's", skewed(ackOK, "po-9999", "action_id"), true},
		{"another session's", skewed(ackOK, "other", "session_id"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, map[string]handler{"POST /actions": passClaimed(4), "POST /acks": tc.ack})
			c, logs := f.client(nil)
			var ran atomic.Int32
			err := writeIn(c, fresh, gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
				func(ctx context.Context, a refund) (string, error) { ran.Add(1); return "", nil }))
			if err != nil || ran.Load() != 1 {
				t.Fatalf("ran %d, err %v", ran.Load(), err)
			}
			if got := strings.Contains(logs.String(), "its acknowledgement failed"); got != tc.warn {
				t.Fatalf("warned %v, want %v: %s", got, tc.warn, logs.String())
			}
		})
	}
}
