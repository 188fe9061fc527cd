package adapter

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// checkFinish is a finishRun the test platform received.
type checkFinish struct {
	path, token string
	body        delivery.RunFinish
}

// What the adapter does with a delivered token-bearing event, per
// verdict: which delivery it stores (accepted with the token's id and
// times, or closed with the refusal's exact reason), whether the event is
// settled, and the finishRun it sends — exactly one for a refused start,
// with that reason and the refused token, none otherwise.
func TestAdapterCheckVerdicts(t *testing.T) {
	leeway := DefaultSettings().InvocationTokenLeeway
	exp := verifyT0.Add(5 * time.Minute)
	mint := func(claims func(map[string]any), kid string, key ed25519.PrivateKey) string {
		h, c := verifyHeaderMap(), verifyClaimsMap()
		h["kid"] = kid
		if claims != nil {
			claims(c)
		}
		return verifyMint(t, h, c, verifySignEd(key))
	}
	valid := mint(nil, verifyKid, verifyPriv)
	tests := []struct {
		name    string
		token   string
		payload string // default: the invocation of run-1 the token names
		at      time.Duration
		stored  *InboxAccept // an entry stored before, of run-1
		moves   []InboxState // the stored entry's states after accepted
		evType  string       // default agent.invocation
		seen    bool         // the token's id is remembered
		finish  outboxAnswer // the platform's answer to finishRun
		// want
		accept   InboxState // "" when nothing is stored
		reason   string     // the close reason stored and sent
		settled  bool
		finishes int
	}{
		{name: "valid", token: valid, accept: InboxAccepted, settled: true},
		{name: "expired is accepted, renewed later", token: valid, at: time.Hour, accept: InboxAccepted, settled: true},
		{name: "unknown key comes again", token: mint(nil, "k-unknown", verifyPriv), settled: false},
		{name: "forged", token: mint(nil, verifyKid, verifyOther), accept: InboxClosed, reason: delivery.ReasonInvalidToken, settled: true, finishes: 1},
		{name: "no token", token: "", accept: InboxClosed, reason: delivery.ReasonInvalidToken, settled: true, finishes: 1},
		{name: "billing mismatch", token: mint(func(c map[string]any) { c["billing_mode"] = "agent" }, verifyKid, verifyPriv),
			accept: InboxClosed, reason: delivery.ReasonBillingModeMismatch, settled: true, finishes: 1},
		{name: "tool class mismatch", token: mint(func(c map[string]any) { c["tool_class"] = "nothing" }, verifyKid, verifyPriv),
			accept: InboxClosed, reason: delivery.ReasonToolClassMismatch, settled: true, finishes: 1},
		{name: "refused, the run ended already", token: mint(nil, verifyKid, verifyOther),
			finish: outboxAnswer{403, delivery.CodeInvocationTokenInvalid, delivery.RunInactive},
			accept: InboxClosed, reason: delivery.ReasonInvalidToken, settled: true, finishes: 1},
		{name: "refused, the run is unknown", token: mint(nil, verifyKid, verifyOther),
			finish: outboxAnswer{404, delivery.CodeNotFound, ""},
			accept: InboxClosed, reason: delivery.ReasonInvalidToken, settled: true, finishes: 1},
		{name: "refusing fails for now: comes again", token: mint(nil, verifyKid, verifyOther),
			finish: outboxAnswer{503, delivery.CodeUnavailable, ""}, settled: false, finishes: 1},
		{name: "refusing is refused: comes again", token: mint(nil, verifyKid, verifyOther),
			finish: outboxAnswer{403, delivery.CodeForbidden, ""}, settled: false, finishes: 1},
		{name: "invalid for a run already stored leaves the run alone", token: mint(nil, verifyKid, verifyOther),
			stored:  &InboxAccept{Event: delivery.Event{ID: "evt-0", Seq: 1, Type: delivery.EventInvocation}, RunID: "run-1"},
			settled: true},
		{name: "invalid answer to a run waiting for it refuses the run", token: mint(nil, verifyKid, verifyOther),
			evType: delivery.EventFollowup, payload: `{"run_id":"run-1","thread_id":"thr-1","message_id":"msg-2"}`,
			stored: &InboxAccept{Event: delivery.Event{ID: "evt-0", Seq: 1, Type: delivery.EventInvocation}, RunID: "run-1"},
			moves:  []InboxState{InboxStarted, InboxWaiting},
			accept: InboxClosed, reason: delivery.ReasonInvalidToken, settled: true, finishes: 1},
		{name: "invalid follow-up of a running run leaves it alone", token: mint(nil, verifyKid, verifyOther),
			evType: delivery.EventFollowup, payload: `{"run_id":"run-1","thread_id":"thr-1","message_id":"msg-2"}`,
			stored: &InboxAccept{Event: delivery.Event{ID: "evt-0", Seq: 1, Type: delivery.EventInvocation}, RunID: "run-1"},
			moves:  []InboxState{InboxStarted}, settled: true},
		{name: "malformed payload: no run to refuse", token: valid, payload: `{"run_id":1}`, settled: true},
		{name: "replay of a new event is held", token: valid, seen: true, settled: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var (
				mu       sync.Mutex
				finishes []checkFinish
			)
			srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, _ int, s clientSeen) {
				var f delivery.RunFinish
				_ = json.Unmarshal(s.Body, &f)
				mu.Lock()
				finishes = append(finishes, checkFinish{path: s.Path, token: s.Header.Get(delivery.InvocationTokenHeader), body: f})
				mu.Unlock()
				if tc.finish.status != 0 {
					clientWriteProblem(w, tc.finish.status, tc.finish.code, tc.finish.reason)
					return
				}
				clientWriteJSON(w, delivery.Run{ID: "run-1", State: delivery.RunFailed})
			})
			set := DefaultSettings()
			set.RetryMaxAttempts = 1
			clock := &verifyClock{now: verifyT0.Add(tc.at)}
			inbox := NewMemoryInbox(&InboxOptions{Clock: clock})
			if tc.stored != nil {
				if _, err := inbox.Accept(ctx, []InboxAccept{*tc.stored}); err != nil {
					t.Fatal(err)
				}
				from := InboxAccepted
				for _, to := range tc.moves {
					if err := inbox.SetState(ctx, tc.stored.Event.ID, from, to, ""); err != nil {
						t.Fatal(err)
					}
					from = to
				}
			}
			if tc.seen {
				if err := inbox.RememberJTI(ctx, "jti-0001", exp.Add(leeway)); err != nil {
					t.Fatal(err)
				}
			}
			keys := &verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}
			a := &Adapter{cfg: Config{AgentID: verifyAgent}, issuer: verifyIssuer, set: set, clock: clock,
				log: slog.New(slog.DiscardHandler), inbox: inbox, runs: map[string]*runTask{},
				api:    newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Settings: &set}),
				verify: NewVerifier(keys, &VerifierOptions{Clock: clock, Settings: &set, JTIs: inbox})}
			payload := tc.payload
			if payload == "" {
				payload = `{"trigger_kind":"message","run_id":"run-1","thread_id":"thr-1","message_id":"msg-1"}`
			}
			evType := tc.evType
			if evType == "" {
				evType = delivery.EventInvocation
			}
			ev := delivery.Event{ID: "evt-1", Seq: 2, Type: evType, Payload: json.RawMessage(payload), InvocationToken: tc.token}

			acc, settled := a.check(ctx, ev)
			if settled != tc.settled {
				t.Errorf("settled %v, want %v", settled, tc.settled)
			}
			switch {
			case tc.accept == "" && acc != nil:
				t.Errorf("stores %v, want nothing", acc.State)
			case tc.accept != "" && acc == nil:
				t.Errorf("stores nothing, want an entry %s", tc.accept)
			case acc != nil:
				if acc.Event.ID != "evt-1" || acc.RunID != "run-1" || acc.Token.Value.Reveal() != tc.token {
					t.Errorf("stores event %s of run %s with another token", acc.Event.ID, acc.RunID)
				}
				state := acc.State
				if state == "" {
					state = InboxAccepted
				}
				if state != tc.accept || acc.CloseReason != tc.reason {
					t.Errorf("stores %s (reason %q), want %s (reason %q)", state, acc.CloseReason, tc.accept, tc.reason)
				}
				if tc.accept == InboxAccepted {
					if acc.Token.JTI != "jti-0001" || !acc.Token.IssuedAt.Equal(verifyT0) || !acc.Token.ExpiresAt.Equal(exp) ||
						!acc.RememberUntil.Equal(exp.Add(leeway)) {
						t.Errorf("token id %q, iat %v, exp %v, remembered until %v; want jti-0001, %v, %v, %v",
							acc.Token.JTI, acc.Token.IssuedAt, acc.Token.ExpiresAt, acc.RememberUntil, verifyT0, exp, exp.Add(leeway))
					}
				} else if !acc.RememberUntil.IsZero() || acc.Token.JTI != "" {
					t.Error("a refused token's id is remembered")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(finishes) != tc.finishes {
				t.Fatalf("%d finishRun calls, want %d", len(finishes), tc.finishes)
			}
			sent := tc.reason
			if sent == "" {
				sent = delivery.ReasonInvalidToken // refusals that did not go through
			}
			for _, f := range finishes {
				if f.path != delivery.FinishRunPath("run-1") || f.body.State != delivery.RunFailed || f.body.Reason != sent {
					t.Errorf("finishRun %s %s reason %q, want run-1 failed, reason %q", f.path, f.body.State, f.body.Reason, sent)
				}
				if f.token != tc.token {
					t.Error("finishRun was not sent with the refused token")
				}
			}
		})
	}
}
