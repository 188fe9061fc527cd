package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/gate"
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
	a := agent.New("refunds", "1.0.0", &agent.Options{Extensions: []a2a.AgentExtension{toolcall.Declaration()}})
	if err := a.Register(agent.Skill{ID: "refund", Handler: func(c *agent.Context) (agent.Result, error) {
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
	}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)
	cl, err := a2aclient.NewForURL(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]any{agent.ContextMetadataKey: map[string]any{"run_id": "run-1", "execution_token": testToken, "gateway_url": f.srv.URL}}
	resp, err := cl.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("refund")), Metadata: md})
	if err != nil || resp.Task == nil {
		t.Fatalf("send: %+v, %v", resp, err)
	}
	task := resp.Task
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
	var calls []toolcall.Payload
	for _, m := range task.History {
		if p, ok, _ := toolcall.Parse(m.Metadata); ok {
			calls = append(calls, p)
		}
	}
	var got []string
	for _, p := range calls {
		got = append(got, p.Name+" "+string(p.Phase))
	}
	want := "lookup_customer started|lookup_customer completed|issue_refund started|issue_refund completed|issue_refund started|issue_refund failed"
	if strings.Join(got, "|") != want {
		t.Fatalf("tool-call events %v, want %s", got, want)
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
	resp, err = cl.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("refund")),
		Metadata: map[string]any{agent.ContextMetadataKey: map[string]any{"gateway_url": f.srv.URL}}})
	if err != nil || resp.Task == nil || resp.Task.Status.State != a2a.TaskStateFailed ||
		!strings.Contains(resp.Task.Status.Message.Text(), "fail_closed_config") {
		t.Fatalf("no token: %+v, %v", resp, err)
	}
}
