package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func newTestProvider(t *testing.T, ratio float64) (*sampledProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	p := newSampledProvider([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, ratio)
	t.Cleanup(func() { _ = p.sdk.Shutdown(context.Background()) })
	return p, rec
}

func remoteParent(sampled bool) context.Context {
	flags := trace.TraceFlags(0)
	if sampled {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID(), TraceFlags: flags, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}

func TestSampledProviderDecisions(t *testing.T) {
	tests := []struct {
		name     string
		ratio    float64
		ctx      func(p *sampledProvider) context.Context
		opts     []trace.SpanStartOption
		recorded bool
		sameSpan bool // Start returns the parent span itself
	}{
		{name: "root at ratio 1", ratio: 1, ctx: func(*sampledProvider) context.Context { return context.Background() }, recorded: true},
		{name: "root at ratio 0", ratio: -1, ctx: func(*sampledProvider) context.Context { return context.Background() }},
		{name: "child of a sampled remote parent", ratio: -1, ctx: func(*sampledProvider) context.Context { return remoteParent(true) }, recorded: true},
		{name: "child of an unsampled remote parent", ratio: 1, ctx: func(*sampledProvider) context.Context { return remoteParent(false) }, sameSpan: true},
		{name: "child with options of an unsampled remote parent", ratio: 1, ctx: func(*sampledProvider) context.Context { return remoteParent(false) },
			opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}, sameSpan: true},
		{name: "child of an unsampled local root", ratio: 1, ctx: func(p *sampledProvider) context.Context {
			p.bound = 0
			ctx, _ := p.Tracer("t").Start(context.Background(), "root")
			p.bound = 1 << 63
			return ctx
		}, sameSpan: true},
		{name: "new root under an unsampled parent", ratio: 1, ctx: func(*sampledProvider) context.Context { return remoteParent(false) },
			opts: []trace.SpanStartOption{trace.WithNewRoot()}, recorded: true},
		{name: "new root at ratio 0 linked to a sampled span", ratio: -1, ctx: func(*sampledProvider) context.Context { return context.Background() },
			opts: []trace.SpanStartOption{trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(remoteParent(true)))}, recorded: true},
		{name: "root at ratio 0 linked to an unsampled span", ratio: -1, ctx: func(*sampledProvider) context.Context { return context.Background() },
			opts: []trace.SpanStartOption{trace.WithLinks(trace.LinkFromContext(remoteParent(false)))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ratio, _ := sampleRatio(tc.ratio)
			p, rec := newTestProvider(t, ratio)
			ctx := tc.ctx(p)
			parent := trace.SpanFromContext(ctx)
			got, span := p.Tracer("t").Start(ctx, "s", tc.opts...)
			if span.IsRecording() != tc.recorded || span.SpanContext().IsSampled() != tc.recorded {
				t.Fatalf("recording %v, sampled %v; want %v", span.IsRecording(), span.SpanContext().IsSampled(), tc.recorded)
			}
			span.End()
			if n := len(rec.Ended()); (n == 1) != tc.recorded {
				t.Fatalf("%d spans ended in the SDK; want recorded %v", n, tc.recorded)
			}
			if !span.SpanContext().IsValid() {
				t.Fatal("span has no valid ids")
			}
			if !trace.SpanContextFromContext(got).Equal(span.SpanContext()) {
				t.Fatal("the returned context does not hold the span")
			}
			if same := span.SpanContext().Equal(parent.SpanContext()); same != tc.sameSpan {
				t.Fatalf("span is its parent: %v; want %v", same, tc.sameSpan)
			}
			if !tc.sameSpan && parent.SpanContext().IsValid() && !hasNewRoot(tc.opts) &&
				span.SpanContext().TraceID() != parent.SpanContext().TraceID() {
				t.Fatal("a child left its parent's trace")
			}
		})
	}
}

func hasNewRoot(opts []trace.SpanStartOption) bool {
	c := trace.NewSpanStartConfig(opts...)
	return c.NewRoot()
}

