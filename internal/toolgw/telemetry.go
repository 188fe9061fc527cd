package toolgw

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/tools"
)

// Metric names.
const (
	MetricToolCalls    = "novaos_tool_calls_total"
	MetricToolDuration = "novaos_tool_call_duration_seconds"
)

// Span attributes of a call, after OpenTelemetry's MCP and GenAI
// conventions, and the gateway's own.
const (
	attrMCPMethod = attribute.Key("mcp.method.name")
	attrToolName  = attribute.Key("gen_ai.tool.name")
	attrToolCall  = attribute.Key("gen_ai.tool.call.id")
	attrClass     = attribute.Key("novaos.tool.class")
	attrOutcome   = attribute.Key("novaos.tool.outcome")
)

// Outcomes of a call: the provider's (ok, error for a tool that ran and
// failed, failed, timeout), or the gateway's answer before or instead of
// running it.
const (
	outcomeRefused     = "refused"     // unknown tool, scope, arguments, policy, the gate's kill
	outcomeHeld        = "held"        // a person must approve it first
	outcomeUnavailable = "unavailable" // the gateway or the gate could not take it
)

// classes are the class label's values; "unknown" for a call refused
// before it was classified.
var classes = []string{string(tools.ClassRead), string(tools.ClassWrite), "unknown"}

var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// callStat is what callTool learns of a call as it goes.
type callStat struct {
	class tools.Class
	call  *Request // set once the call is built
}

// telemetry traces and counts the gateway's calls.
type telemetry struct {
	tracer   trace.Tracer
	calls    *prometheus.CounterVec
	duration map[string]prometheus.Observer // by class
}

func newTelemetry(deps Deps, logger *slog.Logger) *telemetry {
	t := &telemetry{tracer: instrument.Tracer(deps.Tracing, "novaos.dev/novaos/internal/toolgw")}
	t.calls = instrument.Register(deps.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricToolCalls,
		Help: "Tool calls, by outcome (ok, error, failed, timeout, refused, held, unavailable) and class (read, write, unknown)."},
		[]string{"outcome", "class"}), logger)
	dur := instrument.Register(deps.Metrics, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricToolDuration,
		Help: "Time to answer a tool call, by class.", Buckets: instrument.Buckets}, []string{"class"}), logger)
	t.duration = instrument.Series(dur, classes...)
	// Each class's count of ok calls exists from the start, at zero.
	instrument.Series(t.calls.MustCurryWith(prometheus.Labels{"outcome": "ok"}), classes...)
	return t
}

// start starts the server span of a tools/call. Its parent is the span in
// ctx (the HTTP layer's); a trace context the call carries in its _meta
// (MCP's convention) is the parent instead when ctx has none or another
// trace, and the span links the HTTP layer's.
func (t *telemetry) start(ctx context.Context, r *request) (context.Context, trace.Span) {
	name := r.env.Params.Name
	opts := serverSpan
	if tp := r.env.Params.Meta.Traceparent; tp != "" {
		meta := propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": tp, "tracestate": r.env.Params.Meta.Tracestate})
		if remote := trace.SpanContextFromContext(meta); remote.IsValid() && remote.TraceID() != trace.SpanContextFromContext(ctx).TraceID() {
			opts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
			if local := trace.SpanContextFromContext(ctx); local.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: local}))
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
		}
	}
	// Named after the tool once it records: an unsampled call builds no
	// name.
	ctx, span := t.tracer.Start(ctx, "tools/call", opts...)
	if span.IsRecording() {
		span.SetName("tools/call " + name)
		attrs := []attribute.KeyValue{attrMCPMethod.String("tools/call"), instrument.AttrOperation.String("execute_tool"),
			attrToolName.String(name), instrument.AttrTenant.String(r.caller.Tenant)}
		if r.caller.Run != "" {
			attrs = append(attrs, instrument.AttrRun.String(r.caller.Run))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// end counts the call and ends its span.
func (t *telemetry) end(span trace.Span, st *callStat, start time.Time, res *mcp.CallToolResult, err error) {
	class := string(st.class)
	if class == "" {
		class = "unknown"
	}
	outcome := outcomeOf(st, res, err)
	t.duration[class].Observe(instrument.Since(start))
	t.calls.WithLabelValues(outcome, class).Inc()
	if span.IsRecording() {
		attrs := []attribute.KeyValue{attrClass.String(class), attrOutcome.String(outcome)}
		if st.call != nil {
			attrs = append(attrs, attrToolCall.String(st.call.CallID))
		}
		span.SetAttributes(attrs...)
		switch outcome {
		case "ok", outcomeHeld:
		case "error":
			instrument.Failed(span, "tool_error", "the tool failed")
		default:
			instrument.Failed(span, outcome, "the call was "+outcome)
		}
	}
	span.End()
}

// outcomeOf is the outcome label of a call: the provider's, when it ran,
// else what the gateway's answer says.
func outcomeOf(st *callStat, res *mcp.CallToolResult, err error) string {
	if st.call != nil && st.call.outcome != "" {
		return st.call.outcome
	}
	if err == nil {
		if res != nil && res.IsError {
			return "error"
		}
		return "ok"
	}
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		switch e.Code {
		case tools.CodeWriteConfirmationRequired:
			return outcomeHeld
		case tools.CodeUnavailable:
			return outcomeUnavailable
		}
	}
	return outcomeRefused
}
