package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/internal/telemetry/otlptest"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/tools"
)

// tracedAgent's skill writes a memory, which the tenant's tool policy
// sends to the gate, reads it back and asks a model, all through the
// platform's gateways with the run's token.
func tracedAgent() *agent.Agent {
	a := agent.New("tracer", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "answer", Handler: func(c *agent.Context) (agent.Result, error) {
		b, err := tools.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Memory.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "the refund limit is 300"}); err != nil {
			return agent.Result{}, fmt.Errorf("memory write: %w", err)
		}
		if _, err := b.Memory.Query(c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "refund limit"}); err != nil {
			return agent.Result{}, fmt.Errorf("memory query: %w", err)
		}
		m, err := llm.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		answer, err := m.ChatCompletion(c, &llm.ChatCompletionRequest{Model: llmtest.ModelChat,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("what is the refund limit")}}})
		if err != nil {
			return agent.Result{}, fmt.Errorf("chat: %w", err)
		}
		return agent.Result{Output: answer.Choices[0].Message.Content.String()}, nil
	}})
	return a
}

// tracedPlatform is a server exporting its spans to an in-test
// collector, with tracedAgent installed for tenant acme, a model route to
// an in-process provider and a tool policy that gates memory writes.
type tracedPlatform struct {
	srv      *app.Server
	rcv      *otlptest.Receiver
	logs     *logLines
	provider *llmtest.Server
	user     gateway.ClientOptions
	instance string
}

func startTraced(t *testing.T, ratio float64) *tracedPlatform {
	t.Helper()
	p := &tracedPlatform{rcv: otlptest.Start(t), logs: newLogLines(), provider: llmtest.NewServer(nil)}
	t.Cleanup(p.provider.Close)
	p.srv = start(t, &app.Options{DataDir: t.TempDir(), OTLPEndpoint: p.rcv.URL(), TraceSampleRatio: ratio, AccessLog: true,
		Logger: p.logs.logger(), LLM: app.LLMOptions{AllowPrivate: true},
		Agents: app.AgentOptions{Hosted: map[string]app.Agent{"tracer": tracedAgent()}}})
	admin := mint(t, p.srv, identity.Claims{TenantID: "acme", Subject: "ops", Scopes: []string{llm.ScopeAdmin, tools.ScopeAdmin}})
	put := func(path string, body any) {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, p.srv.URL()+path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+admin.Reveal())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %s", path, resp.Status)
		}
	}
	put(llm.ProvidersPath+"/fake", llm.ProviderRequest{BaseURL: p.provider.BaseURL()})
	put(llm.ModelsPath+"/"+llmtest.ModelChat, llm.RouteRequest{Targets: []llm.Target{{Provider: "fake", Model: llmtest.ModelChat}}})
	// A write the gate's rules decide alone: it passes, without a person.
	put(toolgw.PolicyPath, toolgw.PolicyBody{Expr: `tool == "` + tools.ToolMemoryWrite + `" ? "gate" : "allow"`})

	p.user = gateway.ClientOptions{Token: mint(t, p.srv, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}})}
	inst, err := p.client(t, "").Install(t.Context(), gateway.InstallRequest{Name: "tracer", Hosted: "tracer",
		Scopes: []string{"mcp:tools:*", "memory:write:run", "memory:read:*", "llm:model:*"}})
	if err != nil {
		t.Fatal(err)
	}
	p.instance = inst.ID
	return p
}

