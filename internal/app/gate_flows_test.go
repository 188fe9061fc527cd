package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc"
)

// The SDK's happy paths against novaos serve: a pass runs once; a hold
// approved while the write waits runs once, woken within a second of the
// approval; a denied hold never runs; a third run presenting the executed
// work item is told so with the acknowledgement time.
func TestGateHappyPaths(t *testing.T) {
	e := startGate(t, gatesvc.Options{HoldWindow: 30 * time.Second})
	const tenant = "happy"
	e.rules(tenant, holdOver...)
	c := e.agent(tenant, nil)
	op := e.operator(tenant)
	ctx := t.Context()

	t.Run("pass runs once", func(t *testing.T) {
		var eff effects
		if err := runOne(ctx, c, session(tenant, "pass-1"), refundSpec, eff.fn, refund{ID: "r-1", Record: "c1", Amount: 20}); err != nil {
			t.Fatal(err)
		}
		if n := eff.n.Load(); n != 1 {
			t.Fatalf("ran %d times", n)
		}
		rec, err := op.Action(ctx, "pass-1", "r-1")
		if err != nil || rec.State != gate.ActionExecuted || rec.FencingToken != 1 {
			t.Fatalf("record %+v, %v; want executed under fencing token 1", rec, err)
		}
	})

	var approvedAck time.Time
	t.Run("hold approved while waiting runs once within 1s", func(t *testing.T) {
		var eff effects
		approved := make(chan time.Time, 1)
		go func() {
			at, err := decideWhenHeld(ctx, op, "hold-1", "r-2", gate.DecisionApprove)
			if err != nil {
				t.Error(err)
			}
			approved <- at
		}()
		// Long-polls of 5 s: only the push on the decision can wake the
		// write within a second.
		if err := runOne(ctx, c, session(tenant, "hold-1"), refundSpec, eff.fn, refund{ID: "r-2", Record: "c1", Amount: 500}); err != nil {
			t.Fatal(err)
		}
		at := <-approved
		if n := eff.n.Load(); n != 1 {
			t.Fatalf("ran %d times", n)
		}
		lag := eff.lastRun().Sub(at)
		t.Logf("the write ran %v after the approval was sent", lag)
		if lag < 0 || lag > time.Second {
			t.Fatalf("the write ran %v after the approval, want within 1s", lag)
		}
		rec, err := op.Action(ctx, "hold-1", "r-2")
		if err != nil || rec.State != gate.ActionExecuted || rec.DecidedBy == "" {
			t.Fatalf("record %+v, %v; want executed, decided by the operator", rec, err)
		}
		approvedAck = rec.AcknowledgedAt
	})

	t.Run("hold denied never runs", func(t *testing.T) {
		var eff effects
		go func() {
			if _, err := decideWhenHeld(ctx, op, "hold-2", "r-3", gate.DecisionDeny); err != nil {
				t.Error(err)
			}
		}()
		err := runOne(ctx, c, session(tenant, "hold-2"), refundSpec, eff.fn, refund{ID: "r-3", Record: "c1", Amount: 500})
		k := wantKill(t, err, gate.ReasonOperatorDenied)
		if k.RuleIDCited != "large-refund" || k.ActionID != "r-3" || k.SessionID != "hold-2" {
			t.Errorf("kill %+v", k)
		}
		if n := eff.n.Load(); n != 0 {
			t.Fatalf("a denied write ran %d times", n)
		}
	})

	t.Run("third run gets already executed", func(t *testing.T) {
		var eff effects
		s := session(tenant, "hold-1")
		s.Attach, s.Resume = true, true
		err := runOne(ctx, c, s, refundSpec, eff.fn, refund{ID: "r-2", Record: "c1", Amount: 500})
		var ae *gate.AlreadyExecutedError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want *AlreadyExecutedError", err)
		}
		if ae.ActionID != "r-2" || ae.SessionID != "hold-1" || approvedAck.IsZero() || !ae.AcknowledgedAt.Equal(approvedAck) {
			t.Fatalf("%+v, want acknowledged at %v", ae, approvedAck)
		}
		if n := eff.n.Load(); n != 0 {
			t.Fatalf("the executed write ran again %d times", n)
		}
	})
}

