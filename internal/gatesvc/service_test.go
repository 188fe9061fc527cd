package gatesvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/gatesvc/rules"
	"novaos.dev/novaos/store/sqlite"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB) gate.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.GateStore()
}

// fixture is a service over a fresh store, with a clock tests move.
type fixture struct {
	t     testing.TB
	store gate.Store
	svc   *Service
	clk   *clock
}

func newFixture(t testing.TB, o *Options) *fixture {
	t.Helper()
	f := &fixture{t: t, store: openStore(t), clk: &clock{t: time.Now().UTC().Truncate(time.Second)}}
	f.svc = f.restart(o)
	return f
}

// restart builds a new service over the same store, as a restarted
// server would.
func (f *fixture) restart(o *Options) *Service {
	f.t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = f.clk.now
	}
	f.svc = New(f.store, &opts)
	if err := f.svc.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	return f.svc
}

var agent = &Caller{Tenant: "acme", Agent: "refund-bot", Actor: "refund-bot", Grants: func(string) bool { return true }}

func (f *fixture) open(id string, maxHold float64, resumable bool) {
	f.t.Helper()
	req := gate.SessionRequest{TenantID: "acme", TeamID: "support", AgentID: "refund-bot", SessionID: id,
		Resumable: resumable, MaxHoldS: maxHold}
	if maxHold < 0 {
		req.MaxHoldS, req.AdoptDeploymentWindow = 0, true
	}
	if _, _, err := f.svc.OpenSession(context.Background(), agent, req); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) rules(doc string) {
	f.t.Helper()
	if _, err := f.svc.PutRules(context.Background(), "acme", "admin", []byte(doc)); err != nil {
		f.t.Fatal(err)
	}
}

func action(session, id, typ string, amount float64, customer string, resume bool) []byte {
	a := gate.Action{ActionID: id, ActionType: typ, TenantID: "acme", TeamID: "support", AgentID: "refund-bot",
		SessionID: session, Resume: resume, Reasoning: "the customer was charged twice",
		Context: gate.CSContext{CustomerID: customer, Amount: &amount},
		Evidence: []gate.Evidence{{Tool: "lookup_customer", Result: json.RawMessage(`{"tier":"gold"}`),
			Provenance: gate.Provenance{Sequence: 1, ObservedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}}}}
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return b
}

func (f *fixture) submit(raw []byte, claim bool) gate.Verdict {
	f.t.Helper()
	v, err := f.svc.Submit(context.Background(), agent, raw, claim)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := v.Validate(); err != nil {
		f.t.Fatalf("invalid verdict %+v: %v", v, err)
	}
	return v
}

const refundRules = `{
  "rules": [
    {"id": "big-refund", "text": "Hold refunds over 500.", "when": "action.type == 'refund' && ctx.amount > 500.0", "verdict": "hold"},
    {"id": "repeat-refund", "text": "Kill a third refund for one customer in a week.", "when": "action.type == 'refund' && agg.refunds_168h >= 2.0", "verdict": "kill"},
    {"id": "tone", "text": "Never refund a customer who threatened staff."}
  ],
  "aggregates": [{"name": "refunds_168h", "action_type": "refund", "measure": "count", "window": "168h"}]
}`

