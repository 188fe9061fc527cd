package toolgw

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

// slowTool is a write-class tool with a short timeout that never answers
// before its call's context ends: an upstream slower than its timeout.
const slowTool = "novaos.slow.write"

// slowProvider serves slowTool and counts the calls that reached it.
type slowProvider struct {
	mu    sync.Mutex
	calls int
}

func (p *slowProvider) tool() Tool {
	return Tool{Tool: tools.Tool{Name: slowTool, Description: "A write that outlasts its timeout."}, Timeout: 50 * time.Millisecond}
}

func (p *slowProvider) Tools(context.Context, *Caller) ([]Tool, error) { return []Tool{p.tool()}, nil }

func (p *slowProvider) Find(_ context.Context, _ *Caller, name string) (*Tool, bool, error) {
	if name != slowTool {
		return nil, false, nil
	}
	t := p.tool()
	return &t, true, nil
}

func (p *slowProvider) Call(ctx context.Context, _ *Request) (*mcp.CallToolResult, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *slowProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// stall is a step hook that blocks the gate's step named at until its
// context ends, and reports that context's error: a gate slower than the
// gateway's GateTimeout.
func stall(at string, seen chan<- error) func(context.Context, string) error {
	return func(ctx context.Context, name string) error {
		if name != at {
			return nil
		}
		<-ctx.Done()
		seen <- ctx.Err()
		return ctx.Err()
	}
}

// failAt is a step hook that fails the gate's step named at: the gate
// down.
func failAt(at string) func(context.Context, string) error {
	return func(_ context.Context, name string) error {
		if name == at {
			return errors.New("gate store unreachable")
		}
		return nil
	}
}

// rpcCode returns a call error's JSON-RPC code and data code.
func rpcCode(t *testing.T, err error) (int64, string, string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("err %v, want a JSON-RPC error", err)
	}
	var data tools.ErrorData
	_ = json.Unmarshal(we.Data, &data)
	return we.Code, data.Code, we.Message
}

// A write-class call meets the gate down, slow, or refusing its claim, or
// its tool failing after the claim: it runs only with a granted claim,
// at most once, is acknowledged only when it answered, and the caller
// gets a clear error otherwise.
func TestWriteFaultsAtTheGate(t *testing.T) {
	passClaimed := gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimGranted, FencingToken: 3}}
	standingPass := gate.Verdict{Verdict: gate.Pass}
	for _, tc := range []struct {
		name    string
		tool    string
		verdict gate.Verdict
		claim   gate.ClaimStatus
		step    func(context.Context, string) error
		stalls  string // the step stalled past GateTimeout
		fail    error  // the demo tool's error
		// wantCode is the JSON-RPC error (0: the call answers).
		wantCode int64
		reason   string
		calls    int
		acks     int
	}{
		{name: "gate down at open", verdict: passClaimed, step: failAt("open"), wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate down at submit", verdict: passClaimed, step: failAt("submit"), wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate down at claim", verdict: standingPass, step: failAt("claim"), wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate down at ack: the write ran once and answers", verdict: passClaimed, step: failAt("ack"), calls: 1, acks: 1},
		{name: "gate store down, as the gate answers it", verdict: gate.Verdict{Verdict: gate.Kill, Reason: gate.ReasonStore},
			wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate slow at open", verdict: passClaimed, stalls: "open", wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate slow at submit", verdict: passClaimed, stalls: "submit", wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate slow at claim", verdict: standingPass, stalls: "claim", wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
		{name: "gate slow at ack: the write ran once and answers", verdict: passClaimed, stalls: "ack", calls: 1, acks: 1},
		{name: "claim found unconfirmed", verdict: standingPass, claim: gate.ClaimExecutionUnconfirmed,
			wantCode: tools.CodeForbidden, reason: tools.ReasonAlreadyExecuted},
		{name: "claim found executed", verdict: standingPass, claim: gate.ClaimAlreadyExecuted,
			wantCode: tools.CodeForbidden, reason: tools.ReasonAlreadyExecuted},
		{name: "verdict execution unconfirmed", verdict: gate.Verdict{Verdict: gate.ExecutionUnconfirmed},
			wantCode: tools.CodeForbidden, reason: tools.ReasonAlreadyExecuted},
		{name: "tool down after the claim: not acknowledged", verdict: passClaimed,
			fail: Failf(tools.ReasonUnavailable, "upstream shop: connection refused"), wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable, calls: 1},
		{name: "tool slow after the claim: not acknowledged", tool: slowTool, verdict: passClaimed,
			wantCode: tools.CodeUnavailable, reason: tools.ReasonTimeout, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := &slowProvider{}
			h := newHarnessWith(t, &Options{GateTimeout: 100 * time.Millisecond}, slow)
			var seen chan error
			h.gate.verdict, h.gate.claim, h.gate.step = tc.verdict, tc.claim, tc.step
			if tc.stalls != "" {
				seen = make(chan error, 1)
				h.gate.step = stall(tc.stalls, seen)
			}
			h.demo.fail = tc.fail
			name := cmp.Or(tc.tool, "novaos.demo.create_item")
			cs := h.client(h.token("mcp:tools:*"), tools.Path)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"name": "x"}})
			if tc.wantCode == 0 {
				if err != nil || res.IsError {
					t.Fatalf("call: %v %+v", err, res)
				}
			} else {
				code, reason, msg := rpcCode(t, err)
				if code != tc.wantCode || reason != tc.reason {
					t.Fatalf("error %d %s (%q), want %d %s", code, reason, msg, tc.wantCode, tc.reason)
				}
			}
			if seen != nil {
				// The stalled step ended on the gateway's GateTimeout: the
				// client's own context has no deadline.
				if err := <-seen; !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the stalled %s step ended with %v, want the gate timeout", tc.stalls, err)
				}
			}
			if n := h.demo.count("novaos.demo.create_item") + slow.count(); n != tc.calls {
				t.Fatalf("the write ran %d times, want %d", n, tc.calls)
			}
			h.gate.mu.Lock()
			defer h.gate.mu.Unlock()
			if len(h.gate.acks) != tc.acks {
				t.Fatalf("%d acknowledgements, want %d", len(h.gate.acks), tc.acks)
			}
			if tc.calls == 0 && (len(h.gate.acks) != 0) {
				t.Fatal("a write that did not run was acknowledged")
			}
		})
	}
}