// client is a gateway client of the user's, sending traceparent with
// every call when it is set.
func (p *tracedPlatform) client(t *testing.T, traceparent string) *gateway.Client {
	t.Helper()
	o := p.user
	if traceparent != "" {
		o.Headers = http.Header{"Traceparent": {traceparent}}
	}
	c, err := gateway.NewClient(p.srv.URL(), &o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run executes a run of the instance, the execute request carrying
// traceparent when it is set, follows it to its end and returns its id
// and its recorded events.
func (p *tracedPlatform) run(t *testing.T, traceparent string) (string, []gateway.RunEvent) {
	t.Helper()
	c := p.client(t, traceparent)
	res, err := c.Execute(t.Context(), gateway.ExecuteRequest{InstanceID: p.instance, Input: "what is the refund limit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, end := follow(t, p.client(t, ""), res.RunID, ""); !end.IsTerminal() || end.IsFailure() {
		t.Fatalf("the run ended on %s %s: %s", end.WireType, end.Status, end.Content)
	}
	page, err := p.client(t, "").RunEvents(t.Context(), res.RunID, gateway.RunEventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) == 0 {
		t.Fatal("the run has no events")
	}
	return res.RunID, page.Events
}

// flush shuts the server down, which exports every span not yet
// exported: what the collector holds after it is all it will get.
func (p *tracedPlatform) flush(t *testing.T) {
	t.Helper()
	if err := p.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// untilDeadline bounds a wait by the test's deadline, leaving a tenth of
// the time left to report a failure.
func untilDeadline(t *testing.T) context.Context {
	d, ok := t.Deadline()
	if !ok {
		d = time.Now().Add(otlptest.WaitTimeout)
	}
	ctx, cancel := context.WithDeadline(t.Context(), d.Add(-time.Until(d)/10))
	t.Cleanup(cancel)
	return ctx
}

// drawTrace draws the spans of trace as trees, one span a line,
// "name KIND", indented under its parent; siblings in the order they
// started. A span whose parent was not received is drawn as a root.
func drawTrace(spans []otlptest.Span, trace string) string {
	in := map[string]bool{}
	var mine []otlptest.Span
	for _, s := range spans {
		if s.TraceID == trace {
			mine = append(mine, s)
			in[s.SpanID] = true
		}
	}
	slices.SortStableFunc(mine, func(a, b otlptest.Span) int { return a.Start.Compare(b.Start) })
	var b strings.Builder
	var draw func(parent string, depth int)
	draw = func(parent string, depth int) {
		for _, s := range mine {
			root := parent == "" && !in[s.ParentSpanID]
			if root || (parent != "" && s.ParentSpanID == parent) {
				fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat("  ", depth), s.Name, s.Kind)
				draw(s.SpanID, depth+1)
			}
		}
	}
	draw("", 0)
	return b.String()
}

// find returns the one span match accepts, failing t if there is not
// exactly one.
func find(t *testing.T, spans []otlptest.Span, what string, match func(otlptest.Span) bool) otlptest.Span {
	t.Helper()
	var found []otlptest.Span
	for _, s := range spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans are %s, want one", len(found), what)
	}
	return found[0]
}

// spanOf matches the span of trace named name of kind.
func spanOf(trace, name, kind string) func(otlptest.Span) bool {
	return func(s otlptest.Span) bool { return s.TraceID == trace && s.Name == name && s.Kind == kind }
}

// checkAttrs reports the attributes of s that are not as want says.
func checkAttrs(t *testing.T, s otlptest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attributes[k]; !ok || got != v {
			t.Errorf("span %q (%s): attribute %s = %v, want %v", s.Name, s.Kind, k, got, v)
		}
	}
}

// runTrace is the run's trace, drawn.
const runTrace = `invoke_agent tracer INTERNAL
  SendStreamingMessage CLIENT
    SendStreamingMessage SERVER
      skill answer INTERNAL
        tools/call novaos.memory.write CLIENT
          POST /mcp/v1/ SERVER
            tools/call novaos.memory.write SERVER
              gate.decide INTERNAL
              memory.write INTERNAL
        tools/call novaos.memory.query CLIENT
          POST /mcp/v1/ SERVER
            tools/call novaos.memory.query SERVER
              memory.query INTERNAL
        POST /v1/chat/completions SERVER
          chat gpt-4o CLIENT
`

// A run is one trace from its delivery down to the tools, the memory,
// the gate and the model it called, linked to the execute request that
// queued it, which is the child of the caller's span; the provider, the
// run's events and the access log name the same spans.
func TestTraceOfARun(t *testing.T) {
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	p := startTraced(t, 1)
	runID, events := p.run(t, "00-"+callerTrace+"-"+callerSpan+"-01")

	// The collector is waited on for the whole trace, then the server is
	// shut down so that nothing arrives after the spans are counted.
	var delivery otlptest.Span
	wantSpans := strings.Count(runTrace, "\n")
	_, err := p.rcv.WaitSpans(untilDeadline(t), func(spans []otlptest.Span) bool {
		i := slices.IndexFunc(spans, func(s otlptest.Span) bool {
			return s.Kind == "INTERNAL" && s.Attributes["novaos.run_id"] == runID && s.ParentSpanID == ""
		})
		if i < 0 {
			return false
		}
		delivery = spans[i]
		n := 0
		for _, s := range spans {
			if s.TraceID == delivery.TraceID {
				n++
			}
		}
		return n >= wantSpans && slices.ContainsFunc(spans, func(s otlptest.Span) bool { return s.TraceID == callerTrace })
	})
	if err != nil {
		var got strings.Builder
		for _, s := range p.rcv.Spans() {
			fmt.Fprintf(&got, "%s %s trace %s\n", s.Name, s.Kind, s.TraceID)
		}
		t.Fatalf("%v; received:\n%s", err, got.String())
	}
	p.flush(t)
	spans := p.rcv.Spans()
	trace := delivery.TraceID
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.TraceID+"/"+s.SpanID] = s
	}

	// The caller's trace holds the execute request alone; the run's
	// delivery is a trace of its own, linked to it, since a run outlives
	// the request that queued it.
	if diff := cmp.Diff("POST /api/v1/execute SERVER\n", drawTrace(spans, callerTrace)); diff != "" {
		t.Errorf("the caller's trace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(runTrace, drawTrace(spans, trace)); diff != "" {
		t.Errorf("the run's trace (-want +got):\n%s", diff)
	}
	if t.Failed() {
		t.FailNow()
	}
	execute := find(t, spans, "the execute request's", spanOf(callerTrace, "POST /api/v1/execute", "SERVER"))
	if execute.ParentSpanID != callerSpan {
		t.Errorf("the execute request's span has parent %q, want the caller's %s", execute.ParentSpanID, callerSpan)
	}
	checkAttrs(t, execute, map[string]any{"http.route": "/api/v1/execute", "http.request.method": "POST",
		"http.response.status_code": int64(http.StatusAccepted), "novaos.service": "gateway", "novaos.tenant_id": "acme"})
	if want := []otlptest.Link{{TraceID: callerTrace, SpanID: execute.SpanID, Attributes: map[string]any{}}}; !cmp.Equal(want, delivery.Links) {
		t.Errorf("the delivery's links (-want +got):\n%s", cmp.Diff(want, delivery.Links))
	}
	checkAttrs(t, delivery, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tracer",
		"novaos.run_id": runID, "novaos.tenant_id": "acme", "novaos.instance_id": p.instance, "novaos.run.status": "COMPLETED",
		"novaos.run.attempt": int64(1)})
	for _, kind := range []string{"CLIENT", "SERVER"} {
		checkAttrs(t, find(t, spans, "SendStreamingMessage "+kind, spanOf(trace, "SendStreamingMessage", kind)),
			map[string]any{"a2a.method.name": "SendStreamingMessage", "a2a.protocol.binding": "JSONRPC"})
	}
	checkAttrs(t, find(t, spans, "the skill's", spanOf(trace, "skill answer", "INTERNAL")), map[string]any{
		"novaos.skill": "answer", "novaos.skill.status": "COMPLETED", "gen_ai.agent.name": "tracer", "novaos.run_id": runID})

	// Each tool call: the SDK's client span and the gateway's server span
	// name the same call; the memory operation runs under the latter.
	toolCalls := map[string]otlptest.Span{} // the server spans, by tool
	for _, tc := range []struct{ tool, class, op string }{
		{tools.ToolMemoryWrite, "write", "memory.write"},
		{tools.ToolMemoryQuery, "read", "memory.query"},
	} {
		client := find(t, spans, "the SDK's call of "+tc.tool, spanOf(trace, "tools/call "+tc.tool, "CLIENT"))
		server := find(t, spans, "the gateway's call of "+tc.tool, spanOf(trace, "tools/call "+tc.tool, "SERVER"))
		common := map[string]any{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
			"gen_ai.tool.name": tc.tool, "novaos.run_id": runID}
		checkAttrs(t, client, common)
		checkAttrs(t, server, common)
		checkAttrs(t, server, map[string]any{"novaos.tenant_id": "acme", "novaos.tool.class": tc.class,
			"gen_ai.tool.call.id": client.Attributes["gen_ai.tool.call.id"]})
		if req, ok := byID[trace+"/"+server.ParentSpanID]; !ok || req.ParentSpanID != client.SpanID {
			t.Errorf("the gateway's call of %s is not under the request the SDK's call made", tc.tool)
		} else {
			checkAttrs(t, req, map[string]any{"http.route": tools.Path + "/", "novaos.service": "tools", "novaos.tenant_id": "acme"})
		}
		op := find(t, spans, tc.op, spanOf(trace, tc.op, "INTERNAL"))
		checkAttrs(t, op, map[string]any{"novaos.run_id": runID, "novaos.tenant_id": "acme", "novaos.memory.outcome": "ok"})
		toolCalls[tc.tool] = server
	}
	checkAttrs(t, find(t, spans, "the gate's decision", spanOf(trace, "gate.decide", "INTERNAL")), map[string]any{
		"gate.verdict": "pass", "gate.action_type": tools.ToolMemoryWrite, "novaos.tenant_id": "acme"})

	// The model call: the gateway's span with GenAI's attributes, whose
	// context the provider received.
	chat := find(t, spans, "the model call's", spanOf(trace, "chat "+llmtest.ModelChat, "CLIENT"))
	checkAttrs(t, chat, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": llmtest.ModelChat,
		"gen_ai.response.model": llmtest.ModelChat, "gen_ai.provider.name": "fake", "novaos.run_id": runID, "novaos.tenant_id": "acme"})
	if got, want := p.provider.LastRequest().Header.Get("Traceparent"), "00-"+trace+"-"+chat.SpanID+"-01"; got != want {
		t.Errorf("the provider received traceparent %q, want %q (the model call's span)", got, want)
	}
	modelHTTP := find(t, spans, "the model request's", spanOf(trace, "POST /v1/chat/completions", "SERVER"))
	checkAttrs(t, modelHTTP, map[string]any{"http.route": "/v1/chat/completions", "novaos.service": "llm", "novaos.tenant_id": "acme"})

	for _, s := range spans {
		if s.Resource["service.name"] != telemetry.ServiceName {
			t.Errorf("span %q has the resource %v, want service.name %s", s.Name, s.Resource, telemetry.ServiceName)
		}
	}

	// The run's events name the span that recorded them: the execute
	// request queued the run, the delivery ran it, the gateways recorded
	// the calls.
	seen := map[string]bool{}
	for _, e := range events {
		var data struct {
			Status       string `json:"status"`
			Tool         string `json:"tool"`
			InputTokens  int64  `json:"input_tokens"`
			OutputTokens int64  `json:"output_tokens"`
		}
		json.Unmarshal(e.Data, &data)
		var want otlptest.Span
		switch {
		case e.Type == "status" && data.Status == "QUEUED":
			want = execute
		case e.Type == "tool.call" || e.Type == "tool.result":
			want = toolCalls[data.Tool]
		case e.Type == llm.EventCall:
			want = chat
			checkAttrs(t, chat, map[string]any{"gen_ai.usage.input_tokens": data.InputTokens, "gen_ai.usage.output_tokens": data.OutputTokens})
			if data.InputTokens <= 0 || data.OutputTokens <= 0 {
				t.Errorf("the model call used %d+%d tokens", data.InputTokens, data.OutputTokens)
			}
		default:
			want = delivery
		}
		seen[want.Name+" "+want.Kind] = true
		if got := byID[e.TraceID+"/"+e.SpanID]; e.TraceID != want.TraceID || e.SpanID != want.SpanID {
			t.Errorf("event %s %s names span %s/%s (%q), want %q's %s/%s", e.Type, e.Data, e.TraceID, e.SpanID, got.Name,
				want.Name, want.TraceID, want.SpanID)
		}
	}

	for _, want := range []otlptest.Span{execute, delivery, toolCalls[tools.ToolMemoryWrite], toolCalls[tools.ToolMemoryQuery], chat} {
		if !seen[want.Name+" "+want.Kind] {
			t.Errorf("no event of the run names %q", want.Name)
		}
	}

	// The access log names the spans of the requests it logs.
	for _, want := range []otlptest.Span{execute, modelHTTP} {
		route := want.Attributes["http.route"]
		line := p.logs.wait(t, func(m map[string]any) bool { return m["msg"] == "http request" && m["route"] == route })
		if line[telemetry.LogTraceID] != want.TraceID || line[telemetry.LogSpanID] != want.SpanID || line["tenant"] != "acme" {
			t.Errorf("the access log of %s: trace %v span %v tenant %v; want %s %s acme", route,
				line[telemetry.LogTraceID], line[telemetry.LogSpanID], line["tenant"], want.TraceID, want.SpanID)
		}
	}
}