func TestVerdictPaths(t *testing.T) {
	ctx := context.Background()
	t.Run("pass, claim, ack, then already executed", func(t *testing.T) {
		f := newFixture(t, nil)
		f.rules(refundRules)
		f.open("s1", 300, false)
		v := f.submit(action("s1", "a1", "refund", 20, "c1", false), true)
		if v.Verdict != gate.Pass || v.Claim == nil || v.Claim.FencingToken != 1 {
			t.Fatalf("verdict %+v, want a pass claimed with token 1", v)
		}
		ack, err := f.svc.Ack(ctx, agent, gate.AckRequest{SessionID: "s1", ActionID: "a1", FencingToken: 1})
		if err != nil || ack.AcknowledgedAt.IsZero() {
			t.Fatalf("ack %+v, %v", ack, err)
		}
		again := f.submit(action("s1", "a1", "refund", 20, "c1", true), true)
		if again.Verdict != gate.AlreadyExecuted || again.AcknowledgedAt == nil || !again.AcknowledgedAt.Equal(ack.AcknowledgedAt) {
			t.Fatalf("resume after ack: %+v", again)
		}
	})
	t.Run("rule kill cites the rule", func(t *testing.T) {
		f := newFixture(t, nil)
		f.rules(refundRules)
		f.open("s1", 300, false)
		for i := range 2 {
			v := f.submit(action("s1", fmt.Sprint("r", i), "refund", 10, "c9", false), true)
			if v.Verdict != gate.Pass {
				t.Fatalf("refund %d: %+v", i, v)
			}
		}
		v := f.submit(action("s1", "r3", "refund", 10, "c9", false), true)
		if v.Verdict != gate.Kill || v.RuleIDCited != "repeat-refund" || v.Reason != "" || v.Claim != nil {
			t.Fatalf("third refund: %+v, want a kill citing repeat-refund", v)
		}
		other := f.submit(action("s1", "r4", "refund", 10, "c10", false), true)
		if other.Verdict != gate.Pass {
			t.Fatalf("another customer's refund: %+v (the aggregate is per customer)", other)
		}
	})
	t.Run("shadow set records what it would do and passes", func(t *testing.T) {
		f := newFixture(t, nil)
		f.rules(`{"shadow": true, "rules": [{"id": "k", "text": "kill all", "when": "true", "verdict": "kill"}]}`)
		f.open("s1", 300, false)
		v := f.submit(action("s1", "a1", "refund", 10, "c1", false), false)
		if v.Verdict != gate.Pass || !v.Shadow {
			t.Fatalf("shadow: %+v", v)
		}
		rec, err := f.store.GetAction(ctx, "acme", "s1", "a1")
		if err != nil {
			t.Fatal(err)
		}
		var d gate.Decision
		if err := json.Unmarshal(rec.Decision, &d); err != nil || d.Would != gate.Kill || !d.Shadow || len(d.Matched) != 1 {
			t.Fatalf("decision %s (%v): want would kill", rec.Decision, err)
		}
		entries, err := f.store.Audit(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if entries[len(entries)-1].Kind != "shadow_decision" {
			t.Fatalf("last audit entry %q, want shadow_decision", entries[len(entries)-1].Kind)
		}
	})
}

func TestHolds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		decide   gate.OperatorDecisionKind
		want     gate.Outcome
		wantWhy  gate.Reason
		maxHoldS float64
	}{
		{"approve", gate.DecisionApprove, gate.Pass, "", 30},
		{"deny", gate.DecisionDeny, gate.Kill, gate.ReasonOperatorDenied, 30},
		{"window passes", "", gate.Kill, gate.ReasonOperatorTimeout, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &Options{Now: time.Now})
			f.rules(refundRules)
			f.open("s1", tc.maxHoldS, false)
			v := f.submit(action("s1", "big", "refund", 900, "c1", false), true)
			if v.Verdict != gate.Hold || v.Hold.State != gate.HoldPending || v.RuleIDCited != "big-refund" || v.Claim != nil {
				t.Fatalf("submit: %+v", v)
			}
			if tc.decide != "" {
				// The operator decides while the agent waits (how fast the
				// decision wakes it is TestDecisionWakesWaiters').
				go func() {
					deadline := time.Now().Add(30 * time.Second)
					for !f.svc.waiting("s1", "big") && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					if _, err := f.svc.Decide(ctx, "acme", "s1", "big", gate.OperatorDecision{Decision: tc.decide, Note: "checked"}, "ops@acme"); err != nil {
						t.Error(err)
					}
				}()
			}
			got, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: 10})
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tc.want || got.Reason != tc.wantWhy {
				t.Fatalf("wait: %+v, want %s %s", got, tc.want, tc.wantWhy)
			}
			if tc.want == gate.Pass {
				cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "big"})
				if err != nil || cl.Status != gate.ClaimGranted {
					t.Fatalf("claim after approval: %+v, %v", cl, err)
				}
			} else if _, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "big"}); !errors.Is(err, ErrNotClaimable) {
				t.Fatalf("claim after %s: %v, want ErrNotClaimable", tc.name, err)
			}
		})
	}
}

