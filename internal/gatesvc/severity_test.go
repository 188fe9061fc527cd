package gatesvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/judge"
)

// The most severe layer decides: the judge escalates a rule's verdict
// and never lowers it, and on a tie the rule's citation stands.
func TestJudgeNeverWeakerThanRules(t *testing.T) {
	const set = `{"rules": [
	  {"id": "big", "text": "Hold refunds over 500.", "when": "ctx.amount > 500.0", "verdict": "hold"},
	  {"id": "tone", "text": "Never refund a customer who threatened staff."}
	]}`
	for _, tc := range []struct {
		name   string
		amount float64 // over 500: the rules hold
		judge  judge.Verdict
		want   gate.Outcome
		rule   string
	}{
		{"rule hold, judge kill", 900, judge.Verdict{Verdict: "kill", RuleIDCited: "tone", Rationale: "threat"}, gate.Kill, "tone"},
		{"rule hold, judge hold", 900, judge.Verdict{Verdict: "hold", RuleIDCited: "tone", Rationale: "maybe"}, gate.Hold, "big"},
		{"rule hold, judge pass", 900, judge.Verdict{Verdict: "pass", Rationale: "fine"}, gate.Hold, "big"},
		{"rule pass, judge kill", 10, judge.Verdict{Verdict: "kill", RuleIDCited: "tone", Rationale: "threat"}, gate.Kill, "tone"},
		{"rule pass, judge pass", 10, judge.Verdict{Verdict: "pass", Rationale: "fine"}, gate.Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.judge
			f := newFixture(t, &Options{Judge: &fakeJudge{v: &v}, JudgeModel: "fake"})
			f.rules(set)
			f.open("s1", 300, false)
			got := f.submit(action("s1", "a1", "refund", tc.amount, "c1", false), false)
			if got.Verdict != tc.want || got.RuleIDCited != tc.rule {
				t.Fatalf("%+v, want %s citing %q", got, tc.want, tc.rule)
			}
		})
	}
}

// When several rules match, the most severe decides whatever their order,
// and among equals the first cited stands.
func TestMostSevereRuleCited(t *testing.T) {
	hold := `{"id": "%s", "text": "hold %[1]s", "when": "true", "verdict": "hold"}`
	kill := `{"id": "%s", "text": "kill %[1]s", "when": "true", "verdict": "kill"}`
	for _, tc := range []struct {
		name  string
		rules []string
		want  gate.Outcome
		rule  string
	}{
		{"hold then kill", []string{fmt.Sprintf(hold, "h"), fmt.Sprintf(kill, "k")}, gate.Kill, "k"},
		{"kill then hold", []string{fmt.Sprintf(kill, "k"), fmt.Sprintf(hold, "h")}, gate.Kill, "k"},
		{"two holds", []string{fmt.Sprintf(hold, "h1"), fmt.Sprintf(hold, "h2")}, gate.Hold, "h1"},
		{"two kills", []string{fmt.Sprintf(kill, "k1"), fmt.Sprintf(kill, "k2")}, gate.Kill, "k1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.rules(`{"rules": [` + strings.Join(tc.rules, ",") + `]}`)
			f.open("s1", 300, false)
			v := f.submit(action("s1", "a1", "refund", 10, "c1", false), false)
			if v.Verdict != tc.want || v.RuleIDCited != tc.rule {
				t.Fatalf("%+v, want %s citing %s", v, tc.want, tc.rule)
			}
			if v.Verdict == gate.Kill && v.Rationale != "kill "+tc.rule {
				t.Fatalf("rationale %q, want the cited rule's text", v.Rationale)
			}
		})
	}
}

// flakyJudge fails while down is set, then answers pass.
type flakyJudge struct{ down atomic.Bool }

func (j *flakyJudge) Judge(ctx context.Context, req judge.Request) (*judge.Verdict, error) {
	if j.down.Load() {
		return nil, &judge.Error{Failure: judge.Unavailable, Err: errors.New("503 from the model")}
	}
	return &judge.Verdict{Verdict: "pass", Rationale: "fine"}, nil
}