// Sampling: a run is recorded when the request that queued it was, and
// otherwise at the sampling ratio. A run not recorded still carries one
// trace context from its delivery through the agent and the gateways to
// the model provider, and the access log names it.
func TestTraceSampling(t *testing.T) {
	const callerTrace, callerSpan = "5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7"
	tests := []struct {
		name        string
		ratio       float64
		traceparent string
		caller      string // the caller's trace, drawn
		recorded    bool   // the run's
	}{
		{"new trace sampled out", 1e-12, "", "", false},
		{"the caller sampled", 1e-12, "00-" + callerTrace + "-" + callerSpan + "-01", "POST /api/v1/execute SERVER\n", true},
		{"the caller did not sample", 1, "00-" + callerTrace + "-" + callerSpan + "-00", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startTraced(t, tc.ratio)
			_, events := p.run(t, tc.traceparent)
			p.flush(t)
			spans := p.rcv.Spans()

			i := slices.IndexFunc(events, func(e gateway.RunEvent) bool { return e.Type == llm.EventCall })
			if i < 0 {
				t.Fatalf("the run recorded no model call: %+v", events)
			}
			call := events[i]
			flags := "00"
			if tc.recorded {
				flags = "01"
			}
			if got, want := p.provider.LastRequest().Header.Get("Traceparent"), "00-"+call.TraceID+"-"+call.SpanID+"-"+flags; got != want {
				t.Errorf("the provider received traceparent %q, want %q (the model call's span)", got, want)
			}
			for _, e := range events {
				var data struct{ Status string }
				json.Unmarshal(e.Data, &data)
				if e.Type == "status" && data.Status == "QUEUED" {
					continue // the execute request's
				}
				if e.TraceID != call.TraceID {
					t.Errorf("event %s %s is in trace %q, want the run's %s", e.Type, e.Data, e.TraceID, call.TraceID)
				}
			}
			line := p.logs.wait(t, func(m map[string]any) bool { return m["msg"] == "http request" && m["route"] == "/v1/chat/completions" })
			if line[telemetry.LogTraceID] != call.TraceID {
				t.Errorf("the access log of the model call names trace %v, want the run's %s", line[telemetry.LogTraceID], call.TraceID)
			}

			if diff := cmp.Diff(tc.caller, drawTrace(spans, callerTrace)); diff != "" {
				t.Errorf("the caller's trace (-want +got):\n%s", diff)
			}
			want := ""
			if tc.recorded {
				want = runTrace
			}
			if diff := cmp.Diff(want, drawTrace(spans, call.TraceID)); diff != "" {
				t.Errorf("the run's trace (-want +got):\n%s", diff)
			}
			if tc.ratio < 1 && !tc.recorded && len(spans) != 0 {
				t.Errorf("%d spans were exported of new traces sampled out, the first %q", len(spans), spans[0].Name)
			}
		})
	}
}
