package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/memory"
)

// serveAgent serves an agent with one skill and returns a client of it.
func serveAgent(t *testing.T, skill func(c *agent.Context) (agent.Result, error)) *a2aclient.Client {
	t.Helper()
	return serveAgentWith(t, nil, skill)
}

func serveAgentWith(t *testing.T, o *agent.Options, skill func(c *agent.Context) (agent.Result, error)) *a2aclient.Client {
	t.Helper()
	a := agent.New("tooler", "1.0.0", o)
	a.MustRegister(agent.Skill{ID: "work", Handler: skill})
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	srv.Config.Handler = a.Handler(srv.URL, nil)
	cl, err := a2aclient.NewForURL(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// eventsIn returns the platform events a message carries.
func eventsIn(m *a2a.Message) []map[string]any {
	if m == nil {
		return nil
	}
	var out []map[string]any
	for _, p := range m.Parts {
		if p.Kind != a2a.PartData || !hitl.Tagged(p, hitl.MetadataMediaType) {
			continue
		}
		var d struct {
			Events []map[string]any `json:"events"`
		}
		if json.Unmarshal(p.Data, &d) == nil {
			out = append(out, d.Events...)
		}
	}
	return out
}

// summary is an event without its call id, which the test checks apart.
func summary(ev map[string]any) string {
	s := ev["event"].(string) + " " + ev["tool"].(string)
	if ok, found := ev["success"]; found {
		s += map[bool]string{true: " ok", false: " failed"}[ok.(bool)]
	}
	if ev["held"] == true {
		s += " held " + ev["gateway_call_id"].(string)
	}
	return s
}

func request(pc map[string]any) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("go")),
		Metadata: map[string]any{agent.ContextMetadataKey: pc}}
}

// A skill's bindings call the gateway the platform context names, with
// the gateway's token, the tenant, the trace context and the caller's
// custom headers; every call raises tool.call and tool.result, folded
// into the final message of a non-streaming request.
func TestFromNonStreaming(t *testing.T) {
	g := newFakeGateway(t, result(okResult))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cl := serveAgent(t, func(c *agent.Context) (agent.Result, error) {
		b, err := From(c, &FromOptions{BindingsOptions: BindingsOptions{Timeout: time.Minute}})
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Memory.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "note"}); err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Files.List(c, "reports/"); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "done"}, nil
	})
	pc := map[string]any{
		"run_id": "run-1", "tenant_id": "acme", "idempotency_key": "idem-1", "traceparent": tp,
		"execution_token": "exec-token-not-for-tools", "gateway_url": "http://wrong.invalid",
		"mcp_gateway_url": g.srv.URL + Path, "mcp_gateway_token": testToken,
	}
	resp, err := cl.SendMessage(t.Context(), request(pc), a2aclient.WithHeader("X-Customer", "c-7"))
	if err != nil || resp.Task == nil {
		t.Fatalf("%+v, %v", resp, err)
	}
	if resp.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s: %s", resp.Task.Status.State, resp.Task.Status.Message.Text())
	}
	calls := g.toolCalls()
	if len(calls) != 2 {
		t.Fatalf("%d tool calls", len(calls))
	}
	for _, c := range calls {
		for k, want := range map[string]string{"Authorization": "Bearer " + testToken, TenantHeader: "acme", "Traceparent": tp, "X-Customer": "c-7"} {
			if got := c.Header.Get(k); got != want {
				t.Errorf("%s: header %s = %q, want %q", c.tool(), k, got, want)
			}
		}
	}
	var w memory.WriteRequest
	_ = json.Unmarshal(calls[0].args(), &w)
	if w.IdempotencyKey != "idem-1:1" {
		t.Errorf("the memory write's key %q, want the execution's first write key", w.IdempotencyKey)
	}
	// In a platform run the gateway shows the calls in the run, under the
	// ids the bindings send it; the agent does not report them again.
	if events := eventsIn(resp.Task.Status.Message); len(events) != 0 {
		t.Fatalf("a run's calls reported by the agent too: %v", events)
	}
	var ids []string
	for _, c := range calls {
		var p struct {
			Meta map[string]string `json:"_meta"`
		}
		_ = json.Unmarshal(c.Params, &p)
		ids = append(ids, p.Meta[CallIDMetaKey])
	}
	if !strings.HasPrefix(ids[0], "call_") || !strings.HasPrefix(ids[1], "call_") || ids[0] == ids[1] {
		t.Fatalf("call ids sent to the gateway %q", ids)
	}
}