// A judge outage kills the write it meets, but leaves no standing
// verdict: the same action id is judged afresh once the judge is back.
func TestJudgeOutageIsNotPermanent(t *testing.T) {
	j := &flakyJudge{}
	j.down.Store(true)
	f := newFixture(t, &Options{Judge: j, JudgeModel: "fake"})
	f.rules(refundRules)
	f.open("s1", 300, false)
	v := f.submit(action("s1", "a1", "refund", 10, "c1", false), true)
	if v.Verdict != gate.Kill || v.Reason != gate.ReasonJudgeError || v.Claim != nil {
		t.Fatalf("during the outage: %+v, want a fail-closed kill", v)
	}
	if _, err := f.store.GetAction(context.Background(), "acme", "s1", "a1"); !errors.Is(err, gate.ErrNotFound) {
		t.Fatalf("the outage's kill was recorded as the action's verdict (%v)", err)
	}
	j.down.Store(false)
	v = f.submit(action("s1", "a1", "refund", 10, "c1", false), true)
	if v.Verdict != gate.Pass || v.Claim == nil {
		t.Fatalf("after the outage: %+v, want a pass judged afresh", v)
	}
	entries, err := f.store.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range entries {
		if e.ActionID == "a1" {
			kinds = append(kinds, e.Kind)
		}
	}
	if strings.Join(kinds, ",") != "decision_failed_closed,decision" {
		t.Fatalf("audit of a1: %v, want the failed-closed kill, then the decision", kinds)
	}
	verifyAudit(t, f.store)
}

// ruleStore fails reading rule sets while broken is set.
type ruleStore struct {
	gate.Store
	broken atomic.Bool
	reads  atomic.Int32
}

func (s *ruleStore) RuleSet(ctx context.Context, tenant string, version int64) (gate.RuleSetRecord, error) {
	s.reads.Add(1)
	if s.broken.Load() {
		return gate.RuleSetRecord{}, errors.New("connection reset")
	}
	return s.Store.RuleSet(ctx, tenant, version)
}

// A store error reading the rule set refuses the write (never "no
// rules"), and is not cached: the next write reads the store again.
func TestRuleSetStoreErrorFailsClosed(t *testing.T) {
	f := newFixture(t, nil)
	st := &ruleStore{Store: f.store}
	f.store = st
	f.restart(nil)
	f.rules(`{"rules": [{"id": "all", "text": "Hold every refund.", "when": "action.type == 'refund'", "verdict": "hold"}]}`)
	f.open("s1", 300, false)
	st.broken.Store(true)
	v := f.submit(action("s1", "a1", "refund", 10, "c1", false), true)
	if v.Verdict != gate.Kill || v.Reason != gate.ReasonRulesUnavailable || v.Claim != nil {
		t.Fatalf("with the rule set unreadable: %+v, want a fail-closed kill", v)
	}
	st.broken.Store(false)
	v = f.submit(action("s1", "a2", "refund", 10, "c1", false), false)
	if v.Verdict != gate.Hold || v.RuleIDCited != "all" {
		t.Fatalf("once the store answers: %+v, want the rule's hold", v)
	}
}

// A tenant without rules is re-read after the refresh interval, not
// cached for good; within it the store is not asked again.
func TestRuleSetRefresh(t *testing.T) {
	f := newFixture(t, nil)
	st := &ruleStore{Store: f.store}
	f.store = st
	f.restart(&Options{RuleRefresh: time.Minute})
	f.open("s1", 300, false)
	if v := f.submit(action("s1", "a1", "refund", 10, "c1", false), false); v.Verdict != gate.Pass {
		t.Fatal(v)
	}
	// Stored behind the service's back, as another replica would.
	if _, err := st.Store.PutRuleSet(context.Background(), gate.RuleSetRecord{TenantID: "acme", Hash: "h", CreatedAt: f.clk.now(),
		Body: []byte(`{"rules": [{"id": "all", "text": "Hold every refund.", "when": "true", "verdict": "hold"}]}`)}); err != nil {
		t.Fatal(err)
	}
	reads := st.reads.Load()
	f.clk.add(time.Minute - time.Millisecond)
	if v := f.submit(action("s1", "a2", "refund", 10, "c1", false), false); v.Verdict != gate.Pass || st.reads.Load() != reads {
		t.Fatalf("within the refresh: %+v after %d more reads, want the cached pass", v, st.reads.Load()-reads)
	}
	f.clk.add(time.Millisecond)
	if v := f.submit(action("s1", "a3", "refund", 10, "c1", false), false); v.Verdict != gate.Hold {
		t.Fatalf("after the refresh: %+v, want the new set's hold", v)
	}
	// The unchanged set is not parsed again, but its refresh still counts.
	f.clk.add(time.Minute)
	if v := f.submit(action("s1", "a4", "refund", 10, "c1", false), false); v.Verdict != gate.Hold {
		t.Fatalf("a refresh of the same set: %+v", v)
	}
}

