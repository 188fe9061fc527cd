package toolgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

func names(list []*mcp.Tool) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.Name)
	}
	return out
}

func TestListFollowsScopes(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name   string
		scopes []string
		want   []string
	}{
		{"one tool", []string{"mcp:tools:novaos.demo.get_item"}, []string{"novaos.demo.get_item"}},
		{"a server", []string{"mcp:tools:demo"}, []string{"novaos.demo.create_item", "novaos.demo.echo", "novaos.demo.get_item"}},
		{"every tool, and the extra scope", []string{"mcp:*", "demo:extra"},
			[]string{"novaos.demo.create_item", "novaos.demo.echo", "novaos.demo.get_item", "novaos.demo.scoped_lookup"}},
		{"no mcp scope", []string{"memory:read:*"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := h.client(h.token(tc.scopes...), tools.Path)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res.Tools); !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
			// A list filtered for its caller is no cache's to share.
			if res.CacheScope != "private" || res.TTLMs != 0 {
				t.Fatalf("cacheScope %q ttlMs %d, want private and 0", res.CacheScope, res.TTLMs)
			}
		})
	}
}

// rpc posts one JSON-RPC request and returns the status and the decoded
// response.
func (h *harness) rpc(tok, path, body string, header map[string]string) (int, http.Header, map[string]any) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			h.t.Fatalf("status %d, body %q: %v", resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, resp.Header, out
}

func callBody(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

// errorOf returns a JSON-RPC response's error code and data code.
func errorOf(t *testing.T, resp map[string]any) (int, string, map[string]any) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error in %v", resp)
	}
	data, _ := e["data"].(map[string]any)
	code, _ := data["code"].(string)
	return int(e["code"].(float64)), code, data
}

func TestSeedStyleCall(t *testing.T) {
	h := newHarness(t)
	tok := h.token("mcp:tools:*")
	status, _, resp := h.rpc(tok, tools.CallPath, callBody("novaos.demo.get_item", `{"id":"42"}`), map[string]string{tools.TenantHeader: "acme"})
	if status != http.StatusOK || resp["error"] != nil {
		t.Fatalf("status %d, %v", status, resp)
	}
	res := resp["result"].(map[string]any)
	if sc := res["structuredContent"].(map[string]any); sc["tool"] != "novaos.demo.get_item" {
		t.Fatalf("result %v", res)
	}
	if got := h.runs.types("acme", "run-1"); !slices.Equal(got, []string{"tool.call", "tool.result"}) {
		t.Fatalf("run events %v", got)
	}
	if h.demo.count("novaos.demo.get_item") != 1 {
		t.Fatal("not called once")
	}
	if u := h.svc.meter.usage("acme"); len(u) != 1 || u[0].Calls != 1 || u[0].Run != "run-1" || u[0].Outcome != "ok" {
		t.Fatalf("usage %+v", u)
	}
}

