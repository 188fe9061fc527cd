package toolgw

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/instrument/instrumenttest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// Every tools/call is a server span under the caller's span (whose trace
// context its _meta carries), with the call's class and outcome, and is
// counted by them.
func TestCallsTracedAndCounted(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	h := newHarnessDeps(t, nil, func(d *Deps) { d.Tracing, d.Metrics = tp, reg })
	client, err := tools.NewClient(h.srv.URL, secret.New(h.token("mcp:tools:*")), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		tool           string
		args           any
		setup          func()
		outcome, class string
		failed         bool
	}{
		{"read", "novaos.demo.get_item", map[string]any{"id": "i1"}, nil, "ok", "read", false},
		{"unknown tool", "novaos.demo.nothing", nil, nil, outcomeRefused, "unknown", true},
		{"bad arguments", "novaos.demo.get_item", map[string]any{"id": 3}, nil, outcomeRefused, "read", true},
		{"held write", "novaos.demo.create_item", map[string]any{"name": "n"}, func() {
			h.gate.mu.Lock()
			h.gate.verdict = gate.Verdict{Verdict: gate.Hold}
			h.gate.mu.Unlock()
		}, outcomeHeld, "write", false},
		{"provider failure", "novaos.demo.echo", nil, func() {
			h.demo.mu.Lock()
			h.demo.fail = errors.New("down")
			h.demo.mu.Unlock()
		}, "failed", "read", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			rec.Reset()
			ctx, caller := tp.Tracer("agent").Start(context.Background(), "skill")
			_, _ = client.CallTool(ctx, tc.tool, tc.args)
			caller.End()
			var span sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.SpanKind() == trace.SpanKindServer {
					span = s
				}
			}
			if span == nil || span.Name() != "tools/call "+tc.tool {
				t.Fatalf("server span %v", span)
			}
			if span.Parent().SpanID() != caller.SpanContext().SpanID() {
				t.Errorf("parent %v, want the caller's span", span.Parent())
			}
			instrumenttest.WantAttrs(t, span, map[string]string{"gen_ai.tool.name": tc.tool, "gen_ai.operation.name": "execute_tool",
				"novaos.run_id": "run-1", "novaos.tool.class": tc.class, "novaos.tool.outcome": tc.outcome})
			if (span.Status().Code == codes.Error) != tc.failed {
				t.Errorf("status %v", span.Status())
			}
			if got := testutil.ToFloat64(h.svc.tel.calls.WithLabelValues(tc.outcome, tc.class)); got != 1 {
				t.Errorf("%s{%s,%s} = %v, want 1", MetricToolCalls, tc.outcome, tc.class, got)
			}
		})
	}
	if n, err := testutil.GatherAndCount(reg, MetricToolDuration); err != nil || n != len(classes) {
		t.Errorf("%d duration series (%v), want one per class", n, err)
	}
}

// The gateway notes the token's caller for the layers above it: the
// access log line and the request's server span name the tenant.
func TestCallerNoted(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name   string
		token  string
		tenant string // "" when no caller is noted
	}{
		{"execution token", h.token("mcp:tools:*"), "acme"},
		{"no token", "", ""},
		{"bad token", "not-a-token", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.demo.echo","arguments":{}}}`
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, tools.CallPath, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tenant, code := instrumenttest.NotedTenant(h.srv.Config.Handler, req); tenant != tc.tenant {
				t.Errorf("noted tenant %q (answer %d), want %q", tenant, code, tc.tenant)
			}
		})
	}
}
