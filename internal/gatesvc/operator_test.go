package gatesvc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// A session gets the smaller of the deployment's window and its own, or
// the deployment's (indefinite included) when it adopts it.
func TestGrantWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deployment time.Duration
		indefinite bool
		req        gate.SessionRequest
		window     time.Duration
		forever    bool
	}{
		{"declared under the deployment's", time.Hour, false, gate.SessionRequest{MaxHoldS: 90.5}, 90500 * time.Millisecond, false},
		{"declared over the deployment's", time.Minute, false, gate.SessionRequest{MaxHoldS: 61}, time.Minute, false},
		{"declared as the deployment's", time.Minute, false, gate.SessionRequest{MaxHoldS: 60}, time.Minute, false},
		{"declared under an indefinite deployment", 0, true, gate.SessionRequest{MaxHoldS: 3600}, time.Hour, false},
		{"adopting a finite window", 7 * time.Minute, false, gate.SessionRequest{AdoptDeploymentWindow: true}, 7 * time.Minute, false},
		{"adopting an indefinite one", 0, true, gate.SessionRequest{AdoptDeploymentWindow: true}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(openStore(t), &Options{HoldWindow: tc.deployment, HoldIndefinite: tc.indefinite})
			w, forever := s.grantWindow(tc.req)
			if w != tc.window || forever != tc.forever {
				t.Fatalf("granted %v (indefinite %v), want %v (%v)", w, forever, tc.window, tc.forever)
			}
		})
	}
}

// Pages are as long as asked, up to 500; a bad or absent limit is 100.
func TestListPageSizes(t *testing.T) {
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	for i := range 502 {
		f.submit(action("s1", fmt.Sprint("a", i), "refund", 10, "c1", false), false)
	}
	for _, tc := range []struct{ limit, want int }{{500, 500}, {501, 100}, {0, 100}, {-1, 100}, {1, 1}} {
		page, err := f.svc.List(context.Background(), "acme", []gate.ActionState{gate.ActionPassed}, "", tc.limit)
		if err != nil || len(page.Actions) != tc.want || page.Next == "" {
			t.Fatalf("limit %d: %d actions, next %q (%v); want %d and a next page", tc.limit, len(page.Actions), page.Next, err, tc.want)
		}
	}
	if _, err := f.svc.List(context.Background(), "acme", nil, "not-a-cursor", 0); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("a bad cursor: %v", err)
	}
	page, err := f.svc.List(context.Background(), "acme", nil, "", 0)
	if err != nil || page.Actions == nil || len(page.Actions) != 0 || page.Next != "" {
		t.Fatalf("nothing held: %+v, %v; want an empty list, no next page", page, err)
	}
}

// An operator's decision is recorded as made: a deny keeps its note,
// and confirming a held write not executed returns it to approved.
func TestOperatorDecisions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{ClaimTimeout: time.Minute})
	f.rules(refundRules)
	f.open("s1", 300, false)
	for _, id := range []string{"d1", "d2", "h1"} {
		f.submit(action("s1", id, "refund", 900, "c"+id, false), false)
	}
	f.submit(action("s1", "p1", "refund", 10, "cp", false), true)
	rec, err := f.svc.Decide(ctx, "acme", "s1", "d1", gate.OperatorDecision{Decision: gate.DecisionDeny, Note: "no receipt"}, "ops@acme")
	if err != nil || rec.State != gate.ActionDenied || rec.Reason != gate.ReasonOperatorDenied || rec.Rationale != "denied by an operator: no receipt" || rec.DecidedBy != "ops@acme" {
		t.Fatalf("deny with a note: %+v, %v", rec, err)
	}
	rec, err = f.svc.Decide(ctx, "acme", "s1", "d2", gate.OperatorDecision{Decision: gate.DecisionDeny}, "ops@acme")
	if err != nil || rec.Rationale != "Hold refunds over 500." {
		t.Fatalf("deny without a note keeps the rule's rationale: %q, %v", rec.Rationale, err)
	}
	if _, err := f.svc.Decide(ctx, "acme", "s1", "h1", gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops"); err != nil {
		t.Fatal(err)
	}
	if cl, err := f.svc.Claim(ctx, agent, gate.ClaimRequest{SessionID: "s1", ActionID: "h1"}); err != nil || cl.Status != gate.ClaimGranted {
		t.Fatalf("claim h1: %+v, %v", cl, err)
	}
	f.clk.add(time.Minute) // both claims (p1's came with its submit) time out
	for id, want := range map[string]gate.ActionState{"h1": gate.ActionApproved, "p1": gate.ActionPassed} {
		rec, err := f.svc.Decide(ctx, "acme", "s1", id, gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted}, "ops")
		if err != nil || rec.State != want || !rec.ClaimedAt.IsZero() {
			t.Fatalf("%s confirmed not executed: %s claimed at %v (%v), want %s and no claim", id, rec.State, rec.ClaimedAt, err, want)
		}
	}
	if _, err := f.svc.Decide(ctx, "acme", "s1", "d1", gate.OperatorDecision{Decision: gate.DecisionConfirmExecuted}, "ops"); !errors.Is(err, gate.ErrConflict) {
		t.Fatalf("confirm a denied action: %v", err)
	}
	if _, err := f.svc.Decide(ctx, "acme", "s1", "d1", gate.OperatorDecision{Decision: "maybe"}, "ops"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("an unknown decision: %v", err)
	}
	if _, err := f.svc.Decide(ctx, "", "s1", "d1", gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("no tenant: %v", err)
	}
	verifyAudit(t, f.store)
}

