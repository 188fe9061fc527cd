package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/tools"
)

// fakeCaller answers agent calls with answer or err, recording them.
type fakeCaller struct {
	mu     sync.Mutex
	calls  []builtin.AgentCall
	who    []*toolgw.Caller
	answer builtin.AgentAnswer
	err    error
	block  chan struct{} // when set, a call waits for it or its context
}

func (f *fakeCaller) CallAgent(ctx context.Context, c *toolgw.Caller, req builtin.AgentCall) (builtin.AgentAnswer, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.who = append(f.who, c)
	f.mu.Unlock()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return builtin.AgentAnswer{}, ctx.Err()
		}
	}
	return f.answer, f.err
}

func (f *fakeCaller) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func TestAgentsCall(t *testing.T) {
	art := a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("the answer")}}
	f := &fakeCaller{answer: builtin.AgentAnswer{TaskID: "task-9", State: "TASK_STATE_COMPLETED", Text: "the answer", Artifacts: []a2a.Artifact{art}}}
	p, err := builtin.Agents(f, &builtin.AgentsOptions{MaxAgentHops: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.AgentsCall, map[string]any{
		"agent": "inst-2", "message": "summarise this", "skill_id": "summary", "data": map[string]any{"doc": 7},
	})
	got := answer(t, res, err)
	if got["task_id"] != "task-9" || got["state"] != "TASK_STATE_COMPLETED" || got["text"] != "the answer" {
		t.Errorf("answer %v", got)
	}
	arts, _ := got["artifacts"].([]any)
	if len(arts) != 1 || !strings.Contains(fmt.Sprint(arts[0]), "the answer") {
		t.Errorf("artifacts %v", got["artifacts"])
	}
	want := builtin.AgentCall{Agent: "inst-2", Message: "summarise this", SkillID: "summary", Data: json.RawMessage(`{"doc":7}`), CallID: "call-1", MaxHops: 3}
	if f.count() != 1 || fmt.Sprint(f.calls[0]) != fmt.Sprint(want) {
		t.Errorf("call %+v, want %+v", f.calls, want)
	}
	if f.who[0].Token.Reveal() != callerToken {
		t.Error("the caller (and its token to chain) did not reach the agent caller")
	}

	// A message answer has no artifacts: an empty list, not null.
	f.answer = builtin.AgentAnswer{State: "TASK_STATE_COMPLETED", Text: "hi"}
	res, err = call(t, p, testCaller(), builtin.AgentsCall, map[string]any{"agent": "inst-2", "message": "hello"})
	got = answer(t, res, err)
	if arts, ok := got["artifacts"].([]any); !ok || len(arts) != 0 {
		t.Errorf("artifacts %v, want []", got["artifacts"])
	}
}

