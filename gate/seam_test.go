package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/gate"
)

func TestToolGate(t *testing.T) {
	held := verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "CS-2", Rationale: "fourth refund this week", Hold: pending(60)})
	tests := []struct {
		name      string
		tool      string
		routes    map[string]handler
		wantRun   bool
		blocked   bool
		reason    gate.Reason // of the returned KillError
		errorKind string
	}{
		{"a read runs", "lookup_customer", nil, true, false, "", ""},
		{"a passed write runs", "issue_refund", map[string]handler{"POST /actions": passClaimed(3), "POST /acks": ackOK}, true, false, "", ""},
		{"a denied write is a blocked result", "issue_refund", map[string]handler{
			"POST /actions": held,
			"POST /actions/wait": verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: "CS-2", Rationale: "fourth refund this week",
				Reason: gate.ReasonOperatorDenied}),
		}, false, true, "", ""},
		{"a killed write halts", "issue_refund", map[string]handler{
			"POST /actions": verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: "CS-1", Rationale: "open dispute"}),
		}, false, false, "", "kill"},
		{"an expired hold halts", "issue_refund", map[string]handler{
			"POST /actions": held, "POST /actions/wait": verdict(gate.Verdict{Verdict: gate.Kill, Reason: gate.ReasonOperatorTimeout}),
		}, false, false, gate.ReasonOperatorTimeout, "kill"},
		{"a fail-closed write halts", "issue_refund", map[string]handler{"POST /actions": problem(503, "")}, false, false, gate.ReasonServerUnavailable, "kill"},
		{"an unknown tool fails closed", "drop_table", nil, false, false, gate.ReasonConfig, "kill"},
		{"a write without a spec fails closed", "send_email", nil, false, false, gate.ReasonConfig, "kill"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.routes)
			c, _ := f.client(nil)
			g := &gate.ToolGate{Client: c,
				Kinds: map[string]gate.ToolKind{"lookup_customer": gate.ToolRead, "issue_refund": gate.ToolWrite, "send_email": gate.ToolWrite},
				Writes: map[string]gate.WriteSpecJSON{"issue_refund": {ActionType: "issue_refund",
					Context: func(args json.RawMessage) (gate.Context, error) {
						var a refund
						if err := json.Unmarshal(args, &a); err != nil {
							return nil, err
						}
						return refundContext(a)
					}}},
			}
			var ran atomic.Int32
			next := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				ran.Add(1)
				return json.RawMessage(`{"ok":true}`), nil
			}
			var res gate.ToolResult
			var cerr error
			c.Run(context.Background(), fresh, func(ctx context.Context) error {
				res, cerr = g.Call(ctx, tt.tool, json.RawMessage(`{"customer":"cust-1","amount":30}`), next)
				return nil
			})
			if (ran.Load() == 1) != tt.wantRun {
				t.Fatalf("the tool ran %d times", ran.Load())
			}
			switch {
			case tt.errorKind == "kill":
				var k *gate.KillError
				if !errors.As(cerr, &k) || (tt.reason != "" && k.Reason != tt.reason) || !gate.Halts(cerr) {
					t.Fatalf("err = %v, want a halting KillError %q", cerr, tt.reason)
				}
			case tt.blocked:
				if cerr != nil || !res.Blocked || res.Denial == nil || !strings.Contains(res.Content, "operator_denied") ||
					!strings.Contains(res.Content, "fourth refund this week") || !strings.Contains(res.Content, "CS-2") {
					t.Fatalf("got %+v, %v; want a blocked result the model can read", res, cerr)
				}
			default:
				if cerr != nil || res.Blocked || res.Content != `{"ok":true}` {
					t.Fatalf("got %+v, %v", res, cerr)
				}
			}
		})
	}
}

// A read at the seam is evidence for the next write at the seam.
func TestToolGateReadIsEvidence(t *testing.T) {
	f := newFake(t, map[string]handler{"POST /actions": passClaimed(3), "POST /acks": ackOK})
	c, _ := f.client(nil)
	g := &gate.ToolGate{Client: c,
		Kinds: map[string]gate.ToolKind{"lookup": gate.ToolRead, "refund": gate.ToolWrite},
		Writes: map[string]gate.WriteSpecJSON{"refund": {ActionType: "issue_refund",
			Context: func(args json.RawMessage) (gate.Context, error) { return gate.GenericContext{RecordID: "c"}, nil },
			ActionID: func(args json.RawMessage) (string, error) {
				var a struct{ ID string }
				return a.ID, json.Unmarshal(args, &a)
			}}},
	}
	echo := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
		if _, err := g.Call(ctx, "lookup", json.RawMessage(`{"q":"c"}`), echo); err != nil {
			return err
		}
		_, err := g.Call(ctx, "refund", json.RawMessage(`{"ID":"r-1"}`), echo)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	a := action(t, f.last("POST /actions"))
	if a.ActionID != "r-1" || len(a.Evidence) != 1 || string(a.Evidence[0].Arguments) != `{"q":"c"}` || string(a.Evidence[0].Result) != `{"q":"c"}` {
		t.Fatalf("action %+v", a)
	}
}

func TestKillSafe(t *testing.T) {
	handle := gate.KillSafe(func(err error) string { return "tool error: " + err.Error() })
	ordinary := errors.New("timeout talking to CRM")
	if msg, err := handle(ordinary); err != nil || msg != "tool error: timeout talking to CRM" {
		t.Fatalf("ordinary error: %q, %v", msg, err)
	}
	for _, halt := range []error{
		gate.FailClosed(gate.ReasonJudgeTimeout, "a", "s", nil),
		fmt.Errorf("wrapped: %w", &gate.KillError{Verdict: gate.Kill, RuleIDCited: "R"}),
		&gate.PausedError{ActionID: "a"},
	} {
		if msg, err := handle(halt); err != halt || msg != "" {
			t.Fatalf("halt %v: swallowed into %q", halt, msg)
		}
	}
	if msg, _ := gate.KillSafe(nil)(ordinary); msg != ordinary.Error() {
		t.Fatal(msg)
	}
}