func TestRestartGrace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		down time.Duration
		want gate.ActionState
	}{
		{"within grace", 30 * time.Second, gate.ActionHeld},
		{"past grace", 10 * time.Minute, gate.ActionExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &Options{HoldIndefinite: true})
			f.rules(refundRules)
			f.open("s1", -1, true)
			if v := f.submit(action("s1", "big", "refund", 900, "c1", false), false); v.Verdict != gate.Hold {
				t.Fatalf("submit: %+v", v)
			}
			f.clk.add(tc.down)
			f.restart(&Options{HoldIndefinite: true})
			rec, err := f.store.GetAction(ctx, "acme", "s1", "big")
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != tc.want {
				t.Fatalf("after %v down: %s, want %s", tc.down, rec.State, tc.want)
			}
			if tc.want == gate.ActionExpired && rec.Reason != gate.ReasonRestartPastGrace {
				t.Fatalf("reason %q", rec.Reason)
			}
		})
	}
}

func TestResumeRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{HoldIndefinite: true})
	f.rules(refundRules)
	f.open("night", -1, true)
	if v := f.submit(action("night", "po-1", "refund", 20, "c1", false), false); v.Verdict != gate.Pass {
		t.Fatal(v)
	}
	if v := f.submit(action("night", "po-2", "refund", 900, "c2", false), false); v.Verdict != gate.Hold {
		t.Fatal(v)
	}
	// An action recorded before fingerprints: written straight to the store.
	old := gate.ActionRecord{TenantID: "acme", SessionID: "night", ActionID: "po-0", ActionType: "refund",
		Action: action("night", "po-0", "refund", 5, "c0", false), State: gate.ActionPassed, Verdict: gate.Pass}
	if _, err := f.store.WriteAction(ctx, gate.ActionWrite{Record: old, Now: f.clk.now()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		svc  *Service
		want gate.Reason
	}{
		{"content changed", action("night", "po-1", "refund", 21, "c1", true), nil, gate.ResumeFingerprintMismatch},
		{"type changed", action("night", "po-1", "charge", 20, "c1", true), nil, gate.ResumeFingerprintMismatch},
		{"unversioned", action("night", "po-0", "refund", 5, "c0", true), nil, gate.ResumeCommitmentUnversioned},
		{"still held", action("night", "po-2", "refund", 900, "c2", true), nil, gate.ResumeNoStandingVerdict},
		{"commitment version changed", action("night", "po-1", "refund", 20, "c1", true),
			New(f.store, &Options{Now: f.clk.now, CommitmentVersion: "2"}), gate.ResumeCommitmentVersionChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc
			if svc == nil {
				svc = f.svc
			}
			v, err := svc.Submit(ctx, agent, tc.raw, true)
			if err != nil {
				t.Fatal(err)
			}
			if v.Verdict != gate.Kill || v.Reason != tc.want || v.Claim != nil {
				t.Fatalf("%+v, want kill %s", v, tc.want)
			}
			// A resume of a write still held says how its hold stands.
			if held := tc.want == gate.ResumeNoStandingVerdict; (v.Hold != nil) != held || (held && v.Hold.State != gate.HoldPending) {
				t.Fatalf("hold status %+v on a %s refusal", v.Hold, tc.want)
			}
		})
	}
	// Equivalent content resumes: the standing pass is claimed.
	v := f.submit(action("night", "po-1", "refund", 20, "c1", true), true)
	if v.Verdict != gate.Pass || v.Claim == nil {
		t.Fatalf("matching resume: %+v", v)
	}
}