// Down for exactly the restart grace keeps the holds.
func TestRestartAtGrace(t *testing.T) {
	f := newFixture(t, &Options{HoldIndefinite: true, RestartGrace: time.Minute})
	f.rules(refundRules)
	f.open("s1", -1, true)
	f.submit(action("s1", "big", "refund", 900, "c1", false), false)
	for _, tc := range []struct {
		down time.Duration
		want gate.ActionState
	}{{time.Minute, gate.ActionHeld}, {time.Minute + time.Millisecond, gate.ActionExpired}} {
		f.clk.add(tc.down)
		f.restart(&Options{HoldIndefinite: true, RestartGrace: time.Minute})
		rec, err := f.store.GetAction(context.Background(), "acme", "s1", "big")
		if err != nil || rec.State != tc.want {
			t.Fatalf("after %v down: %s (%v), want %s", tc.down, rec.State, err, tc.want)
		}
	}
}

// A session ends completed or suspended, nothing else.
func TestEndSessionStates(t *testing.T) {
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	for _, tc := range []struct {
		state string
		ok    bool
	}{{"open", false}, {"bogus", false}, {"suspended", true}, {"completed", true}} {
		err := f.svc.EndSession(context.Background(), agent, gate.SessionEnd{SessionID: "s1", State: gate.SessionEndState(tc.state)})
		if (err == nil) != tc.ok || (!tc.ok && !errors.Is(err, ErrBadRequest)) {
			t.Fatalf("end %s: %v", tc.state, err)
		}
		if sess, err := f.store.GetSession(context.Background(), "acme", "s1"); tc.ok && (err != nil || string(sess.State) != tc.state) {
			t.Fatalf("after end %s: %s, %v", tc.state, sess.State, err)
		}
	}
}

// An empty audit chain is an empty list, never null.
func TestAuditEmpty(t *testing.T) {
	f := newFixture(t, nil)
	page, err := f.svc.Audit(context.Background(), 0, 10)
	if err != nil || page.Entries == nil || len(page.Entries) != 0 || page.HeadSeq != 0 {
		t.Fatalf("%+v, %v", page, err)
	}
}

// Zero or negative options mean the defaults; set ones are kept.
func TestOptionDefaults(t *testing.T) {
	store := openStore(t)
	def := Options{HoldWindow: DefaultHoldWindow, RestartGrace: DefaultRestartGrace, ClaimTimeout: DefaultClaimTimeout,
		CommitmentVersion: DefaultCommitmentVersion, MaxWait: DefaultMaxWait, RuleRefresh: DefaultRuleRefresh, SweepEvery: DefaultSweepEvery}
	set := Options{HoldWindow: 1, RestartGrace: 2, ClaimTimeout: 3, CommitmentVersion: "7", MaxWait: 4, RuleRefresh: 5, SweepEvery: 6}
	for _, tc := range []struct {
		name string
		in   *Options
		want Options
	}{
		{"nil", nil, def},
		{"zero", &Options{}, def},
		{"negative", &Options{HoldWindow: -1, RestartGrace: -1, ClaimTimeout: -1, MaxWait: -1, RuleRefresh: -1, SweepEvery: -1}, def},
		{"set", &set, set},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := New(store, tc.in).o
			got := Options{HoldWindow: o.HoldWindow, RestartGrace: o.RestartGrace, ClaimTimeout: o.ClaimTimeout,
				CommitmentVersion: o.CommitmentVersion, MaxWait: o.MaxWait, RuleRefresh: o.RuleRefresh, SweepEvery: o.SweepEvery}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("options %+v, want %+v", got, tc.want)
			}
			if o.Now == nil || o.Logger == nil {
				t.Fatal("no clock or logger")
			}
		})
	}
}

// A hold the sweeper expires wakes its long-polls at once: with the
// re-read an hour away, only the wake-up ends the wait in time.
func TestExpiryWakesWaiters(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{MaxWait: time.Hour})
	f.svc.recheck = time.Hour
	f.rules(refundRules)
	f.open("s1", 3600, false)
	f.submit(action("s1", "big", "refund", 900, "c1", false), false)
	done := make(chan gate.Verdict, 1)
	go func() {
		v, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big"})
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	waitUntil(t, "the long-poll to wait", func() bool { return f.svc.waiting("s1", "big") })
	f.clk.add(time.Hour)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		if v.Verdict != gate.Kill || v.Reason != gate.ReasonOperatorTimeout {
			t.Fatalf("wait: %+v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the expiry did not wake the long-poll")
	}
	// The verdict stands under this release's commitment version.
	if rec, err := f.store.GetAction(ctx, "acme", "s1", "big"); err != nil || rec.CommitmentVersion != DefaultCommitmentVersion {
		t.Fatalf("commitment version %q, %v", rec.CommitmentVersion, err)
	}
}