// A hold's window is enforced when an operator decides, whether or not
// the sweeper has run: at its end the decision is refused and the hold
// fails closed; just before it, the decision stands.
func TestDecideAtWindowEnd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		want    gate.ActionState
	}{
		{"just inside", time.Minute - time.Millisecond, gate.ActionApproved},
		{"at the end", time.Minute, gate.ActionExpired},
		{"past it", time.Hour, gate.ActionExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.rules(refundRules)
			f.open("s1", 60, false)
			if v := f.submit(action("s1", "big", "refund", 900, "c1", false), false); v.Verdict != gate.Hold {
				t.Fatal(v)
			}
			f.clk.add(tc.elapsed)
			rec, err := f.svc.Decide(ctx, "acme", "s1", "big", gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops")
			if tc.want == gate.ActionExpired {
				if !errors.Is(err, gate.ErrConflict) || !strings.Contains(err.Error(), "window had passed") {
					t.Fatalf("approve after the window: %v, want a conflict", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got, err := f.store.GetAction(ctx, "acme", "s1", "big")
			if err != nil || got.State != tc.want || rec.State != tc.want {
				t.Fatalf("stored %s, answered %s (%v), want %s", got.State, rec.State, err, tc.want)
			}
			if tc.want == gate.ActionExpired && got.Reason != gate.ReasonOperatorTimeout {
				t.Fatalf("reason %q", got.Reason)
			}
			if _, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "big"}); (err == nil) != (tc.want == gate.ActionApproved) {
				t.Fatalf("claim after the decision: %v", err)
			}
		})
	}
}

// waiting reports whether a long-poll waits on the action.
func (s *Service) waiting(session, action string) bool {
	s.waiters.mu.Lock()
	defer s.waiters.mu.Unlock()
	return len(s.waiters.m[actionKey{"acme", session, action}]) > 0
}

// waitUntil polls cond until it holds, failing the test after a bound
// far beyond any scheduling delay.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// An operator's decision wakes the long-polls waiting on it: with the
// periodic re-read an hour away and the wait's own deadline an hour away,
// only the wake-up can end the wait.
func TestDecisionWakesWaiters(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		decide gate.OperatorDecisionKind
		want   gate.Outcome
	}{{gate.DecisionApprove, gate.Pass}, {gate.DecisionDeny, gate.Kill}} {
		t.Run(string(tc.decide), func(t *testing.T) {
			f := newFixture(t, &Options{MaxWait: time.Hour, HoldIndefinite: true})
			f.svc.recheck = time.Hour
			f.rules(refundRules)
			f.open("s1", -1, false)
			if v := f.submit(action("s1", "big", "refund", 900, "c1", false), false); v.Verdict != gate.Hold {
				t.Fatal(v)
			}
			type result struct {
				v   gate.Verdict
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: 3600})
				done <- result{v, err}
			}()
			waitUntil(t, "the long-poll to wait", func() bool { return f.svc.waiting("s1", "big") })
			if _, err := f.svc.Decide(ctx, "acme", "s1", "big", gate.OperatorDecision{Decision: tc.decide}, "ops"); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				if r.err != nil || r.v.Verdict != tc.want {
					t.Fatalf("wait: %+v, %v; want %s", r.v, r.err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the decision did not wake the long-poll")
			}
			if f.svc.waiting("s1", "big") {
				t.Fatal("the finished wait is still registered")
			}
		})
	}
}

