package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// sampledProvider is the SDK's tracer provider with the spans its
// sampler would drop left unmade. The SDK makes a span object, two
// random ids and a context for every span, recorded or not; on a busy
// server at a low ratio nearly all of them are not, and they cost more
// than the sampled few. So the decisions of the SDK's sampler,
// ParentBased(linkSampled(TraceIDRatioBased)), are taken here first:
//
//   - A span whose parent is not sampled is not recorded: Start returns
//     the parent itself, and its descendants are that span too (their
//     logs and outbound calls name the parent's span id, which no backend
//     holds either way).
//   - A new root not sampled by its trace id and without a sampled link
//     is one small span of this provider's, so its descendants come here
//     even through Span.TracerProvider.
//   - Every other span, all that are recorded, is the SDK's: a sampled
//     root starts with the trace id it was sampled by.
type sampledProvider struct {
	embedded.TracerProvider
	sdk     *sdktrace.TracerProvider
	bound   uint64 // a root is sampled when its trace id's low 63 bits are below
	tracers sync.Map
}

// ratioBound is TraceIDRatioBased's bound for ratio: a trace id whose
// last eight bytes, shifted right by one, are below it is sampled.
func ratioBound(ratio float64) uint64 {
	if ratio >= 1 {
		return 1 << 63
	}
	if ratio <= 0 {
		return 0
	}
	return uint64(ratio * (1 << 63))
}

func newSampledProvider(opts []sdktrace.TracerProviderOption, ratio float64) *sampledProvider {
	opts = append(opts[:len(opts):len(opts)],
		sdktrace.WithSampler(sdktrace.ParentBased(linkSampled{sdktrace.TraceIDRatioBased(ratio)})),
		sdktrace.WithIDGenerator(rootIDs{}))
	return &sampledProvider{sdk: sdktrace.NewTracerProvider(opts...), bound: ratioBound(ratio)}
}

type tracerKey struct{ name, version, schema string }

func (p *sampledProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	if len(opts) == 0 { // the usual call, looked up without building a config
		if t, ok := p.tracers.Load(tracerKey{name: name}); ok {
			return t.(*sampledTracer)
		}
	}
	c := trace.NewTracerConfig(opts...)
	attrs := c.InstrumentationAttributes()
	t := &sampledTracer{p: p, sdk: p.sdk.Tracer(name, opts...)}
	if attrs.Len() > 0 {
		return t // a scope with attributes is not cached
	}
	t2, _ := p.tracers.LoadOrStore(tracerKey{name, c.InstrumentationVersion(), c.SchemaURL()}, t)
	return t2.(*sampledTracer)
}

type sampledTracer struct {
	embedded.Tracer
	p   *sampledProvider
	sdk trace.Tracer
}

func (t *sampledTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	parent := trace.SpanFromContext(ctx)
	psc := parent.SpanContext()
	if psc.IsValid() && len(opts) == 0 {
		if !psc.IsSampled() {
			return ctx, parent
		}
		return t.sdk.Start(ctx, name)
	}
	cfg := trace.NewSpanStartConfig(opts...)
	if psc.IsValid() && !cfg.NewRoot() {
		if !psc.IsSampled() {
			return ctx, parent
		}
		return t.sdk.Start(ctx, name, opts...)
	}
	for _, l := range cfg.Links() {
		if l.SpanContext.IsSampled() {
			return t.sdk.Start(ctx, name, opts...)
		}
	}
	tid := newTraceID()
	if binary.BigEndian.Uint64(tid[8:])>>1 < t.p.bound {
		// The id reaches the SDK's generator in the context, which
		// the span's descendants must not inherit (a new root under
		// it would take the same trace id).
		_, span := t.sdk.Start(context.WithValue(ctx, rootIDKey{}, tid), name, opts...)
		return trace.ContextWithSpan(ctx, span), span
	}
	span := &unsampledSpan{p: t.p, sc: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: newSpanID()})}
	return trace.ContextWithSpan(ctx, span), span
}

func newTraceID() trace.TraceID {
	for {
		var tid trace.TraceID
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
		if tid.IsValid() {
			return tid
		}
	}
}

func newSpanID() trace.SpanID {
	for {
		var sid trace.SpanID
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
		if sid.IsValid() {
			return sid
		}
	}
}

// rootIDs is the SDK's id generator: random ids, but a sampled root's
// trace id is the one the provider sampled it by.
type rootIDs struct{}

type rootIDKey struct{}

func (rootIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, ok := ctx.Value(rootIDKey{}).(trace.TraceID)
	if !ok {
		tid = newTraceID()
	}
	return tid, newSpanID()
}

func (rootIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

// unsampledSpan is a root not recorded: it carries its trace and span id
// to logs and outbound calls, and records nothing.
type unsampledSpan struct {
	embedded.Span
	p  *sampledProvider
	sc trace.SpanContext
}

func (s *unsampledSpan) SpanContext() trace.SpanContext          { return s.sc }
func (s *unsampledSpan) IsRecording() bool                       { return false }
func (s *unsampledSpan) End(...trace.SpanEndOption)              {}
func (s *unsampledSpan) AddEvent(string, ...trace.EventOption)   {}
func (s *unsampledSpan) AddLink(trace.Link)                      {}
func (s *unsampledSpan) RecordError(error, ...trace.EventOption) {}
func (s *unsampledSpan) SetStatus(codes.Code, string)            {}
func (s *unsampledSpan) SetName(string)                          {}
func (s *unsampledSpan) SetAttributes(...attribute.KeyValue)     {}
func (s *unsampledSpan) TracerProvider() trace.TracerProvider    { return s.p }
