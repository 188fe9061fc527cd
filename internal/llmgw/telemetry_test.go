package llmgw

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/internal/instrument/instrumenttest"
	"novaos.dev/novaos/internal/modelapi"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// A call is one span named by the GenAI conventions, whose context the
// provider gets as traceparent, and is counted in the metrics.
func TestTelemetry(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	h := newHarness(t, nil, Deps{Tracing: tp, Metrics: reg})
	p := newProvider(t, "gpt-4o-2024-08-06")
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o-2024-08-06"})
	tok := h.token(claims("llm:model:gpt-4o"))
	if resp, data := h.do(http.MethodPost, ChatPath, tok, chatBody("gpt-4o", "stream", true)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	// A model the token does not grant is counted without its name: only
	// configured models are labels.
	h.do(http.MethodPost, ChatPath, tok, chatBody("gpt-5"))

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat gpt-4o" {
		t.Errorf("span name %q", s.Name())
	}
	instrumenttest.WantAttrs(t, s, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": "openai",
		"gen_ai.system": "openai", "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.usage.input_tokens": "2", "gen_ai.usage.output_tokens": "2",
		"novaos.tenant_id": "acme", "novaos.run_id": "run-1"})
	tp0 := p.LastRequest().Header.Get("Traceparent")
	if !strings.Contains(tp0, s.SpanContext().TraceID().String()) || !strings.Contains(tp0, s.SpanContext().SpanID().String()) {
		t.Errorf("the provider got traceparent %q, not the span's %s", tp0, s.SpanContext().TraceID())
	}

	if got := testutil.ToFloat64(h.svc.meter.requests.WithLabelValues("gpt-4o", "ok")); got != 1 {
		t.Errorf("requests{gpt-4o,ok} = %v", got)
	}
	if got := testutil.ToFloat64(h.svc.meter.tokens.WithLabelValues("acme", "output")); got != chatCompletion {
		t.Errorf("tokens{acme,output} = %v", got)
	}
	if got := testutil.ToFloat64(h.svc.meter.cost.WithLabelValues("acme")); got <= 0 {
		t.Errorf("cost{acme} = %v", got)
	}
	n, err := testutil.GatherAndCount(reg, "novaos_llm_requests_total", "novaos_llm_tokens_total", "novaos_llm_cost_usd_total",
		"novaos_llm_request_duration_seconds", "novaos_llm_time_to_first_token_seconds")
	if err != nil || n < 5 {
		t.Errorf("the registry gathers %d series of the gateway's metrics (%v)", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP novaos_llm_requests_total Calls to the LLM gateway, by model and outcome.
# TYPE novaos_llm_requests_total counter
novaos_llm_requests_total{model="",outcome="model_not_allowed"} 1
novaos_llm_requests_total{model="gpt-4o",outcome="ok"} 1
`), "novaos_llm_requests_total"); err != nil {
		t.Error(err)
	}
}

// The platform's own model clients reach the gateway in process: the
// memory service's embedder, as the platform tenant, metered and
// budgeted.
func TestPlatformClients(t *testing.T) {
	platform := &Platform{}
	emb := modelapi.NewEmbedder(PlatformBaseURL, "text-embedding-3-small", secret.Value{},
		&modelapi.EmbedderOptions{Options: modelapi.Options{HTTPClient: platform.Client(time.Minute)}})
	if _, err := emb.Embed(t.Context(), []string{"before the gateway"}); err == nil {
		t.Fatal("a platform call before the gateway was built succeeded")
	}
	h := newHarness(t, &Options{Platform: platform, PlatformTenant: "ops"}, Deps{})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "sk-upstream")
	h.route("text-embedding-3-small", llm.Target{Provider: "openai", Model: "text-embedding-3-small"})
	h.route("judge", llm.Target{Provider: "openai", Model: "gpt-4o"})
	vecs, err := emb.Embed(t.Context(), []string{"hello"})
	if err != nil || len(vecs) != 1 || len(vecs[0]) != llmtest.DefaultDimensions {
		t.Fatalf("Embed: %v, %v", vecs, err)
	}
	chat := modelapi.NewChat(PlatformBaseURL, "judge", secret.Value{}, &modelapi.Options{HTTPClient: platform.Client(time.Minute)})
	c, err := chat.Complete(t.Context(), modelapi.ChatRequest{Messages: []modelapi.ChatMessage{{Role: "user", Content: "judge this"}}})
	if err != nil || c.Content != "judge this" {
		t.Fatalf("Complete: %+v, %v", c, err)
	}
	h.sync()
	rows, err := h.store.Usage(t.Context(), llm.UsageQuery{TenantID: "ops"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("the platform tenant's usage: %+v, %v", rows, err)
	}
	if got := p.LastRequest().Header.Get("Authorization"); got != "Bearer sk-upstream" {
		t.Errorf("the provider got Authorization %q", got)
	}
	// The platform tenant's budget holds its calls too.
	h.admin(http.MethodPut, llm.BudgetsPath+"/ops", llm.BudgetRequest{DailyTokens: 1}, http.StatusCreated)
	_, err = emb.Embed(context.WithoutCancel(t.Context()), []string{"over"})
	var ae *modelapi.APIError
	if err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a platform call over its budget: %v (%T)", err, ae)
	}
}

// The gateway notes the token's caller for the layers above it: the
// access log line and the request's server span name the tenant.
func TestCallerNoted(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t, "gpt-4o")
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	tests := []struct {
		name   string
		token  string
		tenant string // "" when no caller is noted
	}{
		{"execution token", h.token(claims("llm:model:*")), "acme"},
		{"no token", "", ""},
		{"bad token", "not-a-token", ""},
	}
	body, _ := json.Marshal(chatBody("gpt-4o"))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, ChatPath, bytes.NewReader(body))
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