// Outside a platform run the agent reports its calls itself.
func TestFromReportsCallsOutsideARun(t *testing.T) {
	g := newFakeGateway(t, func(gwCall) reply { return reply{result: okResult} })
	cl := serveAgent(t, func(c *agent.Context) (agent.Result, error) {
		b, err := From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Memory.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "note"}); err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Files.List(c, "reports/"); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "done"}, nil
	})
	pc := map[string]any{"tenant_id": "acme", "execution_token": testToken, "mcp_gateway_url": g.srv.URL + Path}
	resp, err := cl.SendMessage(t.Context(), request(pc))
	if err != nil || resp.Task == nil {
		t.Fatalf("%+v, %v", resp, err)
	}
	events := eventsIn(resp.Task.Status.Message)
	var got []string
	for _, ev := range events {
		got = append(got, summary(ev))
	}
	want := []string{"tool.call novaos.memory.write", "tool.result novaos.memory.write ok", "tool.call novaos.files.list", "tool.result novaos.files.list ok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if events[0]["call_id"] != events[1]["call_id"] || events[0]["call_id"] == events[2]["call_id"] || !strings.HasPrefix(events[0]["call_id"].(string), "call_") {
		t.Errorf("call ids %v", events)
	}
	if args, _ := events[2]["arguments"].(map[string]any); args["prefix"] != "reports/" {
		t.Errorf("tool.call arguments %v", events[2]["arguments"])
	}
}

// On a streaming request the events go out as the skill runs, before it
// returns; a call the gateway holds pauses the task for a write
// confirmation the platform recognises.
func TestFromStreamingAndHeld(t *testing.T) {
	held := WriteConfirmationData{Code: ReasonHITLRequired, CallID: "gw-call-3", ToolName: ToolNotifyWebhook, ActionID: "act-3", RunID: "run-2",
		Elicitations: []Elicitation{{Mode: "url", ElicitationID: "e1", URL: "https://platform/ui/gate/act-3", Message: "approve"}}}
	g := newFakeGateway(t, func(c gwCall) reply {
		if c.tool() == ToolNotifyWebhook {
			return reply{stream: true, err: rpcErr(CodeWriteConfirmationRequired, "a person must approve this call", held)}
		}
		return reply{stream: true, result: okResult}
	})
	seen := make(chan struct{})
	cl := serveAgent(t, func(c *agent.Context) (agent.Result, error) {
		b, err := From(c, &FromOptions{BindingsOptions: BindingsOptions{Timeout: time.Minute}})
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Knowledge.Search(c, &KnowledgeSearchRequest{Query: "refund policy"}); err != nil {
			return agent.Result{}, err
		}
		select { // the caller saw the events before the skill goes on
		case <-seen:
		case <-c.Done():
			return agent.Result{}, c.Err()
		}
		_, err = b.Notify.Webhook(c, "https://hooks.example.com/x", map[string]string{"text": "refunded"})
		var w *WriteConfirmationRequired
		if errors.As(err, &w) {
			status, output := w.Pause("")
			return agent.Result{Status: status, Output: output}, nil
		}
		return agent.Result{Status: agent.StatusFailed, Error: "the webhook was not held: " + err.Error()}, nil
	})
	pc := map[string]any{"run_id": "run-2", "tenant_id": "acme", "execution_token": testToken, "gateway_url": g.srv.URL}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	var final *a2a.TaskStatus
	live := 0
	for fr, err := range cl.SendStreamingMessage(ctx, request(pc)) {
		if err != nil {
			t.Fatal(err)
		}
		su := fr.StatusUpdate
		if su == nil {
			continue
		}
		for _, ev := range eventsIn(su.Status.Message) {
			got = append(got, summary(ev))
			if live++; live == 2 {
				close(seen)
			}
		}
		if su.Status.State != a2a.TaskStateWorking {
			final = &su.Status
		}
	}
	want := []string{"tool.call novaos.knowledge.search", "tool.result novaos.knowledge.search ok",
		"tool.call novaos.notify.webhook", "tool.result novaos.notify.webhook failed held gw-call-3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("live events (-want +got):\n%s", diff)
	}
	if final == nil || final.State != a2a.TaskStateAuthRequired {
		t.Fatalf("final status %+v", final)
	}
	found := hitl.Extract(final.Message)
	wc := found.WriteConfirmation
	if wc == nil || wc.CallID != "gw-call-3" || wc.ToolName != ToolNotifyWebhook || wc.Extra["action_id"] != "act-3" ||
		wc.Extra["approval_url"] != "https://platform/ui/gate/act-3" || wc.Extra["run_id"] != "run-2" {
		t.Fatalf("write confirmation %+v", wc)
	}
	if !strings.Contains(final.Message.Text(), "waits for your approval") {
		t.Errorf("pause text %q", final.Message.Text())
	}
	// The token came from the execution: the platform context named no
	// tool gateway token, and the gateway is the one under gateway_url.
	for _, c := range g.toolCalls() {
		if c.Header.Get("Authorization") != "Bearer "+testToken || c.Path != CallPath {
			t.Fatalf("call %s at %s with %q", c.tool(), c.Path, c.Header.Get("Authorization"))
		}
	}
}