func TestAgentsCallFailures(t *testing.T) {
	tests := []struct {
		name   string
		args   map[string]any
		caller *toolgw.Caller
		err    error
		code   string // an error result's code
		reason string // else the error's reason
		want   string
		called bool
	}{
		{name: "own instance", args: map[string]any{"agent": "inst-1", "message": "hi"},
			reason: tools.ReasonPolicyDenied, want: "its own instance"},
		{name: "unknown instance", args: map[string]any{"agent": "nope", "message": "hi"}, called: true,
			err:  fmt.Errorf("execgw: %w: no agent instance", gateway.ErrNotFound),
			code: tools.ReasonInvalidArguments, want: `no agent instance "nope" in your tenant`},
		{name: "hop limit", args: map[string]any{"agent": "inst-2", "message": "hi"}, called: true,
			err:    fmt.Errorf("%w: the chain of agent calls is 4 hops long already, the most allowed", gateway.ErrForbidden),
			reason: tools.ReasonPolicyDenied, want: "the chain of agent calls is 4 hops long"},
		{name: "no token to chain", args: map[string]any{"agent": "inst-2", "message": "hi"}, called: true,
			err:    fmt.Errorf("%w: calling an agent chains the caller's token, and the call carries none", gateway.ErrUnauthorized),
			reason: tools.ReasonPolicyDenied, want: "chains the caller's token"},
		{name: "the callee refuses", args: map[string]any{"agent": "inst-2", "message": "hi"}, called: true,
			err:  &a2aclient.CallError{Method: "SendMessage", Err: &a2a.Error{Code: -32005, Message: "content type not supported"}},
			code: tools.ReasonUnavailable, want: "the agent refused the call: content type not supported"},
		{name: "the callee is unreachable", args: map[string]any{"agent": "inst-2", "message": "hi"}, called: true,
			err:    fmt.Errorf("dial: %w", a2aclient.ErrUnreachable),
			reason: tools.ReasonUnavailable, want: "could not be reached"},
		{name: "anything else", args: map[string]any{"agent": "inst-2", "message": "hi"}, called: true,
			err:    fmt.Errorf("the hosted agent %q is not served here: with secret %s", "x", "s3cr3t"),
			reason: tools.ReasonUnavailable, want: "could not be called"},
		{name: "no message", args: map[string]any{"agent": "inst-2", "message": ""},
			code: tools.ReasonInvalidArguments, want: "message is required"},
		{name: "no agent", args: map[string]any{"message": "hi"},
			code: tools.ReasonInvalidArguments, want: "instance id"},
		{name: "message too long", args: map[string]any{"agent": "inst-2", "message": strings.Repeat("x", 65)},
			code: tools.ReasonInvalidArguments, want: "larger than 64 bytes"},
		{name: "data not an object", args: map[string]any{"agent": "inst-2", "message": "hi", "data": []int{1}},
			code: tools.ReasonInvalidArguments, want: "data must be a JSON object"},
		{name: "unknown argument", args: map[string]any{"agent": "inst-2", "message": "hi", "tenant": "globex"},
			code: tools.ReasonInvalidArguments, want: `"tenant"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCaller{err: tc.err}
			p, err := builtin.Agents(f, &builtin.AgentsOptions{MaxMessageBytes: 64})
			if err != nil {
				t.Fatal(err)
			}
			c := tc.caller
			if c == nil {
				c = testCaller()
			}
			res, err := call(t, p, c, builtin.AgentsCall, tc.args)
			if tc.code != "" {
				failedWith(t, res, err, tc.code, tc.want)
			} else {
				errorOf(t, res, err, tc.reason, tc.want)
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("the error passes on internal detail: %v", err)
				}
			}
			if got := f.count() > 0; got != tc.called {
				t.Errorf("agent caller called: %v, want %v", got, tc.called)
			}
		})
	}
}

func TestAgentsCallTimeout(t *testing.T) {
	f := &fakeCaller{block: make(chan struct{})}
	defer close(f.block)
	p, err := builtin.Agents(f, &builtin.AgentsOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.AgentsCall, map[string]any{"agent": "inst-2", "message": "hi"})
	errorOf(t, res, err, tools.ReasonTimeout, "no answer within 50ms")
}

func TestAgentsCallDisabled(t *testing.T) {
	p, err := builtin.Agents(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.AgentsCall, map[string]any{"agent": "inst-2", "message": "hi"})
	errorOf(t, res, err, tools.ReasonServiceDisabled)
}

func TestHITLFailsClosed(t *testing.T) {
	p := builtin.HITL()
	list, err := p.Tools(context.Background(), testCaller())
	if err != nil || len(list) != 1 || list[0].Name != builtin.HITLRequestInput {
		t.Fatalf("Tools = %v, %v", list, err)
	}
	for _, args := range []any{map[string]any{"prompt": "approve?"}, map[string]any{"prompt": "x", "input_type": "choice"}, json.RawMessage(`{}`)} {
		res, err := call(t, p, testCaller(), builtin.HITLRequestInput, args)
		errorOf(t, res, err, tools.ReasonServiceDisabled, "no human-input backend: pause the run with a HITL request instead")
	}
	if _, ok, err := p.Find(context.Background(), testCaller(), "novaos.hitl.approve"); ok || err != nil {
		t.Errorf("Find(novaos.hitl.approve) = %v, %v", ok, err)
	}
}
