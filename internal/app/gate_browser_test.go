package app_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/gatesvc/triage/triagetest"
	"novaos.dev/novaos/secret"
)

// An operator approves one held write and denies another on the triage
// page, in headless Chromium, while the SDK calls that made them wait;
// the approved write runs once, the denied one never.
func TestGateTriagePageDrivesWaitingWrites(t *testing.T) {
	// Long-polls of two minutes: a decision that did not wake the write
	// would leave it waiting that long.
	srv := start(t, &app.Options{DataDir: t.TempDir(), Gate: app.GateOptions{MaxWait: 2 * time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mint := func(scopes ...string) secret.Value {
		tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "refund-bot", Subject: "ops@acme", Scopes: scopes}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return secret.New(tok)
	}
	admin, err := gate.NewClient(gate.Config{URL: srv.URL(), Token: mint(gate.ScopeAdmin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutRules(ctx, gate.RuleSetDocument{Rules: []gate.RuleDocument{{ID: "big-refund",
		Text: "Hold refunds over 500 for a person.", When: "ctx.amount > 500.0", Verdict: gate.Hold}}}); err != nil {
		t.Fatal(err)
	}
	agent, err := gate.NewClient(gate.Config{URL: srv.URL(), Token: mint(gate.ScopeSubmit)}, &gate.ClientOptions{WaitPoll: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	refund := gate.Write(agent, gate.WriteSpec[string]{
		ActionType: "refund",
		Context: func(id string) (gate.Context, error) {
			amount := 900.0
			return gate.CSContext{CustomerID: "c-" + id, Amount: &amount}, nil
		},
		ActionID: func(id string) (string, error) { return id, nil },
	}, func(ctx context.Context, id string) (string, error) {
		ran.Add(1)
		return "refunded " + id, nil
	})
	results := map[string]chan error{}
	for _, id := range []string{"approve-me", "deny-me"} {
		ch := make(chan error, 1)
		results[id] = ch
		go func() {
			ch <- agent.Run(ctx, gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot", ID: "s-" + id},
				func(ctx context.Context) error {
					_ = gate.SetReasoning(ctx, "The customer was charged twice.")
					_, err := refund(ctx, id)
					return err
				})
		}()
	}

	b := triagetest.NewBrowser(t, srv.URL()+app.TriagePath)
	b.Login(mint(gate.ScopeOperate).Reveal())
	for _, tc := range []struct {
		id   string
		kind gate.OperatorDecisionKind
	}{{"approve-me", gate.DecisionApprove}, {"deny-me", gate.DecisionDeny}} {
		b.WaitForAction("s-"+tc.id, tc.id)
		b.Open("s-"+tc.id, tc.id)
		decided := time.Now()
		b.Decide(tc.kind, "checked the ledger")
		select {
		case err := <-results[tc.id]:
			var kill *gate.KillError
			switch {
			case tc.kind == gate.DecisionApprove && err != nil:
				t.Fatalf("approved write: %v", err)
			case tc.kind == gate.DecisionDeny && (!errors.As(err, &kill) || kill.Reason != gate.ReasonOperatorDenied):
				t.Fatalf("denied write: %v, want a KillError with %s", err, gate.ReasonOperatorDenied)
			}
		case <-time.After(30 * time.Second): // the decision did not wake the write
			t.Fatalf("%s: the write still waits %v after the decision", tc.id, time.Since(decided))
		}
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("%d writes ran, want exactly the approved one", n)
	}
}