// From needs a gateway and a token.
func TestFromRefuses(t *testing.T) {
	errs := make(chan error, 2)
	cl := serveAgent(t, func(c *agent.Context) (agent.Result, error) {
		_, err := From(c, nil)
		errs <- err
		return agent.Result{Output: "x"}, nil
	})
	for _, pc := range []map[string]any{
		{"run_id": "r", "execution_token": testToken},
		{"run_id": "r", "gateway_url": "http://gw.invalid"},
	} {
		if _, err := cl.SendMessage(t.Context(), request(pc)); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; err == nil || strings.Contains(err.Error(), testToken) {
			t.Errorf("%v: From gave %v", pc, err)
		}
	}
}

// An agent that declares tool-call-v1 reports each call there as well,
// under the call id of its tool.call event.
func TestFromToolCallExtension(t *testing.T) {
	g := newFakeGateway(t, func(c gwCall) reply {
		if c.tool() == ToolFilesRead {
			return reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": `{"error":"no such file"}`}}}}
		}
		return reply{result: okResult}
	})
	cl := serveAgentWith(t, &agent.Options{Extensions: []a2a.AgentExtension{toolcall.Declaration()}}, func(c *agent.Context) (agent.Result, error) {
		b, err := From(c, &FromOptions{BindingsOptions: BindingsOptions{Timeout: time.Minute}})
		if err != nil {
			return agent.Result{}, err
		}
		b.Files.List(c, "")
		b.Files.Read(c, "missing.txt")
		return agent.Result{Output: "done"}, nil
	})
	pc := map[string]any{"run_id": "r", "execution_token": testToken, "gateway_url": g.srv.URL}
	var calls []toolcall.Payload
	var ids []any
	for fr, err := range cl.SendStreamingMessage(t.Context(), request(pc)) {
		if err != nil {
			t.Fatal(err)
		}
		if fr.StatusUpdate == nil || fr.StatusUpdate.Status.Message == nil {
			continue
		}
		m := fr.StatusUpdate.Status.Message
		if p, ok, _ := toolcall.Parse(m.Metadata); ok {
			calls = append(calls, p)
		}
		for _, ev := range eventsIn(m) {
			if ev["event"] == EventToolCall {
				ids = append(ids, ev["call_id"])
			}
		}
	}
	want := []toolcall.Payload{
		{Name: ToolFilesList, Phase: toolcall.PhaseStarted, Args: map[string]any{}},
		{Name: ToolFilesList, Phase: toolcall.PhaseCompleted, Result: map[string]any{"ok": true}},
		{Name: ToolFilesRead, Phase: toolcall.PhaseStarted, Args: map[string]any{"path": "missing.txt"}},
		{Name: ToolFilesRead, Phase: toolcall.PhaseFailed, Error: "no such file"},
	}
	if len(calls) != 4 || len(ids) != 2 || calls[0].ToolCallID != ids[0] || calls[1].ToolCallID != ids[0] || calls[2].ToolCallID != ids[1] {
		t.Fatalf("tool-call-v1 %+v, tool.call ids %v", calls, ids)
	}
	for i := range calls {
		calls[i].ToolCallID = ""
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Fatalf("tool-call-v1 events (-want +got):\n%s", diff)
	}
}