// Exactly one of competing claims is granted. The others are refused
// but leave the claim alone: its holder may still be writing, so the
// action is not unconfirmed, operators do not see it and cannot settle
// it, and no second claim is granted, until the claim timeout passes.
func TestClaimOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{ClaimTimeout: time.Minute})
	f.open("s1", 300, false)
	if v := f.submit(action("s1", "a1", "refund", 20, "c1", false), false); v.Verdict != gate.Pass {
		t.Fatal(v)
	}
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "a1"})
			if err != nil {
				t.Error(err)
				return
			}
			switch cl.Status {
			case gate.ClaimGranted:
				granted.Add(1)
			case gate.ClaimExecutionUnconfirmed:
			default:
				t.Errorf("a competing claim answered %+v", cl)
			}
		})
	}
	wg.Wait()
	if granted.Load() != 1 {
		t.Fatalf("%d claims granted, want 1", granted.Load())
	}
	// A retried submit of the claimed action is refused the same way.
	if v := f.submit(action("s1", "a1", "refund", 20, "c1", true), true); v.Verdict != gate.ExecutionUnconfirmed || v.Claim != nil {
		t.Fatalf("a resume during the live claim: %+v, want execution_unconfirmed", v)
	}
	live := func(when string, want gate.ActionState, listed int) {
		t.Helper()
		rec, err := f.store.GetAction(ctx, "acme", "s1", "a1")
		if err != nil || rec.State != want || rec.FencingToken != 1 {
			t.Fatalf("%s: %s with token %d (%v), want %s with token 1", when, rec.State, rec.FencingToken, err, want)
		}
		list, err := f.svc.List(ctx, "acme", nil, "", 0)
		if err != nil || len(list.Actions) != listed {
			t.Fatalf("%s: the operator list has %d actions (%v), want %d", when, len(list.Actions), err, listed)
		}
	}
	live("after competing claims", gate.ActionClaimed, 0)
	for _, d := range []gate.OperatorDecisionKind{gate.DecisionConfirmNotExecuted, gate.DecisionConfirmExecuted} {
		_, err := f.svc.Decide(ctx, "acme", "s1", "a1", gate.OperatorDecision{Decision: d}, "ops")
		if !errors.Is(err, gate.ErrConflict) || !strings.Contains(err.Error(), "claim timeout (1m0s) has passed") {
			t.Fatalf("%s on a live claim: %v, want a conflict naming the claim timeout", d, err)
		}
	}
	f.clk.add(time.Minute - time.Millisecond)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "a1"}); err != nil || cl.Status != gate.ClaimExecutionUnconfirmed {
		t.Fatalf("a claim just inside the timeout: %+v, %v", cl, err)
	}
	live("just inside the claim timeout", gate.ActionClaimed, 0)
	f.clk.add(time.Millisecond)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	live("once the claim timed out", gate.ActionUnconfirmed, 1)
	// The operator says it did not run: a new claim gets a new token and
	// the old one can no longer acknowledge.
	if _, err := f.svc.Decide(ctx, "acme", "s1", "a1", gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted}, "ops"); err != nil {
		t.Fatal(err)
	}
	cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "a1"})
	if err != nil || cl.Status != gate.ClaimGranted || cl.FencingToken != 2 {
		t.Fatalf("claim after confirm-not-executed: %+v, %v", cl, err)
	}
	if _, err := f.svc.Ack(ctx, agent, gate.AckRequest{SessionID: "s1", ActionID: "a1", FencingToken: 1}); !errors.Is(err, ErrNotClaimable) {
		t.Fatalf("ack with the stale token: %v", err)
	}
	if _, err := f.svc.Ack(ctx, agent, gate.AckRequest{SessionID: "s1", ActionID: "a1", FencingToken: 2}); err != nil {
		t.Fatal(err)
	}
	verifyAudit(t, f.store)
}

// Confirming a claim that timed out does not wait for the sweeper; a
// claimed-again action past the timeout goes to operators at once.
func TestStaleClaimWithoutSweep(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{ClaimTimeout: time.Minute})
	f.open("s1", 300, false)
	for _, id := range []string{"a1", "a2"} {
		if v := f.submit(action("s1", id, "refund", 20, "c1", false), true); v.Claim == nil {
			t.Fatal(v)
		}
	}
	f.clk.add(time.Minute)
	rec, err := f.svc.Decide(ctx, "acme", "s1", "a1", gate.OperatorDecision{Decision: gate.DecisionConfirmExecuted}, "ops")
	if err != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("confirm past the claim timeout: %s, %v", rec.State, err)
	}
	cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "a2"})
	if err != nil || cl.Status != gate.ClaimExecutionUnconfirmed {
		t.Fatalf("claim past the timeout: %+v, %v", cl, err)
	}
	if rec, err := f.store.GetAction(ctx, "acme", "s1", "a2"); err != nil || rec.State != gate.ActionUnconfirmed {
		t.Fatalf("after a claim past the timeout: %s, %v; want unconfirmed", rec.State, err)
	}
}