// A run resumed with a token bound to its approved call makes that call
// under its id; a later, different write of the run is judged on its own
// under a new id, never under the approved call's.
func TestResumedRunWrites(t *testing.T) {
	const approved = "call_approved1"
	h := newHarness(t)
	h.gate.judge = func(act gate.Action) gate.Verdict {
		gc, _ := act.Context.(gate.GenericContext)
		switch {
		case act.Resume && string(gc.Extra["arguments"].(json.RawMessage)) == `{"name":"approved"}`:
			return gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimGranted, FencingToken: 1}}
		case act.Resume:
			return gate.Verdict{Verdict: gate.Kill, Reason: gate.ResumeFingerprintMismatch}
		case act.ActionID == approved:
			// The approved call's id with other content: what the gate
			// answers a fresh submit reusing it.
			return gate.Verdict{Verdict: gate.Kill, Reason: gate.ResumeFingerprintMismatch}
		}
		return gate.Verdict{Verdict: gate.Hold, RuleIDCited: FloorRuleForTest}
	}
	tok := h.tokenFor(identity.Claims{TenantID: "acme", AgentID: "bot", RunID: "run-1", CallID: approved, Scopes: []string{"mcp:tools:*"}})
	ctx := context.Background()
	cs := h.client(tok, tools.Path)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.create_item", Arguments: map[string]any{"name": "approved"}})
	if err != nil || res.IsError {
		t.Fatalf("the approved call: %v %+v", err, res)
	}
	if sc := res.StructuredContent.(map[string]any); sc["call_id"] != approved {
		t.Fatalf("the approved call ran as %v, want %s", sc["call_id"], approved)
	}

	for _, tc := range []struct {
		name   string
		meta   string // the client's own call id
		wantID func(string) bool
	}{
		{name: "a new id", wantID: func(id string) bool { return id != approved && validCallID(id) }},
		{name: "the client's id", meta: "c-2", wantID: func(id string) bool { return id == "c-2" }},
		{name: "not the approved id, even when the client names it", meta: approved, wantID: func(id string) bool { return id != approved && validCallID(id) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.demo.create_item","arguments":{"name":"another"}` +
				`,"_meta":{"novaos.dev/call_id":"` + tc.meta + `"}}}`
			_, _, resp := h.rpc(tok, tools.CallPath, body, nil)
			code, _, _ := errorOf(t, resp)
			if code != tools.CodeWriteConfirmationRequired {
				t.Fatalf("a later write of the resumed run: %v, want it held (-32042)", resp)
			}
			data := resp["error"].(map[string]any)["data"].(map[string]any)
			id, _ := data["call_id"].(string)
			if !tc.wantID(id) {
				t.Fatalf("the later write was held as %q", id)
			}
			h.gate.mu.Lock()
			last := h.gate.submits[len(h.gate.submits)-1]
			h.gate.mu.Unlock()
			if last.Resume || last.ActionID != id {
				t.Fatalf("last submit %s resume=%v, want %s judged fresh", last.ActionID, last.Resume, id)
			}
		})
	}
	if n := h.demo.count("novaos.demo.create_item"); n != 1 {
		t.Fatalf("create_item ran %d times, want once (the approved call)", n)
	}
}

// Shutdown lets calls in flight finish while its context lasts and cuts
// them off when it ends: a write cut off answers -31503 and is not
// acknowledged, so it waits at the gate for an operator.
func TestShutdownCutsOffCalls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cut      bool
		wantCode int64
		acks     int
	}{
		{name: "the context ends: cut off", cut: true, wantCode: tools.CodeUnavailable},
		{name: "the context lasts: the call finishes", acks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.gate.verdict = gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimGranted, FencingToken: 3}}
			release := make(chan struct{})
			h.demo.block, h.demo.entered = release, make(chan string, 1)
			cs := h.client(h.token("mcp:tools:*"), tools.Path)
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.create_item", Arguments: map[string]any{"name": "x"}})
				done <- err
			}()
			<-h.demo.entered
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cut {
				cancel()
			}
			if err := h.svc.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			if !tc.cut {
				close(release)
			}
			err := <-done
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
			} else {
				code, reason, msg := rpcCode(t, err)
				if code != tc.wantCode || reason != tools.ReasonUnavailable {
					t.Fatalf("error %d %s (%q), want %d %s", code, reason, msg, tc.wantCode, tools.ReasonUnavailable)
				}
			}
			h.gate.mu.Lock()
			defer h.gate.mu.Unlock()
			if len(h.gate.acks) != tc.acks {
				t.Fatalf("%d acknowledgements, want %d", len(h.gate.acks), tc.acks)
			}
		})
	}
}