// Bad input is refused with a clear error, and nothing is called.
func TestBadCallsCallNothing(t *testing.T) {
	h := newHarness(t)
	tok := h.token("mcp:tools:*")
	for _, tc := range []struct {
		name       string
		tok, body  string
		header     map[string]string
		status     int
		rpcCode    int
		reason     string
		wantScope  string
		wantHeader string
	}{
		{name: "unknown tool", tok: tok, body: callBody("novaos.demo.nope", `{}`), status: 200, rpcCode: -32602, reason: tools.ReasonToolNotFound},
		{name: "not a gateway name", tok: tok, body: callBody("rm -rf", `{}`), status: 200, rpcCode: -32602, reason: tools.ReasonToolNotFound},
		{name: "arguments failing the schema", tok: tok, body: callBody("novaos.demo.get_item", `{"id":7}`), status: 200, rpcCode: -32602, reason: tools.ReasonInvalidArguments},
		{name: "an argument the schema does not have", tok: tok, body: callBody("novaos.demo.get_item", `{"id":"1","x":1}`), status: 200, rpcCode: -32602, reason: tools.ReasonInvalidArguments},
		{name: "arguments not an object", tok: tok, body: callBody("novaos.demo.get_item", `[1]`), status: 200, rpcCode: -32602, reason: tools.ReasonInvalidArguments},
		{name: "oversize arguments", tok: tok, body: callBody("novaos.demo.get_item", `{"id":"`+strings.Repeat("a", DefaultMaxArgumentBytes)+`"}`), status: 200, rpcCode: -32602, reason: tools.ReasonInvalidArguments},
		{name: "a scope missing", tok: h.token("mcp:tools:novaos.demo.get_item"), body: callBody("novaos.demo.create_item", `{"name":"x"}`), status: 403, rpcCode: tools.CodeForbidden, reason: tools.ReasonInsufficientScope, wantScope: "mcp:tools:novaos.demo.create_item", wantHeader: `error="insufficient_scope", scope="mcp:tools:novaos.demo.create_item"`},
		{name: "a tool's own scope missing", tok: tok, body: callBody("novaos.demo.scoped_lookup", `{}`), status: 403, rpcCode: tools.CodeForbidden, reason: tools.ReasonInsufficientScope, wantScope: "demo:extra"},
		{name: "tenant header mismatch", tok: tok, body: callBody("novaos.demo.get_item", `{"id":"1"}`), header: map[string]string{tools.TenantHeader: "globex"}, status: 403, rpcCode: tools.CodeForbidden, reason: tools.ReasonTenantMismatch},
		{name: "no token", body: callBody("novaos.demo.get_item", `{"id":"1"}`), status: 401, rpcCode: tools.CodeUnauthorized, wantHeader: `resource_metadata="http://novaos.test/.well-known/oauth-protected-resource/mcp/v1"`},
		{name: "a forged token", tok: tok + "x", body: callBody("novaos.demo.get_item", `{"id":"1"}`), status: 401, rpcCode: tools.CodeUnauthorized, wantHeader: `error="invalid_token"`},
		{name: "a repeated key", tok: tok, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.demo.get_item","name":"novaos.demo.create_item","arguments":{"id":"1"}}}`, status: 400, rpcCode: -32600},
		{name: "a batch", tok: tok, body: "[" + callBody("novaos.demo.get_item", `{"id":"1"}`) + "]", status: 400, rpcCode: -32600},
		{name: "not JSON", tok: tok, body: `{"jsonrpc":`, status: 400, rpcCode: -32700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.demo.count("novaos.demo.get_item") + h.demo.count("novaos.demo.create_item") + h.demo.count("novaos.demo.scoped_lookup")
			status, hdr, resp := h.rpc(tc.tok, tools.CallPath, tc.body, tc.header)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, resp)
			}
			code, reason, data := errorOf(t, resp)
			if code != tc.rpcCode || reason != tc.reason {
				t.Fatalf("error %d %q, want %d %q: %v", code, reason, tc.rpcCode, tc.reason, resp)
			}
			if tc.wantScope != "" && data["scope"] != tc.wantScope {
				t.Fatalf("scope %v, want %s", data["scope"], tc.wantScope)
			}
			if tc.wantHeader != "" && !strings.Contains(hdr.Get("WWW-Authenticate"), tc.wantHeader) {
				t.Fatalf("WWW-Authenticate %q, want it to hold %s", hdr.Get("WWW-Authenticate"), tc.wantHeader)
			}
			after := h.demo.count("novaos.demo.get_item") + h.demo.count("novaos.demo.create_item") + h.demo.count("novaos.demo.scoped_lookup")
			if after != before {
				t.Fatal("a tool was called")
			}
			if strings.Contains(resp["error"].(map[string]any)["message"].(string), tok) {
				t.Fatal("the error repeats the token")
			}
		})
	}
}

func TestWriteClassThroughTheGate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		verdict  gate.Verdict
		gateErr  error
		wantCode int64
		reason   string
		calls    int
		acks     int
	}{
		{name: "pass claims, calls once and acknowledges", verdict: gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimGranted, FencingToken: 3}}, calls: 1, acks: 1},
		{name: "a standing pass is claimed first", verdict: gate.Verdict{Verdict: gate.Pass}, calls: 1, acks: 1},
		{name: "hold answers -32042", verdict: gate.Verdict{Verdict: gate.Hold, RuleIDCited: FloorRuleForTest}, wantCode: tools.CodeWriteConfirmationRequired, reason: tools.ReasonHITLRequired},
		{name: "kill refuses", verdict: gate.Verdict{Verdict: gate.Kill, RuleIDCited: "no-writes"}, wantCode: tools.CodeForbidden, reason: tools.ReasonGateKilled},
		{name: "already executed refuses", verdict: gate.Verdict{Verdict: gate.AlreadyExecuted}, wantCode: tools.CodeForbidden, reason: tools.ReasonAlreadyExecuted},
		{name: "gate down fails closed", gateErr: errors.New("store unreachable"), wantCode: tools.CodeUnavailable, reason: tools.ReasonUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.gate.verdict, h.gate.err = tc.verdict, tc.gateErr
			cs := h.client(h.token("mcp:tools:*"), tools.Path)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.create_item", Arguments: map[string]any{"name": "x", "amount": 12.5}})
			if tc.wantCode == 0 {
				if err != nil || res.IsError {
					t.Fatalf("call: %v %+v", err, res)
				}
			} else {
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != tc.wantCode {
					t.Fatalf("err %v, want code %d", err, tc.wantCode)
				}
				var data map[string]any
				_ = json.Unmarshal(we.Data, &data)
				if data["code"] != tc.reason {
					t.Fatalf("data %s, want code %s", we.Data, tc.reason)
				}
				if tc.reason == tools.ReasonHITLRequired {
					var wc tools.WriteConfirmationData
					if err := json.Unmarshal(we.Data, &wc); err != nil || wc.CallID == "" || wc.ToolName != "novaos.demo.create_item" ||
						wc.SessionID != "tools-run-run-1" || len(wc.Elicitations) != 1 || wc.Elicitations[0].Mode != "url" {
						t.Fatalf("write confirmation %s (%v)", we.Data, err)
					}
					if got := h.runs.types("acme", "run-1"); !slices.Equal(got, []string{"tool.call", "tool.write_confirmation_required"}) {
						t.Fatalf("run events %v", got)
					}
				}
			}
			if n := h.demo.count("novaos.demo.create_item"); n != tc.calls {
				t.Fatalf("called %d times, want %d", n, tc.calls)
			}
			h.gate.mu.Lock()
			defer h.gate.mu.Unlock()
			if len(h.gate.acks) != tc.acks {
				t.Fatalf("%d acks, want %d", len(h.gate.acks), tc.acks)
			}
			if tc.gateErr == nil {
				act := h.gate.submits[0]
				gc, ok := act.Context.(gate.GenericContext)
				if act.Floor != gate.Hold || act.SessionID != "tools-run-run-1" || !ok || gc.Extra["tool"] != "novaos.demo.create_item" ||
					string(gc.Extra["arguments"].(json.RawMessage)) != `{"amount":12.5,"name":"x"}` {
					t.Fatalf("submitted %+v", act)
				}
			}
		})
	}
}

