package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/gate"
)

// A skill passes its *agent.Context to From and the Agent* helpers.
var (
	_ gate.Execution    = (*agent.Context)(nil)
	_ gate.ToolReporter = (*agent.Context)(nil)
)

// A skill governs its tools with nothing but its execution: gate.From
// takes the token and the gate's URL from the platform context, and each
// wrapped call is both reported as tool-call-v1 and gated.
func TestAgentAdapter(t *testing.T) {
	t.Setenv(gate.URLEnv, "")
	f := newFake(t, map[string]handler{
		"POST /actions": seq(passClaimed(1), verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: "CS-1", Rationale: "open dispute"})),
		"POST /acks":    ackOK,
	})
	md := map[string]any{agent.ContextMetadataKey: map[string]any{"run_id": "run-1", "execution_token": testToken, "gateway_url": f.srv.URL}}
	send := serveSkill(t, func(c *agent.Context) (agent.Result, error) {
		cl, err := gate.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		lookup := gate.AgentRead(c, "lookup_customer", func(ctx context.Context, id string) (string, error) { return "2 disputes", nil })
		write := gate.AgentWrite(c, cl, "issue_refund", gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
			func(ctx context.Context, r refund) (string, error) { return "refunded", nil })
		var second error
		err = cl.Run(c, fresh, func(ctx context.Context) error {
			if _, err := lookup(ctx, "cust-1"); err != nil {
				return err
			}
			if _, err := write(ctx, refund{Customer: "cust-1", Amount: 10}); err != nil {
				return err
			}
			_, second = write(ctx, refund{Customer: "cust-1", Amount: 20})
			return nil
		})
		var k *gate.KillError
		return agent.Result{Output: map[string]any{"run": err == nil, "killed": errors.As(second, &k) && k.RuleIDCited == "CS-1"}}, nil
	})
	task, calls := send(md)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s: %+v", task.Status.State, task.Status.Message)
	}
	var out struct{ Run, Killed bool }
	for _, p := range task.Artifacts[0].Parts {
		if p.Data != nil {
			json.Unmarshal(p.Data, &out)
		}
	}
	if !out.Run || !out.Killed {
		t.Fatalf("skill output %+v", out)
	}
	want := "lookup_customer started|lookup_customer completed|issue_refund started|issue_refund completed|issue_refund started|issue_refund failed"
	if got := phases(calls); got != want {
		t.Fatalf("tool-call events %s, want %s", got, want)
	}
	if !strings.Contains(calls[5].Error, "CS-1") {
		t.Fatalf("the stopped call's report: %q", calls[5].Error)
	}
	// The read's evidence carries the reported call id.
	first := f.all()
	for _, c := range first {
		if c.path == "/actions" {
			a := action(t, c.body)
			if len(a.Evidence) != 1 || a.Evidence[0].Provenance.CallID != calls[0].ToolCallID {
				t.Fatalf("evidence %+v, reported call id %q", a.Evidence, calls[0].ToolCallID)
			}
			break
		}
	}

	// Without an execution token, From refuses before any request.
	task, _ = send(map[string]any{agent.ContextMetadataKey: map[string]any{"gateway_url": f.srv.URL}})
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(task.Status.Message.Text(), "fail_closed_config") {
		t.Fatalf("no token: %s %+v", task.Status.State, task.Status.Message)
	}
}