// A long-poll lasts what the caller asks, capped at MaxWait; no timeout
// means MaxWait. The hold stays pending: an hour-long wait must still be
// waiting when the operator decides, and a short one answers pending.
func TestWaitTimeouts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		maxWait  time.Duration
		timeoutS float64
		waits    bool // still waiting when the operator decides
	}{
		{"no timeout is MaxWait", time.Hour, 0, true},
		{"a timeout under MaxWait", time.Hour, 3000, true},
		{"a short timeout", time.Hour, 0.001, false},
		{"capped at MaxWait", time.Millisecond, 3600, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &Options{MaxWait: tc.maxWait, HoldIndefinite: true})
			f.svc.recheck = time.Hour
			f.rules(refundRules)
			f.open("s1", -1, false)
			f.submit(action("s1", "big", "refund", 900, "c1", false), false)
			done := make(chan gate.Verdict, 1)
			go func() {
				v, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: tc.timeoutS})
				if err != nil {
					t.Error(err)
				}
				done <- v
			}()
			want := gate.Hold
			if tc.waits {
				waitUntil(t, "the long-poll to wait", func() bool { return f.svc.waiting("s1", "big") })
				if _, err := f.svc.Decide(ctx, "acme", "s1", "big", gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops"); err != nil {
					t.Fatal(err)
				}
				want = gate.Pass
			}
			select {
			case v := <-done:
				if v.Verdict != want {
					t.Fatalf("wait: %+v, want %s", v, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the wait did not end")
			}
		})
	}
}

// A long-poll settles a hold whose window ends as it reads it: at the
// end, not a moment later, the hold fails closed.
func TestWaitAtWindowEnd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		elapsed time.Duration
		want    gate.Outcome
	}{{time.Minute, gate.Kill}, {time.Minute - time.Millisecond, gate.Hold}} {
		t.Run(tc.elapsed.String(), func(t *testing.T) {
			f := newFixture(t, nil)
			f.rules(refundRules)
			f.open("s1", 60, false)
			f.submit(action("s1", "big", "refund", 900, "c1", false), false)
			f.clk.add(tc.elapsed)
			v, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: 0.05})
			if err != nil || v.Verdict != tc.want {
				t.Fatalf("wait %v into a 60 s window: %+v, %v; want %s", tc.elapsed, v, err, tc.want)
			}
			if tc.want == gate.Kill && v.Reason != gate.ReasonOperatorTimeout {
				t.Fatalf("reason %q", v.Reason)
			}
		})
	}
}

// One waiter leaving does not unhook another on the same action, and no
// finished wait stays registered.
func TestWaitersIndependent(t *testing.T) {
	f := newFixture(t, &Options{MaxWait: time.Hour, HoldIndefinite: true})
	f.svc.recheck = time.Hour
	f.rules(refundRules)
	f.open("s1", -1, false)
	f.submit(action("s1", "big", "refund", 900, "c1", false), false)
	count := func() int {
		f.svc.waiters.mu.Lock()
		defer f.svc.waiters.mu.Unlock()
		return len(f.svc.waiters.m[actionKey{"acme", "s1", "big"}])
	}
	leaving, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := f.svc.Wait(leaving, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big"})
		left <- err
	}()
	stays := make(chan gate.Verdict, 1)
	go func() {
		v, err := f.svc.Wait(context.Background(), agent, gate.WaitRequest{SessionID: "s1", ActionID: "big"})
		if err != nil {
			t.Error(err)
		}
		stays <- v
	}()
	waitUntil(t, "two waiters", func() bool { return count() == 2 })
	leave()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled wait: %v", err)
	}
	waitUntil(t, "one waiter", func() bool { return count() == 1 })
	if _, err := f.svc.Decide(context.Background(), "acme", "s1", "big", gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops"); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-stays:
		if v.Verdict != gate.Pass {
			t.Fatalf("the remaining wait: %+v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the remaining waiter was not woken")
	}
	f.svc.waiters.mu.Lock()
	n := len(f.svc.waiters.m)
	f.svc.waiters.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d actions still have waiters registered", n)
	}
}

// A decision's audit entry carries the fencing token exactly when the
// submit claimed the pass, and the actor is the caller.
func TestDecisionAudit(t *testing.T) {
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	f.submit(action("s1", "claimed", "refund", 10, "c1", false), true)
	f.submit(action("s1", "passed", "refund", 10, "c1", false), false)
	entries, err := f.store.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if e.Kind == "decision" {
			var body map[string]any
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatal(err)
			}
			got[e.ActionID] = fmt.Sprint(body["fencing_token"], " by ", e.Actor)
		}
	}
	if want := map[string]string{"claimed": "1 by refund-bot", "passed": "<nil> by refund-bot"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decisions %v, want %v", got, want)
	}
}

// recordingJudge passes and keeps what it was asked.
type recordingJudge struct {
	mu  sync.Mutex
	req judge.Request
}