// *agent.Context is an Execution.
var _ Execution = (*agent.Context)(nil)

// The pause and the platform context are read by the agent SDK and the
// platform through their own packages; the names this package writes by
// hand must stay theirs.
func TestConventionsAgree(t *testing.T) {
	for _, c := range []struct{ ours, theirs string }{
		{pauseStatus, agent.StatusAuthRequired}, {controlMediaType, hitl.MetadataMediaType},
		{controlMarkerKey, hitl.PartKey}, {writeConfirmKey, hitl.KeyWriteConfirmation},
		{contextMetadataKey, agent.ContextMetadataKey},
	} {
		if c.ours != c.theirs {
			t.Errorf("%q here, %q there", c.ours, c.theirs)
		}
	}
	held := &WriteConfirmationRequired{Data: WriteConfirmationData{CallID: "c-1", ToolName: ToolFilesDelete, SessionID: "s-1",
		Elicitations: []Elicitation{{Mode: "url", URL: "https://p/ui/gate/a"}}}}
	status, output := held.Pause("Delete it?")
	msg := a2a.NewMessage(a2a.RoleAgent, output...)
	found := hitl.Extract(msg)
	want := &hitl.WriteConfirmation{CallID: "c-1", ToolName: ToolFilesDelete, SessionID: "s-1", Extra: map[string]any{"approval_url": "https://p/ui/gate/a"}}
	if diff := cmp.Diff(want, found.WriteConfirmation); diff != "" || status != agent.StatusAuthRequired || output[0].Text != "Delete it?" || !found.Paused() {
		t.Fatalf("status %s, text %q, confirmation (-want +got):\n%s", status, output[0].Text, diff)
	}
	if err := hitl.Validate(msg); err != nil {
		t.Fatalf("the pause is not valid NovaOS control data: %v", err)
	}
}

// The platform context is found where and as the agent SDK finds it.
func TestPlatformContextLookup(t *testing.T) {
	tests := []struct {
		name string
		md   []map[string]any
		want string
	}{
		{"map", []map[string]any{{contextMetadataKey: map[string]any{"mcp_gateway_url": "a"}}}, "a"},
		{"JSON string", []map[string]any{{contextMetadataKey: `{"mcpGatewayUrl":"b"}`}}, "b"},
		{"raw JSON", []map[string]any{{contextMetadataKey: json.RawMessage(`{"mcp_gateway_url":"c"}`)}}, "c"},
		{"the agent SDK's value", []map[string]any{{contextMetadataKey: agent.PlatformContext{MCPGatewayURL: "d"}}}, "d"},
		{"request first", []map[string]any{{contextMetadataKey: map[string]any{}}, {contextMetadataKey: map[string]any{"mcp_gateway_url": "e"}}}, ""},
		{"message when the request has none", []map[string]any{nil, {contextMetadataKey: map[string]any{"mcp_gateway_url": "f"}}}, "f"},
		{"malformed skipped", []map[string]any{{contextMetadataKey: "{"}, {contextMetadataKey: map[string]any{"mcp_gateway_url": "g"}}}, "g"},
	}
	for _, tt := range tests {
		if got := str(platformContext(tt.md), "mcp_gateway_url", "mcpGatewayUrl"); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The client forwards exactly the custom headers the agent SDK does,
// less the MCP transport's own.
func FuzzHeaderFilter(f *testing.F) {
	for _, n := range []string{"X-Customer", "Authorization", "Mcp-Session-Id", "Last-Event-ID", "X-NovaOS-Run", "a2a-version",
		"Traceparent", "X-Tenant-ID", "bad name", "", "Sec-Fetch-Mode", "If-Match", "X-Forwarded-For", "TE", "Content-Type"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ours, theirs := forwardable(name), agent.IsSafeCustomHeader(name)
		transport := strings.HasPrefix(strings.ToLower(name), "mcp-") || strings.EqualFold(name, "last-event-id")
		if ours != (theirs && !transport) {
			t.Fatalf("%q: forwarded %v, the agent SDK %v", name, ours, theirs)
		}
	})
}
