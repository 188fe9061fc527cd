package memorysvc

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/memory"
)

// Metric names.
const (
	MetricOperations = "novaos_memory_operations_total"
	MetricDuration   = "novaos_memory_operation_duration_seconds"
	MetricIndexSize  = "novaos_memory_index_size"
	MetricIndexBytes = "novaos_memory_index_bytes"
)

// Span attributes of an operation.
const (
	attrOp      = attribute.Key("novaos.memory.operation")
	attrOutcome = attribute.Key("novaos.memory.outcome")
)

// ops are the operations, one per tool.
var ops = []string{opOf(ToolWrite), opOf(ToolQuery), opOf(ToolUpdate), opOf(ToolForget), opOf(ToolHint),
	opOf(ToolAssemble), opOf(ToolHintStatus), opOf(ToolProposalStatus)}

// outcomes are the outcome label's values: ok, or the error's code.
var outcomes = map[string]bool{memory.CodeInvalid: true, memory.CodeScope: true, memory.CodeNotOwner: true, memory.CodePolicy: true,
	memory.CodeScreened: true, memory.CodeNotFound: true, memory.CodeConflict: true, memory.CodeKeyReused: true,
	memory.CodeUnauthorized: true, memory.CodeUnavailable: true, memory.CodeInternal: true}

// opOf is a tool's operation: novaos.memory.write is write.
func opOf(tool string) string { return strings.TrimPrefix(tool, "novaos.memory.") }

var internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// telemetry traces and counts the service's operations.
type telemetry struct {
	tracer trace.Tracer
	ops    *prometheus.CounterVec
	ok     map[string]prometheus.Counter  // by op
	took   map[string]prometheus.Observer // by op
	names  map[string]string              // span names, by op
}

func newTelemetry(tp trace.TracerProvider, reg prometheus.Registerer, store memory.Store, log *slog.Logger) *telemetry {
	t := &telemetry{tracer: instrument.Tracer(tp, "novaos.dev/novaos/internal/memorysvc"), names: map[string]string{}}
	t.ops = instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricOperations,
		Help: "Memory operations, by operation and outcome (ok, or the error's code)."}, []string{"op", "outcome"}), log)
	dur := instrument.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricDuration,
		Help: "Time a memory operation took, by operation.", Buckets: instrument.Buckets}, []string{"op"}), log)
	t.ok = instrument.Series(t.ops.MustCurryWith(prometheus.Labels{"outcome": "ok"}), ops...)
	t.took = instrument.Series(dur, ops...)
	for _, op := range ops {
		t.names[op] = "memory." + op
	}
	if r, ok := store.(memory.IndexReporter); ok {
		instrument.Register(reg, instrument.Scraped(log, indexSize{r}.collect, indexSizeDesc, indexBytesDesc), log)
	}
	return t
}

// start starts op's span for c.
func (t *telemetry) start(ctx context.Context, op string, c *Caller) (context.Context, trace.Span, time.Time) {
	ctx, span := t.tracer.Start(ctx, t.names[op], internalSpan...)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{attrOp.String(op)}
		if c != nil {
			attrs = append(attrs, instrument.AttrTenant.String(c.Tenant), instrument.AttrAgent.String(c.Agent))
			if c.Run != "" {
				attrs = append(attrs, instrument.AttrRun.String(c.Run))
			}
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span, time.Now()
}

// end counts op, which failed with e when it is set, and ends its span.
func (t *telemetry) end(span trace.Span, op string, start time.Time, e *memory.Error) {
	if took := t.took[op]; took != nil {
		took.Observe(instrument.Since(start))
	}
	outcome := "ok"
	if e != nil {
		outcome = memory.CodeInternal
		if outcomes[e.Code] {
			outcome = e.Code
		}
	}
	if outcome == "ok" && t.ok[op] != nil {
		t.ok[op].Inc()
	} else {
		t.ops.WithLabelValues(op, outcome).Inc()
	}
	if span.IsRecording() {
		span.SetAttributes(attrOutcome.String(outcome))
		if e != nil {
			instrument.Failed(span, outcome, outcome)
		}
	}
	span.End()
}

// indexSize reports the store's in-process index, read at each scrape
// from memory.
type indexSize struct{ r memory.IndexReporter }

var (
	indexSizeDesc  = prometheus.NewDesc(MetricIndexSize, "What the memory search index holds in this process, by kind (partitions, memories).", []string{"kind"}, nil)
	indexBytesDesc = prometheus.NewDesc(MetricIndexBytes, "The memory search index's estimated size in this process.", nil, nil)
)

func (x indexSize) collect(_ context.Context, ch chan<- prometheus.Metric) error {
	st := x.r.IndexStats()
	ch <- prometheus.MustNewConstMetric(indexSizeDesc, prometheus.GaugeValue, float64(st.Partitions), "partitions")
	ch <- prometheus.MustNewConstMetric(indexSizeDesc, prometheus.GaugeValue, float64(st.Memories), "memories")
	ch <- prometheus.MustNewConstMetric(indexBytesDesc, prometheus.GaugeValue, float64(st.Bytes))
	return nil
}