// At the tool seam a pass runs the tool, an operator's deny reaches the
// model as a blocked result, and a kill halts the run with its error.
func TestGateToolSeam(t *testing.T) {
	e := startGate(t, gatesvc.Options{HoldWindow: 30 * time.Second})
	const tenant = "seam"
	e.rules(tenant, holdOver...)
	c := e.agent(tenant, nil)
	op := e.operator(tenant)
	ran := map[string]int{}
	next := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		var r refund
		_ = json.Unmarshal(args, &r)
		ran[r.ID]++
		return json.RawMessage(`{"status":"refunded"}`), nil
	}
	g := &gate.ToolGate{
		Client: c,
		Kinds:  map[string]gate.ToolKind{"lookup_order": gate.ToolRead, "issue_refund": gate.ToolWrite},
		Writes: map[string]gate.WriteSpecJSON{"issue_refund": {
			ActionType: "issue_refund",
			Context: func(args json.RawMessage) (gate.Context, error) {
				var r refund
				if err := json.Unmarshal(args, &r); err != nil {
					return nil, err
				}
				return refundContext(r)
			},
			ActionID: func(args json.RawMessage) (string, error) {
				var r refund
				err := json.Unmarshal(args, &r)
				return r.ID, err
			},
		}},
	}
	call := func(ctx context.Context, r refund) (gate.ToolResult, error) {
		args, _ := json.Marshal(r)
		return g.Call(ctx, "issue_refund", args, next)
	}
	err := c.Run(t.Context(), session(tenant, "seam-1"), func(ctx context.Context) error {
		if res, err := g.Call(ctx, "lookup_order", json.RawMessage(`{"id":"o-1"}`), func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"total":40}`), nil
		}); err != nil || res.Content != `{"total":40}` {
			t.Fatalf("read: %+v, %v", res, err)
		}

		res, err := call(ctx, refund{ID: "t-pass", Record: "c1", Amount: 40})
		if err != nil || res.Blocked || res.Content != `{"status":"refunded"}` || ran["t-pass"] != 1 {
			t.Fatalf("pass: %+v, %v, ran %d", res, err, ran["t-pass"])
		}

		go func() {
			if _, err := decideWhenHeld(ctx, op, "seam-1", "t-deny", gate.DecisionDeny); err != nil {
				t.Error(err)
			}
		}()
		res, err = call(ctx, refund{ID: "t-deny", Record: "c1", Amount: 500})
		if err != nil || !res.Blocked || res.Denial == nil || res.Denial.Reason != gate.ReasonOperatorDenied ||
			!strings.HasPrefix(res.Content, "BLOCKED") || ran["t-deny"] != 0 {
			t.Fatalf("deny: %+v, %v, ran %d; want a blocked result for the model", res, err, ran["t-deny"])
		}

		res, err = call(ctx, refund{ID: "t-kill", Record: "c1", Amount: 5000})
		k := wantKill(t, err, "")
		if k.RuleIDCited != "huge-refund" || res.Blocked || res.Content != "" || !gate.Halts(err) || ran["t-kill"] != 0 {
			t.Fatalf("kill: %+v, %v, ran %d; want the run halted", res, err, ran["t-kill"])
		}
		// A framework's tool-error handler must not turn the kill into a
		// message for the model.
		if _, herr := gate.KillSafe(nil)(err); herr != err {
			t.Fatalf("KillSafe swallowed the kill: %v", herr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The gate saw the read as evidence of the pass.
	rec, err := op.Action(t.Context(), "seam-1", "t-pass")
	if err != nil || !strings.Contains(string(rec.Action), "lookup_order") {
		t.Fatalf("record %+v, %v; want the read as evidence", rec, err)
	}
}

// The child processes of TestGateParkAndResumeAcrossProcesses: each
// attaches to the parked session with resume and presents the work item.
const (
	helperEnv     = "NOVAOS_GATE_E2E_HELPER"
	helperSession = "NOVAOS_GATE_E2E_SESSION"
	helperEffects = "NOVAOS_GATE_E2E_EFFECTS"
)

// TestGateHelperProcess is not a test: it is the body of the separate
// processes TestGateParkAndResumeAcrossProcesses starts (the test binary
// run again with -test.run), configured from the environment the way a
// deployed agent is. It prints one RESULT line and exits.
func TestGateHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	os.Exit(helperMain())
}

func helperMain() int {
	cfg, err := gate.ConfigFromEnv(nil)
	if err != nil {
		fmt.Println("RESULT config", err)
		return 2
	}
	c, err := gate.NewClient(cfg, &gate.ClientOptions{Logger: discard})
	if err != nil {
		fmt.Println("RESULT config", err)
		return 2
	}
	s := session("park", os.Getenv(helperSession))
	s.Attach, s.Resume, s.Resumable, s.MaxHold = true, true, true, gate.AdoptDeploymentWindow
	effect := func(_ context.Context, r refund) (string, error) {
		f, err := os.OpenFile(os.Getenv(helperEffects), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "%s %d\n", r.ID, os.Getpid())
		return "paid", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = runOne(ctx, c, s, refundSpec, effect, refund{ID: "inv-42", Record: "vendor-9", Amount: 500})
	var k *gate.KillError
	var ae *gate.AlreadyExecutedError
	var pe *gate.PausedError
	switch {
	case err == nil:
		fmt.Println("RESULT executed")
	case errors.As(err, &ae):
		fmt.Println("RESULT already_executed", ae.AcknowledgedAt.UTC().Format(time.RFC3339Nano))
	case errors.As(err, &k):
		fmt.Println("RESULT kill", k.Reason)
	case errors.As(err, &pe):
		fmt.Println("RESULT paused")
	default:
		fmt.Println("RESULT error", err)
	}
	return 0
}

// runHelper runs the test binary again as an agent process and returns
// its RESULT line. The gate's URL and token reach it in our variables, or
// with seedNames in seed 004's.
func runHelper(t *testing.T, e *gateEnv, sid, effects string, seedNames bool) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestGateHelperProcess$", "-test.count=1")
	urlVar, tokenVar := "NOVAOS_GATE_URL", "NOVAOS_TOKEN"
	if seedNames {
		urlVar, tokenVar = "NOVARCH_SERVER_URL", "NOVARCH_SDK_KEY"
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOVAOS_GATE_URL=") && !strings.HasPrefix(kv, "NOVAOS_TOKEN=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, helperEnv+"=1", helperSession+"="+sid, helperEffects+"="+effects,
		urlVar+"="+e.url(), tokenVar+"="+e.token("park", gate.ScopeSubmit).Reveal())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			return rest
		}
	}
	t.Fatalf("helper process printed no result:\n%s", out)
	return ""
}

// With an indefinite hold window, a resumable session that adopts it
// parks on a hold (PausedError) and suspends. Separate OS processes then
// attach with resume: before a decision one is told there is no standing
// verdict; after an operator's approval one executes the write, exactly
// once; a third (configured with seed 004's variable names) is told it
// was already executed.
func TestGateParkAndResumeAcrossProcesses(t *testing.T) {
	e := startGate(t, gatesvc.Options{HoldIndefinite: true})
	const tenant, sid = "park", "nightly-2026-12-02"
	e.rules(tenant, holdOver...)
	effects := filepath.Join(t.TempDir(), "effects.log")
	ctx := t.Context()

	c := e.agent(tenant, nil)
	s := session(tenant, sid)
	s.Resumable, s.MaxHold = true, gate.AdoptDeploymentWindow
	ran := 0
	var werr error
	err := c.Run(ctx, s, func(ctx context.Context) error {
		_, werr = gate.Write(c, refundSpec, func(context.Context, refund) (string, error) {
			ran++
			return "", nil
		})(ctx, refund{ID: "inv-42", Record: "vendor-9", Amount: 500})
		var pe *gate.PausedError
		if errors.As(werr, &pe) {
			return gate.Suspend(ctx)
		}
		return nil
	})
	var pe *gate.PausedError
	if err != nil || !errors.As(werr, &pe) || pe.ActionID != "inv-42" || pe.Hold == nil || !pe.Hold.Indefinite || ran != 0 {
		t.Fatalf("first run: %v, %v (ran %d); want a PausedError on an indefinite hold", werr, err, ran)
	}

	if got := runHelper(t, e, sid, effects, false); got != "kill "+string(gate.ResumeNoStandingVerdict) {
		t.Fatalf("a resume before any decision: %q, want resume_no_standing_verdict", got)
	}
	op := e.operator(tenant)
	if _, err := op.Decide(ctx, sid, "inv-42", gate.OperatorDecision{Decision: gate.DecisionApprove, Note: "invoice checked"}); err != nil {
		t.Fatal(err)
	}
	if got := runHelper(t, e, sid, effects, false); got != "executed" {
		t.Fatalf("the resume after approval: %q, want executed", got)
	}
	rec, err := op.Action(ctx, sid, "inv-42")
	if err != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("record %+v, %v; want executed", rec, err)
	}
	want := "already_executed " + rec.AcknowledgedAt.UTC().Format(time.RFC3339Nano)
	if got := runHelper(t, e, sid, effects, true); got != want {
		t.Fatalf("a third process: %q, want %q", got, want)
	}

	f, err := os.Open(effects)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "inv-42 ") || lines[0] == fmt.Sprintf("inv-42 %d", os.Getpid()) {
		t.Fatalf("effects %q, want exactly one, made by a child process", lines)
	}
}

// A server restarted within the restart grace keeps a pending hold, and
// the write waiting on it does not hold the shutdown up: its long-poll
// ends when shutdown begins, it reconnects to the restarted server, and an
// approval there runs it once.
func TestGateHoldSurvivesRestart(t *testing.T) {
	e := startGate(t, gatesvc.Options{HoldWindow: 30 * time.Second})
	const tenant = "restart"
	e.rules(tenant, holdOver...)
	// Long-polls longer than the whole test: only the shutdown can end one.
	var sent atomic.Int64
	c := e.client(tenant, gate.ScopeSubmit, &sent, &gate.ClientOptions{WaitPoll: time.Minute})
	var eff effects
	done := make(chan error, 1)
	go func() {
		done <- runOne(context.Background(), c, session(tenant, "s1"), refundSpec, eff.fn, refund{ID: "a1", Record: "c1", Amount: 500})
	}()
	f := &fault{t: t, tenant: tenant, sid: "s1"}
	f.waitHeld(e, "a1")
	// The write is in its long-poll once it sent its third request (open,
	// submit, wait). A poll the shutdown did not end would outlast stop's
	// 15 s deadline (the gate's MaxWait is 30 s), and stop reports that.
	deadline := time.Now().Add(30 * time.Second)
	for sent.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the write sent %d requests, never its long-poll", sent.Load())
		}
		time.Sleep(time.Millisecond)
	}
	e.stop()
	e.start()
	if _, err := decideWhenHeld(t.Context(), e.operator(tenant), "s1", "a1", gate.DecisionApprove); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting write never ran after the approval")
	}
	if n := eff.n.Load(); n != 1 {
		t.Fatalf("ran %d times", n)
	}
}

// Runs that resume the same approved work item at the same moment, each
// with its own client, execute it once between them: one wins the claim,
// the others are told it already ran, or that it is unconfirmed if they
// caught the winner between its claim and its acknowledgement, or are
// refused because another run already ended the session they share.
func TestGateConcurrentResumesExecuteOnce(t *testing.T) {
	e := startGate(t, gatesvc.Options{HoldIndefinite: true})
	const tenant, sid = "race", "batch-1"
	e.rules(tenant, holdOver...)
	s := session(tenant, sid)
	s.Resumable, s.MaxHold = true, gate.AdoptDeploymentWindow
	r := refund{ID: "inv-7", Record: "vendor-1", Amount: 500}
	var first effects
	err := runOne(t.Context(), e.agent(tenant, nil), s, refundSpec, first.fn, r)
	var pe *gate.PausedError
	if !errors.As(err, &pe) || first.n.Load() != 0 {
		t.Fatalf("first run: %v, want paused", err)
	}
	if _, err := e.operator(tenant).Decide(t.Context(), sid, r.ID, gate.OperatorDecision{Decision: gate.DecisionApprove}); err != nil {
		t.Fatal(err)
	}

	const runs = 6
	var eff effects
	errs := make(chan error, runs)
	start := make(chan struct{})
	s.Attach, s.Resume = true, true
	for range runs {
		c := e.agent(tenant, nil)
		go func() {
			<-start
			errs <- runOne(t.Context(), c, s, refundSpec, eff.fn, r)
		}()
	}
	close(start)
	executed := 0
	for range runs {
		err := <-errs
		var ae *gate.AlreadyExecutedError
		var k *gate.KillError
		switch {
		case err == nil:
			executed++
		case errors.As(err, &ae):
		case errors.As(err, &k) && k.Verdict == gate.ExecutionUnconfirmed:
		case errors.As(err, &k) && k.Reason == gate.ReasonProtocol && strings.Contains(k.Error(), "completed"):
			// Another run ended the shared session before this one
			// submitted (409): refused, which is safe.
		default:
			t.Errorf("a concurrent resume: %v", err)
		}
	}
	if n := eff.n.Load(); n != 1 || executed != 1 {
		t.Fatalf("the write ran %d times, %d runs reported executing it; want exactly once", n, executed)
	}
	rec, err := e.operator(tenant).Action(t.Context(), sid, r.ID)
	if err != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("record %+v, %v; want executed (the winner's acknowledgement settles it)", rec, err)
	}
}

// A log-only rule set records what it would have decided and lets the
// write through.
func TestGateShadowRules(t *testing.T) {
	e := startGate(t, gatesvc.Options{})
	const tenant = "shadow"
	if _, err := e.admin(tenant).PutRules(t.Context(), gate.RuleSetDocument{Shadow: true, Rules: holdOver}); err != nil {
		t.Fatal(err)
	}
	var eff effects
	if err := runOne(t.Context(), e.agent(tenant, nil), session(tenant, "s1"), refundSpec, eff.fn, refund{ID: "a1", Record: "c1", Amount: 5000}); err != nil {
		t.Fatal(err)
	}
	if n := eff.n.Load(); n != 1 {
		t.Fatalf("ran %d times", n)
	}
	rec, err := e.operator(tenant).Action(t.Context(), "s1", "a1")
	if err != nil || rec.State != gate.ActionExecuted || !strings.Contains(string(rec.Decision), `"would":"kill"`) {
		t.Fatalf("record %+v, %v; want executed with the would-have kill recorded", rec, err)
	}
}

// execution_unconfirmed is never retried on its own: after a crash between
// claim and acknowledgement every resume is refused until an operator
// says the write did not land; then one resume runs it, once. The
// operator sees it, and may settle it, only once the claim timeout has
// passed: until then its claimant may still be writing.
func TestGateOperatorSettlesUnconfirmed(t *testing.T) {
	clk := &gateClock{t: time.Now().UTC()}
	e := startGate(t, gatesvc.Options{Now: clk.now, ClaimTimeout: time.Minute})
	const tenant, sid = "settle", "s1"
	r := refund{ID: "po-5", Record: "c1", Amount: 5}
	tok := e.token(tenant, gate.ScopeSubmit)
	s := session(tenant, sid)
	postGate(t, e, tok, "/sessions", s.Request(), http.StatusCreated)
	cx, _ := refundContext(r)
	postGate(t, e, tok, "/actions?claim=1", gate.Action{ActionID: r.ID, ActionType: refundSpec.ActionType, TenantID: tenant,
		TeamID: "support", AgentID: "refund-bot", SessionID: sid, Context: cx}, http.StatusOK)
	// The claimant died here, before its acknowledgement.

	c := e.agent(tenant, nil)
	s.Attach, s.Resume = true, true
	var eff effects
	for range 2 {
		err := runOne(t.Context(), c, s, refundSpec, eff.fn, r)
		if k := wantKill(t, err, ""); k.Verdict != gate.ExecutionUnconfirmed {
			t.Fatalf("resume before the operator: %v, want execution_unconfirmed", k)
		}
	}
	if n := eff.n.Load(); n != 0 {
		t.Fatalf("an unconfirmed write was retried %d times", n)
	}
	if list, err := e.operator(tenant).ListActions(t.Context(), nil); err != nil || len(list.Actions) != 0 {
		t.Fatalf("operator list %+v, %v; want nothing while the claim is live", list, err)
	}
	_, err := e.operator(tenant).Decide(t.Context(), sid, r.ID, gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted})
	var p *gate.Problem
	if !errors.As(err, &p) || p.Status != http.StatusConflict || !strings.Contains(p.Detail, "claim timeout") {
		t.Fatalf("confirm on a live claim: %v, want a 409 problem naming the claim timeout", err)
	}
	clk.add(time.Minute)
	if err := runOne(t.Context(), c, s, refundSpec, eff.fn, r); wantKill(t, err, "").Verdict != gate.ExecutionUnconfirmed {
		t.Fatalf("resume past the claim timeout: %v, want execution_unconfirmed", err)
	}
	list, err := e.operator(tenant).ListActions(t.Context(), nil)
	if err != nil || len(list.Actions) != 1 || list.Actions[0].State != gate.ActionUnconfirmed {
		t.Fatalf("operator list %+v, %v; want the unconfirmed action", list, err)
	}
	if _, err := e.operator(tenant).Decide(t.Context(), sid, r.ID, gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted, Note: "not in the ledger"}); err != nil {
		t.Fatal(err)
	}
	if err := runOne(t.Context(), c, s, refundSpec, eff.fn, r); err != nil {
		t.Fatal(err)
	}
	var ae *gate.AlreadyExecutedError
	if err := runOne(t.Context(), c, s, refundSpec, eff.fn, r); !errors.As(err, &ae) {
		t.Fatalf("resume after execution: %v, want AlreadyExecutedError", err)
	}
	if n := eff.n.Load(); n != 1 {
		t.Fatalf("ran %d times, want once after the operator's decision", n)
	}
	rec, err := e.operator(tenant).Action(t.Context(), sid, r.ID)
	if err != nil || rec.State != gate.ActionExecuted || rec.FencingToken != 2 {
		t.Fatalf("record %+v, %v; want executed under the second claim's token", rec, err)
	}
}
