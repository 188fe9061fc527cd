package tools

import (
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/memory"
)

// A skill's tool call is a client span under the skill's, carrying the
// run, and its trace context reaches the gateway in the traceparent header
// and in the call's _meta.
func TestToolCallSpans(t *testing.T) {
	g := newFakeGateway(t, func(c gwCall) reply {
		if c.tool() == ToolFilesList {
			return reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no such folder"}}}}
		}
		return reply{result: okResult}
	})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cl := serveAgentWith(t, &agent.Options{TracerProvider: tp}, func(c *agent.Context) (agent.Result, error) {
		b, err := From(c, &FromOptions{BindingsOptions: BindingsOptions{Timeout: time.Minute}})
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Memory.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "note"}); err != nil {
			return agent.Result{}, err
		}
		_, _ = b.Files.List(c, "reports/")
		return agent.Result{Output: "done"}, nil
	})
	pc := map[string]any{"run_id": "run-1", "tenant_id": "acme", "mcp_gateway_url": g.srv.URL + Path, "mcp_gateway_token": testToken,
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	resp, err := cl.SendMessage(t.Context(), request(pc))
	if err != nil || resp.Task == nil || resp.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v, %v", resp, err)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	skill := spans["skill work"]
	if skill == nil || skill.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("skill span %v", skill)
	}
	calls := g.toolCalls()
	for i, tool := range []string{ToolMemoryWrite, ToolFilesList} {
		s := spans["tools/call "+tool]
		if s == nil {
			t.Fatalf("no span of %s among %v", tool, spans)
		}
		if s.Parent().SpanID() != skill.SpanContext().SpanID() {
			t.Errorf("%s's parent %v, want the skill span", tool, s.Parent())
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		for k, want := range map[string]string{"novaos.run_id": "run-1", "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool", "mcp.method.name": "tools/call"} {
			if attrs[k] != want {
				t.Errorf("%s: %s = %q, want %q", tool, k, attrs[k], want)
			}
		}
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		var p struct {
			Meta map[string]string `json:"_meta"`
		}
		_ = json.Unmarshal(calls[i].Params, &p)
		if got := calls[i].Header.Get("traceparent"); got != want || p.Meta[MetaTraceparent] != want {
			t.Errorf("%s carried traceparent %q and _meta %q, want its span's %q", tool, got, p.Meta[MetaTraceparent], want)
		}
	}
	s := spans["tools/call "+ToolFilesList]
	typ := ""
	for _, kv := range s.Attributes() {
		if kv.Key == AttrErrorType {
			typ = kv.Value.Emit()
		}
	}
	if s.Status().Code != codes.Error || typ != "tool_error" {
		t.Errorf("a tool's own failure: status %v, error.type %q", s.Status(), typ)
	}
}
