package a2aotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the spans this package makes.
const ScopeName = "novaos.dev/novaos/a2a/a2aotel"

// Options configure an interceptor; nil or zero fields mean the defaults.
type Options struct {
	// TracerProvider makes the spans (default otel.GetTracerProvider(),
	// which records nothing until a program installs a provider).
	TracerProvider trace.TracerProvider
	// Propagator reads and writes the trace context in the calls' headers
	// (default propagation.TraceContext{}: W3C traceparent and
	// tracestate).
	Propagator propagation.TextMapPropagator
	// Metrics, when set, counts the calls a ServerInterceptor sees.
	Metrics *Metrics
}

// tracing is what an interceptor traces with; tracer is nil when its
// provider is the no-op one, so a call starts no span at all.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// w3c: prop is the default, which reads nothing from a call without
	// a traceparent header; Extract is skipped for such a call (the
	// header's lookup by a non-canonical name allocates).
	w3c bool
}

// The span kinds, as option slices made once: a variadic argument built
// at each call would be an allocation a call.
var (
	serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

func newTracing(o *Options) tracing {
	var t tracing
	var tp trace.TracerProvider
	if o != nil {
		tp, t.prop = o.TracerProvider, o.Propagator
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if _, off := tp.(noop.TracerProvider); !off {
		t.tracer = tp.Tracer(ScopeName)
	}
	if t.prop == nil {
		t.prop, t.w3c = propagation.TraceContext{}, true
	}
	return t
}

// callState is an admitted call's context: its span and start, found
// again in After and Finish under stateKey. It is one allocation: the
// context the interceptor hands on is the state itself.
type callState struct {
	context.Context
	span    trace.Span
	start   time.Time
	call    any // the *a2asrv.Call or *a2aclient.Call it belongs to
	method  int
	binding int
}

type stateKey struct{}

func (s *callState) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// stateOf returns the state of call in ctx, nil when it has none (a call
// the interceptor did not admit).
func stateOf(ctx context.Context, call any) *callState {
	s, _ := ctx.Value(stateKey{}).(*callState)
	if s == nil || s.call != call {
		return nil
	}
	return s
}
