package memorysvc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/internal/instrument/instrumenttest"
	"novaos.dev/novaos/memory"
)

// Every operation is a span and is counted by its outcome; the store's
// index is reported at each scrape.
func TestOperationsTracedAndCounted(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	s, _ := newService(t, nil)
	s.tel = newTelemetry(tp, reg, s.store, s.log)
	c := agentCaller("acme", "bot")
	tests := []struct {
		tool, args, outcome string
	}{
		{ToolWrite, `{"scope":"agent","content":"Customer prefers email."}`, "ok"},
		{ToolQuery, `{"scope":"agent","query":"email"}`, "ok"},
		{ToolWrite, `{"scope":"user","content":"x"}`, memory.CodeScope},
		{ToolQuery, `{"scope":"agent","query":"email","bogus":1}`, memory.CodeInvalid},
	}
	for _, tc := range tests {
		// The gate commits the agent-scope proposal before the query, so
		// the query loads the partition's index.
		s.judgeProposals(t.Context())
		rec.Reset()
		res, ok := s.CallTool(t.Context(), c, tc.tool, json.RawMessage(tc.args))
		if !ok || res.IsError != (tc.outcome != "ok") {
			t.Fatalf("%s %s: %+v", tc.tool, tc.args, res)
		}
		spans := rec.Ended()
		if len(spans) != 1 || spans[0].Name() != "memory."+opOf(tc.tool) {
			t.Fatalf("spans %v", spans)
		}
		attrs := instrumenttest.Attrs(spans[0])
		if attrs["novaos.memory.outcome"] != tc.outcome || attrs["novaos.run_id"] != "run-1" || attrs["novaos.tenant_id"] != "acme" {
			t.Errorf("%s: attributes %v", tc.tool, attrs)
		}
		if (spans[0].Status().Code == codes.Error) != (tc.outcome != "ok") {
			t.Errorf("%s: status %v", tc.tool, spans[0].Status())
		}
	}
	for _, tc := range []struct {
		op, outcome string
		want        float64
	}{{"write", "ok", 1}, {"query", "ok", 1}, {"write", memory.CodeScope, 1}, {"query", memory.CodeInvalid, 1}, {"forget", "ok", 0}} {
		if got := testutil.ToFloat64(s.tel.ops.WithLabelValues(tc.op, tc.outcome)); got != tc.want {
			t.Errorf("%s{%s,%s} = %v, want %v", MetricOperations, tc.op, tc.outcome, got, tc.want)
		}
	}
	// The query searched the agent partition, which the index now holds.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var partitions float64 = -1
	for _, f := range families {
		if f.GetName() != MetricIndexSize {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "partitions" {
				partitions = m.GetGauge().GetValue()
			}
		}
	}
	if partitions < 1 {
		t.Errorf("%s{kind=partitions} = %v after a search", MetricIndexSize, partitions)
	}
	if n, err := testutil.GatherAndCount(reg, MetricIndexBytes); err != nil || n != 1 {
		t.Errorf("%s: %d series (%v)", MetricIndexBytes, n, err)
	}
	if !strings.HasPrefix(MetricIndexSize, "novaos_memory_") {
		t.Error("metric names are the service's")
	}
}
