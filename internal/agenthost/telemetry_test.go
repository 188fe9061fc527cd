package agenthost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store"
)

// Every call to a hosted agent is a server span, child of the trace
// context the call carries, and counted; the push delivery's metrics sit
// in the same registry.
func TestHostTracesAndCountsCalls(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	guard, err := httpapi.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	tasks := a2asrv.NewMemoryTaskStore(nil)
	st := &store.Stores{Tasks: tasks, PushConfigs: tasks.PushConfigStore(), PushOutbox: tasks.PushOutbox()}
	h, err := agenthost.New(t.Context(), st, agenthost.Deps{BaseURL: ts.URL, Guard: guard, Tracing: tp, Metrics: reg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	for _, r := range h.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	c, err := a2aclient.NewForURL(ts.URL+agenthost.Path("echo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, err := c.SendText(t.Context(), "hello", "", "", a2aclient.WithHeader("traceparent", parent)); err != nil {
		t.Fatal(err)
	}
	var got []sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.SpanKind() == trace.SpanKindServer {
			got = append(got, sp)
		}
	}
	if len(got) != 1 || got[0].Name() != a2a.MethodSendMessage || got[0].Parent().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("server spans %v", got)
	}
	for name, want := range map[string]int{"novaos_push_deliveries_total": 2, "novaos_push_queue_depth": 1, "novaos_push_dead_letters_total": 1} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series, want %d (%v)", name, n, want, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sent float64
	for _, f := range families {
		if f.GetName() != "novaos_a2a_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == a2a.MethodSendMessage && labels["binding"] == "jsonrpc" && labels["outcome"] == "ok" {
				sent = m.GetCounter().GetValue()
			}
		}
	}
	if sent != 1 {
		t.Errorf("novaos_a2a_requests_total{SendMessage,jsonrpc,ok} = %v, want 1", sent)
	}
}