// An unsampled root's descendants, reached through the span's own
// provider as the agent SDK does, are the root itself.
func TestUnsampledRootDescendants(t *testing.T) {
	p, rec := newTestProvider(t, 0.5)
	p.bound = 0
	ctx, root := p.Tracer("a").Start(context.Background(), "root")
	_, child := root.TracerProvider().Tracer("b").Start(ctx, "child", trace.WithSpanKind(trace.SpanKindInternal))
	if !child.SpanContext().Equal(root.SpanContext()) {
		t.Fatal("the child of an unsampled root is a span of its own")
	}
	if n := len(rec.Started()); n != 0 {
		t.Fatalf("the SDK started %d spans", n)
	}
}

// A sampled root's trace id is the one it was sampled by, and a new root
// started under it takes an id of its own.
func TestSampledRootIDs(t *testing.T) {
	p, _ := newTestProvider(t, 1)
	tr := p.Tracer("t")
	ctx, root := tr.Start(context.Background(), "root")
	_, again := tr.Start(ctx, "again", trace.WithNewRoot())
	if !root.IsRecording() || !again.IsRecording() {
		t.Fatal("roots at ratio 1 are not recorded")
	}
	if root.SpanContext().TraceID() == again.SpanContext().TraceID() {
		t.Fatal("a new root took the trace id of the root it was started under")
	}
}

// The provider samples the same trace ids as the SDK's ratio sampler.
func TestRatioBoundMatchesSDK(t *testing.T) {
	for _, ratio := range []float64{0.001, 0.1, 0.5, 0.9, 0.999} {
		sdk := sdktrace.TraceIDRatioBased(ratio)
		bound := ratioBound(ratio)
		for range 20000 {
			tid := newTraceID()
			want := sdk.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: tid}).Decision == sdktrace.RecordAndSample
			got := beUint64(tid[8:])>>1 < bound
			if got != want {
				t.Fatalf("ratio %v, trace %s: sampled %v, the SDK %v", ratio, tid, got, want)
			}
		}
	}
}

func beUint64(b []byte) uint64 {
	var x uint64
	for _, c := range b[:8] {
		x = x<<8 | uint64(c)
	}
	return x
}

func TestUnsampledAllocations(t *testing.T) {
	p, _ := newTestProvider(t, 0.5)
	p.bound = 0
	tr := p.Tracer("t")
	ctx, _ := tr.Start(context.Background(), "root")
	kind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	if n := testing.AllocsPerRun(1000, func() {
		_, s := tr.Start(ctx, "child", kind...)
		s.End()
	}); n != 0 {
		t.Errorf("a child of an unsampled span costs %v allocations; want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		_, s := tr.Start(context.Background(), "root", kind...)
		s.End()
	}); n > 2 {
		t.Errorf("an unsampled root costs %v allocations; want at most 2 (span, context)", n)
	}
}

func BenchmarkUnsampledSpans(b *testing.B) {
	kind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
	p := newSampledProvider(nil, 0)
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"sdk", sdk}, {"sampled", p}} {
		b.Run(tc.name, func(b *testing.B) {
			tr := tc.tp.Tracer("t")
			b.ReportAllocs()
			for b.Loop() {
				ctx, root := tr.Start(context.Background(), "root", kind...)
				_, c1 := tr.Start(ctx, "a2a", kind...)
				_, c2 := tr.Start(ctx, "skill")
				c2.End()
				c1.End()
				root.End()
			}
		})
	}
}

// A tracer is made once per scope.
func TestSampledProviderTracers(t *testing.T) {
	p, _ := newTestProvider(t, 1)
	if p.Tracer("a") != p.Tracer("a") {
		t.Error("two tracers for one name")
	}
	if p.Tracer("a") == p.Tracer("b") || p.Tracer("a") == p.Tracer("a", trace.WithInstrumentationVersion("1")) {
		t.Error("one tracer for two scopes")
	}
	if v := p.Tracer("a", trace.WithInstrumentationVersion("1")); v != p.Tracer("a", trace.WithInstrumentationVersion("1")) {
		t.Error("two tracers for one versioned scope")
	}
	if n := testing.AllocsPerRun(100, func() { p.Tracer("a") }); n != 0 {
		t.Errorf("a known tracer costs %v allocations", n)
	}
}
