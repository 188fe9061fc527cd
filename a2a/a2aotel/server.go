package a2aotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
)

// ServerInterceptor traces and counts every call an a2asrv server admits,
// on every binding: a server span per call, named by its A2A method, and
// Options.Metrics. Install it first in a2asrv.Options.Interceptors, so its
// span covers the later interceptors and its duration counts them.
type ServerInterceptor struct {
	t       tracing
	metrics *Metrics
}

var _ a2asrv.Interceptor = (*ServerInterceptor)(nil)

// NewServerInterceptor returns a server interceptor; o may be nil.
func NewServerInterceptor(o *Options) *ServerInterceptor {
	s := &ServerInterceptor{t: newTracing(o)}
	if o != nil {
		s.metrics = o.Metrics
	}
	return s
}

// Before starts the call's span. Its parent is the span in ctx (an HTTP
// middleware's, which read the request's traceparent), else the trace
// context in the call's headers or gRPC metadata.
func (s *ServerInterceptor) Before(ctx context.Context, call *a2asrv.Call, req any) (context.Context, error) {
	if s.t.tracer == nil && s.metrics == nil {
		return ctx, nil
	}
	st := &callState{call: call, method: methodIndex(call.Method), binding: bindingIndex(call.Binding)}
	if s.metrics != nil {
		st.start = time.Now()
	}
	if s.t.tracer != nil {
		if !trace.SpanContextFromContext(ctx).IsValid() && (!s.t.w3c || len(call.Header["Traceparent"]) > 0) {
			ctx = s.t.prop.Extract(ctx, propagation.HeaderCarrier(call.Header))
		}
		ctx, st.span = s.t.tracer.Start(ctx, call.Method, serverSpan...)
		if st.span.IsRecording() {
			requestAttrs(st.span, call.Method, call.Binding, call.Tenant, req)
		}
	}
	st.Context = ctx
	return st, nil
}

// After ends the call's span with its outcome and counts the call.
func (s *ServerInterceptor) After(ctx context.Context, call *a2asrv.Call, resp any, err error) {
	st := stateOf(ctx, call)
	if st == nil {
		return
	}
	if s.metrics != nil {
		s.metrics.observe(st.method, st.binding, st.start, err)
	}
	if st.span != nil {
		if resp != nil && st.span.IsRecording() {
			resultAttrs(st.span, resp)
		}
		endSpan(st.span, err)
	}
}