// At a skill's tool seam, every call is reported as tool-call-v1: a passed
// write completes with the tool's answer, a denied one completes with the
// blocked result the model reads, a kill fails and halts.
func TestAgentSeam(t *testing.T) {
	held := verdict(gate.Verdict{Verdict: gate.Hold, RuleIDCited: "CS-2", Rationale: "fourth refund this week", Hold: pending(60)})
	f := newFake(t, map[string]handler{
		"POST /actions": seq(passClaimed(1), held, verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: "CS-1", Rationale: "open dispute"})),
		"POST /actions/wait": verdict(gate.Verdict{Verdict: gate.Kill, RuleIDCited: "CS-2", Rationale: "fourth refund this week",
			Reason: gate.ReasonOperatorDenied}),
		"POST /acks": ackOK,
	})
	var ran int
	send := serveSkill(t, func(c *agent.Context) (agent.Result, error) {
		cl, err := gate.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		g := &gate.ToolGate{Client: cl, Kinds: map[string]gate.ToolKind{"issue_refund": gate.ToolWrite},
			Writes: map[string]gate.WriteSpecJSON{"issue_refund": {ActionType: "issue_refund",
				Context: func(args json.RawMessage) (gate.Context, error) {
					var a refund
					if err := json.Unmarshal(args, &a); err != nil {
						return nil, err
					}
					return refundContext(a)
				}}}}
		call := g.AgentSeam(c)
		next := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			ran++
			return json.RawMessage(`{"refunded":true}`), nil
		}
		var results []string
		var halt error
		err = cl.Run(c, fresh, func(ctx context.Context) error {
			for _, amount := range []string{"10", "20", "30"} {
				res, err := call(ctx, "issue_refund", json.RawMessage(`{"customer":"cust-1","amount":`+amount+`}`), next)
				if err != nil {
					halt = err
					return nil
				}
				results = append(results, fmt.Sprintf("blocked=%v", res.Blocked))
			}
			return nil
		})
		return agent.Result{Output: map[string]any{"results": strings.Join(results, ","), "halted": gate.Halts(halt), "run": err == nil}}, nil
	})
	task, calls := send(map[string]any{agent.ContextMetadataKey: map[string]any{"run_id": "run-1", "execution_token": testToken, "gateway_url": f.srv.URL}})
	var out struct {
		Results     string
		Halted, Run bool
	}
	for _, p := range task.Artifacts[0].Parts {
		if p.Data != nil {
			json.Unmarshal(p.Data, &out)
		}
	}
	if out.Results != "blocked=false,blocked=true" || !out.Halted || !out.Run || ran != 1 {
		t.Fatalf("skill output %+v, tool ran %d times; want a run, a blocked result, then a halt", out, ran)
	}
	want := "issue_refund started|issue_refund completed|issue_refund started|issue_refund completed|issue_refund started|issue_refund failed"
	if got := phases(calls); got != want {
		t.Fatalf("tool-call events %s, want %s", got, want)
	}
	if r, _ := json.Marshal(calls[1].Result); string(r) != `{"refunded":true}` {
		t.Fatalf("the passed call's reported result: %s", r)
	}
	if r, _ := json.Marshal(calls[3].Result); !strings.Contains(string(r), `"blocked":true`) || !strings.Contains(string(r), "operator_denied") {
		t.Fatalf("the denied call's reported result: %s", r)
	}
	if !strings.Contains(calls[5].Error, "CS-1") {
		t.Fatalf("the killed call's report: %q", calls[5].Error)
	}
}

// serveSkill serves fn as the only skill of an agent declaring
// tool-call-v1, and returns a sender: one message with metadata md, the
// task it ends as, and the tool-call events in its history.
func serveSkill(t *testing.T, fn func(c *agent.Context) (agent.Result, error)) func(md map[string]any) (*a2a.Task, []toolcall.Payload) {
	t.Helper()
	a := agent.New("refunds", "1.0.0", &agent.Options{Extensions: []a2a.AgentExtension{toolcall.Declaration()}})
	if err := a.Register(agent.Skill{ID: "refund", Handler: fn}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	srv.Config.Handler = a.Handler(srv.URL, nil)
	cl, err := a2aclient.NewForURL(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(md map[string]any) (*a2a.Task, []toolcall.Payload) {
		t.Helper()
		resp, err := cl.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("refund")), Metadata: md})
		if err != nil || resp.Task == nil {
			t.Fatalf("send: %+v, %v", resp, err)
		}
		var calls []toolcall.Payload
		for _, m := range resp.Task.History {
			if p, ok, _ := toolcall.Parse(m.Metadata); ok {
				calls = append(calls, p)
			}
		}
		return resp.Task, calls
	}
}

// phases lists tool-call events as "name phase|…".
func phases(calls []toolcall.Payload) string {
	var got []string
	for _, p := range calls {
		got = append(got, p.Name+" "+string(p.Phase))
	}
	return strings.Join(got, "|")
}