// fakeJudge answers with a fixed verdict or error.
type fakeJudge struct {
	v   *judge.Verdict
	err error
	n   atomic.Int32
}

func (j *fakeJudge) Judge(ctx context.Context, req judge.Request) (*judge.Verdict, error) {
	j.n.Add(1)
	return j.v, j.err
}

func TestJudgeLayer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		j      *fakeJudge
		amount float64
		want   gate.Outcome
		why    gate.Reason
		rule   string
		asked  bool
	}{
		{"escalates a pass to hold", &fakeJudge{v: &judge.Verdict{Verdict: "hold", RuleIDCited: "tone", Rationale: "threat in ticket"}}, 10, gate.Hold, "", "tone", true},
		{"never lowers a hold", &fakeJudge{v: &judge.Verdict{Verdict: "pass", Rationale: "fine"}}, 900, gate.Hold, "", "big-refund", true},
		{"timeout fails closed", &fakeJudge{err: &judge.Error{Failure: judge.Unavailable, Err: context.DeadlineExceeded}}, 10, gate.Kill, gate.ReasonJudgeTimeout, "", true},
		{"error fails closed", &fakeJudge{err: &judge.Error{Failure: judge.Unavailable, Err: errors.New("429")}}, 10, gate.Kill, gate.ReasonJudgeError, "", true},
		{"malformed fails closed", &fakeJudge{err: &judge.Error{Failure: judge.Malformed, Err: judge.ErrMalformed}}, 10, gate.Kill, gate.ReasonJudgeMalformed, "", true},
		{"refusal fails closed", &fakeJudge{err: &judge.Error{Failure: judge.Refused, Err: errors.New("refused")}}, 10, gate.Kill, gate.ReasonJudgeRefused, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &Options{Judge: tc.j, JudgeModel: "fake"})
			f.rules(refundRules)
			f.open("s1", 300, false)
			v := f.submit(action("s1", "a1", "refund", tc.amount, "c1", false), true)
			if v.Verdict != tc.want || v.Reason != tc.why || (tc.rule != "" && v.RuleIDCited != tc.rule) {
				t.Fatalf("%+v, want %s %s %s", v, tc.want, tc.why, tc.rule)
			}
			if (tc.j.n.Load() > 0) != tc.asked {
				t.Fatalf("judge asked %d times", tc.j.n.Load())
			}
		})
	}
}

func TestRulesUnavailable(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	// A set stored by an older release that no longer compiles.
	if _, err := f.store.PutRuleSet(ctx, gate.RuleSetRecord{TenantID: "acme", Body: []byte(`{"rules":[{"id":"x","text":"x","when":"nosuchvar > 1","verdict":"kill"}]}`),
		Hash: "h", CreatedAt: f.clk.now()}); err != nil {
		t.Fatal(err)
	}
	v := f.submit(action("s1", "a1", "refund", 1, "c1", false), true)
	if v.Verdict != gate.Kill || v.Reason != gate.ReasonRulesUnavailable || v.Claim != nil {
		t.Fatalf("%+v", v)
	}
}

func TestRuleCostLimit(t *testing.T) {
	// The load-time estimate assumes 16 reads; this write brings 200.
	f := newFixture(t, &Options{Rules: &rules.Options{CostLimit: 200, SizeHint: 16}})
	f.rules(`{"rules":[{"id":"loop","text":"x","when":"evidence.exists(e, e.seq > 100000)","verdict":"hold"}]}`)
	f.open("s1", 300, false)
	a := gate.Action{ActionID: "a1", ActionType: "refund", TenantID: "acme", TeamID: "support", AgentID: "refund-bot", SessionID: "s1",
		Reasoning: "r", Context: gate.GenericContext{RecordID: "r1"}}
	for i := range 200 {
		a.Evidence = append(a.Evidence, gate.Evidence{Tool: "t", Provenance: gate.Provenance{Sequence: i + 1, ObservedAt: time.Now()}})
	}
	raw, _ := json.Marshal(a)
	v := f.submit(raw, true)
	if v.Verdict != gate.Kill || v.Reason != gate.ReasonRuleError || v.RuleIDCited != "loop" {
		t.Fatalf("%+v, want a fail-closed rule error", v)
	}
}

