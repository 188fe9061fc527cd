package telemetry

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/trace"
)

// A series' latency takes a sampled request's trace id as its exemplar,
// at most once every exemplarEvery.
func TestSeriesExemplars(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Buckets: []float64{1}})
	s := &series{duration: h}
	sampled := func() trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID(), TraceFlags: trace.FlagsSampled})
	}
	exemplar := func() string {
		var m dto.Metric
		if err := h.Write(&m); err != nil {
			t.Fatal(err)
		}
		e := m.GetHistogram().GetBucket()[0].GetExemplar()
		if e == nil {
			return ""
		}
		return e.GetLabel()[0].GetValue()
	}
	t0 := time.Unix(1_000_000, 0)
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID()})
	s.observe(time.Millisecond, unsampled, t0)
	if got := exemplar(); got != "" {
		t.Fatalf("an unsampled request left exemplar %q", got)
	}
	first, second, third := sampled(), sampled(), sampled()
	steps := []struct {
		sc   trace.SpanContext
		at   time.Time
		want trace.SpanContext
	}{
		{first, t0, first},
		{second, t0.Add(exemplarEvery - time.Nanosecond), first},
		{third, t0.Add(exemplarEvery), third},
	}
	for i, st := range steps {
		s.observe(time.Millisecond, st.sc, st.at)
		if got := exemplar(); got != st.want.TraceID().String() {
			t.Fatalf("step %d: exemplar %q; want %s", i, got, st.want.TraceID())
		}
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != 4 {
		t.Fatalf("%d observations; want 4, with or without an exemplar", n)
	}
}