// FloorRuleForTest stands for the gate's floor rule, which this package
// does not import.
const FloorRuleForTest = "floor"

// A read-only tool runs without the gate; the policy can move calls.
func TestPolicy(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.gate.verdict = gate.Verdict{Verdict: gate.Hold, RuleIDCited: "floor"}
	put := func(expr string) {
		t.Helper()
		cur, err := h.store.GetPolicy(ctx, "acme")
		v := int64(0)
		if err == nil {
			v = cur.Version
		}
		if _, err := h.store.PutPolicy(ctx, tools.Policy{TenantID: "acme", Expr: expr}, v); err != nil {
			t.Fatal(err)
		}
		h.svc.policies.forget("acme")
	}
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	call := func(name string, args map[string]any) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	}
	if err := call("novaos.demo.echo", nil); err != nil {
		t.Fatalf("read-only: %v", err)
	}
	if len(h.gate.submits) != 0 {
		t.Fatal("a read-only call went to the gate")
	}
	put(`tool == "novaos.demo.create_item" && args.name == "safe" ? "read" : (tool == "novaos.demo.echo" ? "deny" : "allow")`)
	if err := call("novaos.demo.create_item", map[string]any{"name": "safe"}); err != nil {
		t.Fatalf("policy read: %v", err)
	}
	if err := call("novaos.demo.create_item", map[string]any{"name": "other"}); err == nil || !strings.Contains(err.Error(), "approve") {
		t.Fatalf("policy allow of a write: %v, want a hold", err)
	}
	var we *jsonrpc.Error
	if err := call("novaos.demo.echo", nil); !errors.As(err, &we) || we.Code != tools.CodeForbidden {
		t.Fatalf("policy deny: %v", err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil || slices.Contains(names(res.Tools), "novaos.demo.echo") {
		t.Fatalf("list under the policy: %v %v", names(res.Tools), err)
	}
	put(`"gate"`)
	if err := call("novaos.demo.echo", nil); err == nil {
		t.Fatal("a gate-only policy let a call skip the gate")
	}
	h.gate.mu.Lock()
	last := h.gate.submits[len(h.gate.submits)-1]
	h.gate.mu.Unlock()
	if last.Floor != "" {
		t.Fatalf("gate-only submit has floor %q", last.Floor)
	}
}

func TestSessions(t *testing.T) {
	h := newHarness(t)
	tok := h.token("mcp:tools:*")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	status, hdr, resp := h.rpc(tok, tools.Path, init, nil)
	id := hdr.Get(tools.SessionHeader)
	if status != 200 || id == "" || resp["result"] == nil {
		t.Fatalf("initialize: %d %q %v", status, id, resp)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"query":"ECHO"}}`
	status, _, resp = h.rpc(tok, tools.Path, list, map[string]string{tools.SessionHeader: id, "MCP-Protocol-Version": "2025-11-25"})
	if status != 200 {
		t.Fatalf("list in the session: %d %v", status, resp)
	}
	if got := resp["result"].(map[string]any)["tools"].([]any); len(got) != 1 {
		t.Fatalf("query ECHO listed %v", got)
	}
	other := h.tokenFor(identityClaims("acme", "other-bot"))
	if status, _, _ = h.rpc(other, tools.Path, list, map[string]string{tools.SessionHeader: id}); status != http.StatusNotFound {
		t.Fatalf("another caller's session: %d, want 404", status)
	}
	if status, _, _ = h.rpc(tok, tools.Path, list, map[string]string{tools.SessionHeader: "no-such-session"}); status != http.StatusNotFound {
		t.Fatalf("unknown session: %d, want 404", status)
	}
	req, _ := http.NewRequest(http.MethodDelete, h.srv.URL+tools.Path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(tools.SessionHeader, id)
	dr, err := http.DefaultClient.Do(req)
	if err != nil || dr.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", dr, err)
	}
	dr.Body.Close()
	if status, _, _ = h.rpc(tok, tools.Path, list, map[string]string{tools.SessionHeader: id}); status != http.StatusNotFound {
		t.Fatalf("deleted session: %d, want 404", status)
	}
}

// A write carries the run's earlier calls to the gate as evidence, in
// order, numbered from 1.
func TestWriteEvidence(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.gate.verdict = gate.Verdict{Verdict: gate.Pass, Claim: &gate.Claim{Status: gate.ClaimGranted, FencingToken: 1}}
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	for _, id := range []string{"a", "b"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": id}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": 7}}); err == nil {
		t.Fatal("a call failing its schema succeeded")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.create_item", Arguments: map[string]any{"name": "x"}}); err != nil {
		t.Fatal(err)
	}
	h.gate.mu.Lock()
	defer h.gate.mu.Unlock()
	ev := h.gate.submits[0].Evidence
	if len(ev) != 2 || ev[0].Tool != "novaos.demo.get_item" || ev[0].Provenance.Sequence != 1 || ev[1].Provenance.Sequence != 2 ||
		ev[0].Provenance.CallID == "" || ev[0].Provenance.CallID == ev[1].Provenance.CallID || string(ev[0].Result) != `{"success":true}` {
		t.Fatalf("evidence %+v", ev)
	}
}

// Every call is audited in the gate's chain; a batch the gate refuses is
// kept and written once it takes it again.
func TestAuditKeepsRefusedBatches(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.gate.mu.Lock()
	h.gate.auditErr = errors.New("audit store down")
	h.gate.auditW = make(chan struct{}, 16)
	h.gate.mu.Unlock()
	cs := h.client(h.token("mcp:tools:*"), tools.Path)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": "1"}}); err != nil {
		t.Fatal(err)
	}
	<-h.gate.auditW // refused once
	h.gate.mu.Lock()
	h.gate.auditErr = nil
	h.gate.mu.Unlock()
	for {
		<-h.gate.auditW
		h.gate.mu.Lock()
		got := slices.Clone(h.gate.audit)
		h.gate.mu.Unlock()
		if len(got) == 1 {
			if got[0].Kind != auditCall || got[0].TenantID != "acme" || got[0].SessionID != "tools-run-run-1" || got[0].ActionID == "" {
				t.Fatalf("audit entry %+v", got[0])
			}
			return
		}
	}
}

// A tools/call result is marked final (resultType "complete") for a
// client of MCP 2026-07-28, which requires the mark, and left as it was
// for a client of an earlier revision.
func TestCallResultType(t *testing.T) {
	h := newHarness(t)
	tok := h.token("mcp:tools:demo")
	modern := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, meta string
		header     map[string]string
		want       any
	}{
		{"2026-07-28", modern, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "novaos.demo.echo"}, "complete"},
		{"2025-11-25", "", map[string]string{"MCP-Protocol-Version": "2025-11-25"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.demo.echo","arguments":{}` + tc.meta + `}}`
			status, _, resp := h.rpc(tok, tools.Path, body, tc.header)
			res, ok := resp["result"].(map[string]any)
			if status != http.StatusOK || !ok {
				t.Fatalf("call: %d %v", status, resp)
			}
			if res["resultType"] != tc.want || res["content"] == nil {
				t.Fatalf("result %v: resultType %v, want %v, and the content", res, res["resultType"], tc.want)
			}
		})
	}
}

// A resumed run's token is bound to its approved call; its other calls
// keep ids of their own.
func TestResumeTokenBindsOnlyTheApprovedCall(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	tok := h.tokenFor(identity.Claims{TenantID: "acme", AgentID: "bot", RunID: "run-1", CallID: "call_approved", Scopes: []string{"mcp:tools:*"}})
	cs := h.client(tok, tools.Path)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "novaos.demo.get_item", Arguments: map[string]any{"id": "1"}}); err != nil {
		t.Fatal(err)
	}
	h.runs.mu.Lock()
	defer h.runs.mu.Unlock()
	for _, e := range h.runs.events["acme/run-1"] {
		if strings.Contains(string(e.Payload), "call_approved") {
			t.Fatalf("a read took the approved call's id: %s %s", e.Type, e.Payload)
		}
	}
}