func verifyAudit(t *testing.T, store gate.Store) {
	t.Helper()
	ctx := context.Background()
	v := gate.NewAuditVerifier()
	var after int64
	for {
		page, err := store.Audit(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if err := v.Add(e); err != nil {
				t.Fatal(err)
			}
			after = e.Seq
		}
		if len(page) < 1000 {
			break
		}
	}
	seq, hash, err := store.AuditHead(ctx)
	if err != nil || seq != v.Verified() || hash != v.Head() {
		t.Fatalf("head %d %s, verified %d %s (%v)", seq, hash, v.Verified(), v.Head(), err)
	}
}

// The sweeper settles what no waiter did: holds past their window fail
// closed, and claims unacknowledged past the claim timeout go to an
// operator as unconfirmed. Younger ones are left alone.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{ClaimTimeout: time.Minute})
	f.rules(refundRules)
	f.open("s1", 60, false)
	f.submit(action("s1", "old-hold", "refund", 900, "c1", false), false)
	f.submit(action("s1", "old-claim", "refund", 10, "c2", false), true)
	f.clk.add(30 * time.Second)
	f.submit(action("s1", "new-hold", "refund", 900, "c3", false), false)
	f.submit(action("s1", "new-claim", "refund", 10, "c4", false), true)
	f.clk.add(40 * time.Second)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]gate.ActionState{
		"old-hold": gate.ActionExpired, "old-claim": gate.ActionUnconfirmed,
		"new-hold": gate.ActionHeld, "new-claim": gate.ActionClaimed,
	} {
		rec, err := f.store.GetAction(ctx, "acme", "s1", id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != want {
			t.Errorf("%s: %s, want %s", id, rec.State, want)
		}
		if id == "old-hold" && rec.Reason != gate.ReasonOperatorTimeout {
			t.Errorf("old-hold: reason %q", rec.Reason)
		}
	}
	verifyAudit(t, f.store)
}

// An action's floor raises the verdict the rules reach, never lowers it,
// and is recorded in the decision.
func TestFloor(t *testing.T) {
	ctx := context.Background()
	withFloor := func(raw []byte, floor gate.Outcome) []byte {
		var a gate.Action
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		a.Floor = floor
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		amount float64
		floor  gate.Outcome
		want   gate.Outcome
		rule   string
	}{
		{"a hold floor holds what the rules pass", 20, gate.Hold, gate.Hold, FloorRule},
		{"a pass floor changes nothing", 20, gate.Pass, gate.Pass, ""},
		{"a hold floor leaves a rule's hold citing the rule", 900, gate.Hold, gate.Hold, "big-refund"},
		{"a kill floor kills", 20, gate.Kill, gate.Kill, FloorRule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.rules(refundRules)
			f.open("s1", 300, false)
			v := f.submit(withFloor(action("s1", "a1", "refund", tc.amount, "c1", false), tc.floor), true)
			if v.Verdict != tc.want || v.RuleIDCited != tc.rule {
				t.Fatalf("verdict %+v, want %s citing %q", v, tc.want, tc.rule)
			}
			if tc.want != gate.Pass && v.Claim != nil {
				t.Fatalf("a %s was claimed: %+v", tc.want, v)
			}
			rec, err := f.store.GetAction(ctx, "acme", "s1", "a1")
			if err != nil {
				t.Fatal(err)
			}
			var d gate.Decision
			if err := json.Unmarshal(rec.Decision, &d); err != nil {
				t.Fatal(err)
			}
			if raised := tc.rule == FloorRule; raised != (d.Floor != "") {
				t.Fatalf("decision floor %q; raised %v", d.Floor, raised)
			}
		})
	}
	t.Run("an unknown floor is refused", func(t *testing.T) {
		f := newFixture(t, nil)
		f.open("s1", 300, false)
		_, err := f.svc.Submit(ctx, agent, withFloor(action("s1", "a1", "refund", 1, "c1", false), "maybe"), true)
		if !errors.Is(err, ErrBadRequest) {
			t.Fatalf("err %v, want ErrBadRequest", err)
		}
	})
}
