package toolgw

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

// The argument limit is inclusive: arguments of exactly the limit are
// called, one byte more are refused and nothing is called.
func TestArgumentLimitBoundary(t *testing.T) {
	const limit = 64
	h := newHarnessWith(t, &Options{MaxArgumentBytes: limit})
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	// {"id":"…"} is 9 bytes around the value.
	at := strings.Repeat("a", limit-9)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": at}}); err != nil {
		t.Fatalf("arguments of exactly the limit: %v", err)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": at + "a"}})
	if code, reason, _ := rpcCode(t, err); code != -32602 || reason != tools.ReasonInvalidArguments {
		t.Fatalf("a byte over: %d %s", code, reason)
	}
	if n := h.demo.count("novaos.demo.get_item"); n != 1 {
		t.Fatalf("called %d times, want once", n)
	}
}

// A result over the limit fails the call rather than reaching the caller.
func TestResultLimit(t *testing.T) {
	h := newHarnessWith(t, &Options{MaxResultBytes: 1024})
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.get_item",
		Arguments: map[string]any{"id": strings.Repeat("b", 1024)}})
	if code, reason, _ := rpcCode(t, err); code != tools.CodeUnavailable || reason != tools.ReasonUnavailable {
		t.Fatalf("an oversize result: %d %s", code, reason)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": "c"}})
	if err != nil || res.IsError {
		t.Fatalf("a small result: %v %+v", err, res)
	}
}

// A client's call id is used when it follows the rules, so the client's
// events and the run's agree; otherwise the call gets one of its own.
func TestClientCallIDs(t *testing.T) {
	h := newHarness(t)
	tok := h.token("mcp:tools:*")
	for _, tc := range []struct {
		id   string
		used bool
	}{
		{strings.Repeat("x", 64), true},
		{"call_abc-1.2", true},
		{strings.Repeat("y", 65), false},
		{"call with spaces", false},
		{"", false},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.demo.get_item","arguments":{"id":"1"},"_meta":{"novaos.dev/call_id":"` + tc.id + `"}}}`
		status, _, resp := h.rpc(tok, tools.CallPath, body, nil)
		if status != 200 || resp["error"] != nil {
			t.Fatalf("id %q: %d %v", tc.id, status, resp)
		}
		h.runs.mu.Lock()
		evs := h.runs.events["acme/run-1"]
		last := string(evs[len(evs)-1].Payload)
		h.runs.mu.Unlock()
		if got := strings.Contains(last, `"call_id":"`+tc.id+`"`); got != tc.used {
			t.Errorf("id %q used %v, want %v: %s", tc.id, got, tc.used, last)
		}
	}
}

// A tool the policy cannot decide for a listing is not listed.
func TestListHidesWhatThePolicyCannotDecide(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	if _, err := h.store.PutPolicy(ctx, tools.Policy{TenantID: "acme", Expr: `tool == "novaos.demo.echo" ? args.x == 1 : true`}, 0); err != nil {
		t.Fatal(err)
	}
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(res.Tools)
	if len(got) != 2 || got[0] != "novaos.demo.create_item" || got[1] != "novaos.demo.get_item" {
		t.Fatalf("listed %v", got)
	}
}

// A token that names no agent acts as its subject, in its own gate
// session.
func TestCallerWithoutAnAgentIsItsSubject(t *testing.T) {
	h := newHarness(t)
	h.gate.verdict = gate.Verdict{Verdict: gate.Hold, RuleIDCited: "floor"}
	tok := h.tokenFor(identity.Claims{TenantID: "acme", Subject: "svc-reports", Scopes: []string{"mcp:tools:*"}})
	cs := h.client(tok, tools.Path)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "novaos.demo.create_item", Arguments: map[string]any{"name": "x"}})
	if code, _, _ := rpcCode(t, err); code != tools.CodeWriteConfirmationRequired {
		t.Fatalf("err %v", err)
	}
	h.gate.mu.Lock()
	defer h.gate.mu.Unlock()
	if len(h.gate.submits) != 1 || h.gate.submits[0].AgentID != "svc-reports" || h.gate.submits[0].SessionID != "tools-agent-svc-reports" {
		t.Fatalf("submitted %+v", h.gate.submits)
	}
}
