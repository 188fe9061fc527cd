package tools

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans the bindings make.
const ScopeName = "novaos.dev/novaos/tools"

// Span attributes of a tool call, after OpenTelemetry's MCP and GenAI
// conventions, and the run the call belongs to.
const (
	AttrMCPMethod = attribute.Key("mcp.method.name")
	AttrOperation = attribute.Key("gen_ai.operation.name")
	AttrToolName  = attribute.Key("gen_ai.tool.name")
	AttrToolCall  = attribute.Key("gen_ai.tool.call.id")
	AttrRunID     = attribute.Key("novaos.run_id")
	AttrErrorType = attribute.Key("error.type")
)

// Trace context keys a tools/call carries in its _meta, besides the
// HTTP headers: MCP's convention, which reaches a server behind a proxy
// that drops the headers, and a stdio server.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// tracerFor is the tracer of a call made in ctx: the provider's given,
// else that of the span in ctx (a skill's span), so a tool call is
// traced with its skill, else the global one.
func tracerFor(tp trace.TracerProvider, ctx context.Context) trace.Tracer {
	if tp == nil {
		if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
			tp = span.TracerProvider()
		} else {
			tp = otel.GetTracerProvider()
		}
	}
	return tp.Tracer(ScopeName)
}

// startCall starts the client span of a tools/call of tool.
func startCall(tp trace.TracerProvider, ctx context.Context, tool, callID, runID string) (context.Context, trace.Span) {
	// Named after the tool once it records: an unsampled call builds no
	// name.
	ctx, span := tracerFor(tp, ctx).Start(ctx, "tools/call", clientSpan...)
	if span.IsRecording() {
		span.SetName("tools/call " + tool)
		attrs := []attribute.KeyValue{AttrMCPMethod.String("tools/call"), AttrOperation.String("execute_tool"), AttrToolName.String(tool)}
		if callID != "" {
			attrs = append(attrs, AttrToolCall.String(callID))
		}
		if runID != "" {
			attrs = append(attrs, AttrRunID.String(runID))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// endCall records how a call ended and ends its span: a tool that ran and
// failed is error.type tool_error, as MCP's conventions say.
func endCall(span trace.Span, resp *Response, err error) {
	if span.IsRecording() {
		typ := ""
		switch {
		case err != nil:
			typ = callErrorType(err)
		case resp != nil && !resp.Success:
			typ = "tool_error"
		}
		if typ != "" {
			span.SetAttributes(AttrErrorType.String(typ))
			span.SetStatus(codes.Error, typ)
		}
	}
	span.End()
}

// callErrorType is a bounded name of why a call failed.
func callErrorType(err error) string {
	var w *WriteConfirmationRequired
	var e *Error
	switch {
	case errors.As(err, &w):
		return ReasonHITLRequired
	case errors.As(err, &e) && e.Data.Code != "":
		return e.Data.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "_OTHER"
}

// traceMeta puts the trace context of ctx's span in meta, when it has one.
func traceMeta(ctx context.Context, meta map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = make(map[string]string, 2)
	}
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(meta))
	return meta
}