func (j *recordingJudge) Judge(ctx context.Context, req judge.Request) (*judge.Verdict, error) {
	j.mu.Lock()
	j.req = req
	j.mu.Unlock()
	return &judge.Verdict{Verdict: "pass", Rationale: "fine"}, nil
}

// The judge reads every rule's text, the action, and each piece of
// evidence with its source, a failed read as its error.
func TestJudgeRequest(t *testing.T) {
	j := &recordingJudge{}
	amount := 10.0
	f := newFixture(t, &Options{Judge: j, JudgeModel: "fake"})
	f.rules(refundRules)
	f.open("s1", 300, false)
	a := gate.Action{ActionID: "a1", ActionType: "refund", TenantID: "acme", TeamID: "support", AgentID: "refund-bot", SessionID: "s1",
		Reasoning: "charged twice", Context: gate.CSContext{CustomerID: "c1", Amount: &amount},
		Evidence: []gate.Evidence{
			{Tool: "lookup", Result: json.RawMessage(`{"tier":"gold"}`), Provenance: gate.Provenance{Sequence: 1, ObservedAt: time.Now()}},
			{Tool: "ledger", Error: "timeout", Provenance: gate.Provenance{Sequence: 2, ObservedAt: time.Now()}},
		}}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(raw, false)
	j.mu.Lock()
	req := j.req
	j.mu.Unlock()
	var ids []string
	for _, r := range req.Rules {
		ids = append(ids, r.ID+": "+r.Text)
	}
	want := []string{"big-refund: Hold refunds over 500.", "repeat-refund: Kill a third refund for one customer in a week.", "tone: Never refund a customer who threatened staff."}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("rules %v, want %v", ids, want)
	}
	if fmt.Sprint(req.Evidence) != fmt.Sprint([]judge.Evidence{{Source: "lookup #1", Content: `{"tier":"gold"}`}, {Source: "ledger #2", Content: "error: timeout"}}) {
		t.Errorf("evidence %+v", req.Evidence)
	}
	if req.Reasoning != "charged twice" || !strings.Contains(req.Action, `"action_type":"refund"`) || !strings.Contains(req.Action, `"customer_id":"c1"`) {
		t.Errorf("reasoning %q, action %s", req.Reasoning, req.Action)
	}
}

// Rules read each piece of evidence: its tool, sequence, result and
// arguments as JSON values, its error; a failed read has no result.
func TestRulesReadEvidence(t *testing.T) {
	amount := 10.0
	ev := []gate.Evidence{
		{Tool: "lookup", Arguments: json.RawMessage(`{"id":"c1"}`), Result: json.RawMessage(`{"tier":"gold"}`), Provenance: gate.Provenance{Sequence: 1, ObservedAt: time.Now()}},
		{Tool: "ledger", Arguments: json.RawMessage(`["x"]`), Error: "timeout", Provenance: gate.Provenance{Sequence: 2, ObservedAt: time.Now(), Truncated: true, OriginalBytes: 9}},
	}
	for _, tc := range []struct {
		when string
		hold bool
	}{
		{`evidence.exists(e, e.tool == "lookup" && e.seq == 1 && e.result.tier == "gold" && e.arguments.id == "c1")`, true},
		{`evidence.exists(e, e.tool == "ledger" && e.error == "timeout" && !has(e.result) && e.arguments[0] == "x" && e.truncated)`, true},
		{`evidence.exists(e, e.tool == "lookup" && e.error != "")`, false},
	} {
		t.Run(tc.when, func(t *testing.T) {
			f := newFixture(t, nil)
			f.rules(`{"rules": [{"id": "ev", "text": "t", "when": ` + strconv.Quote(tc.when) + `, "verdict": "hold"}]}`)
			f.open("s1", 300, false)
			raw, err := json.Marshal(gate.Action{ActionID: "a1", ActionType: "refund", TenantID: "acme", TeamID: "support", AgentID: "refund-bot",
				SessionID: "s1", Context: gate.CSContext{CustomerID: "c1", Amount: &amount}, Evidence: ev})
			if err != nil {
				t.Fatal(err)
			}
			if v := f.submit(raw, false); (v.Verdict == gate.Hold) != tc.hold || (v.Verdict != gate.Hold && v.Verdict != gate.Pass) {
				t.Fatalf("%+v, want hold=%v", v, tc.hold)
			}
		})
	}
}
