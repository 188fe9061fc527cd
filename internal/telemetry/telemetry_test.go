package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/internal/telemetry/otlptest"
	"novaos.dev/novaos/secret"
)

func TestTracesURL(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"base", "http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces", true},
		{"base with slash", "https://otel.example.com/", "https://otel.example.com/v1/traces", true},
		{"full path kept", "https://otel.example.com/otlp/v1/traces", "https://otel.example.com/otlp/v1/traces", true},
		{"no scheme", "127.0.0.1:4318", "", false},
		{"grpc scheme", "grpc://127.0.0.1:4317", "", false},
		{"no host", "http:///v1/traces", "", false},
		{"credentials", "https://user:pw@otel.example.com", "", false},
		{"query", "https://otel.example.com/?key=k", "", false},
		{"empty", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := telemetry.TracesURL(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("TracesURL(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "key=k")) {
				t.Errorf("the error repeats the URL: %v", err)
			}
		})
	}
}

func TestCheckOptions(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	tests := []struct {
		name string
		opts *telemetry.Options
		ok   bool
	}{
		{"nil", nil, true},
		{"no endpoint ignores the rest", &telemetry.Options{SampleRatio: 7}, true},
		{"ratio", &telemetry.Options{OTLPEndpoint: ep, SampleRatio: 0.1}, true},
		{"ratio none", &telemetry.Options{OTLPEndpoint: ep, SampleRatio: -1}, true},
		{"ratio above one", &telemetry.Options{OTLPEndpoint: ep, SampleRatio: 1.5}, false},
		{"header", &telemetry.Options{OTLPEndpoint: ep, OTLPHeaders: map[string]secret.Value{"X-Api-Key": secret.New("k")}}, true},
		{"bad header name", &telemetry.Options{OTLPEndpoint: ep, OTLPHeaders: map[string]secret.Value{"X Api": secret.New("k")}}, false},
		{"bad endpoint", &telemetry.Options{OTLPEndpoint: "localhost:4318"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := telemetry.CheckOptions(tc.opts); (err == nil) != tc.ok {
				t.Fatalf("CheckOptions = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// remoteParent is a context as an inbound traceparent leaves it.
func remoteParent(sampled bool) context.Context {
	flags := "00"
	if sampled {
		flags = "01"
	}
	carrier := propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-" + flags}
	return telemetry.Propagator().Extract(context.Background(), carrier)
}

func TestTracingExports(t *testing.T) {
	rcv := otlptest.Start(t)
	tr, err := telemetry.NewTracing(&telemetry.Options{OTLPEndpoint: rcv.URL(), SampleRatio: -1, ServiceVersion: "v9.9.9",
		OTLPHeaders: map[string]secret.Value{"X-Api-Key": secret.New("sesame")}})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Exporting() {
		t.Fatal("Exporting() = false with an endpoint")
	}
	tracer := tr.Provider().Tracer("test")
	// With no root sampled, only children of a sampled parent are.
	_, root := tracer.Start(context.Background(), "root")
	root.End()
	_, unsampled := tracer.Start(remoteParent(false), "child of unsampled")
	unsampled.End()
	_, child := tracer.Start(remoteParent(true), "child of sampled")
	child.End()
	if root.SpanContext().IsSampled() || unsampled.SpanContext().IsSampled() || !child.SpanContext().IsSampled() {
		t.Errorf("sampled: root %v, child of unsampled %v, child of sampled %v; want false, false, true",
			root.SpanContext().IsSampled(), unsampled.SpanContext().IsSampled(), child.SpanContext().IsSampled())
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Shutdown flushed: the span is there without waiting.
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Name != "child of sampled" {
		t.Fatalf("received %+v, want the sampled child only", spans)
	}
	s := spans[0]
	if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentSpanID != "00f067aa0ba902b7" {
		t.Errorf("span trace %s parent %s, want the inbound ones", s.TraceID, s.ParentSpanID)
	}
	if s.Resource["service.name"] != telemetry.ServiceName || s.Resource["service.version"] != "v9.9.9" {
		t.Errorf("resource %v", s.Resource)
	}
	if h := rcv.Headers(); len(h) == 0 || h[0].Get("X-Api-Key") != "sesame" {
		t.Errorf("the export did not carry the configured header")
	}
}

// A new trace linked to a recorded span is recorded whatever the ratio:
// a run's delivery, linked to the sampled request that queued it.
func TestLinkedRootFollowsTheLink(t *testing.T) {
	tr, err := telemetry.NewTracing(&telemetry.Options{OTLPEndpoint: otlptest.Start(t).URL(), SampleRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	tracer := tr.Provider().Tracer("test")
	linkTo := func(sampled bool) trace.SpanStartOption {
		return trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(remoteParent(sampled))})
	}
	tests := []struct {
		name    string
		parent  context.Context
		opts    []trace.SpanStartOption
		sampled bool
	}{
		{"root linked to a sampled span", context.Background(), []trace.SpanStartOption{linkTo(true)}, true},
		{"new root linked to a sampled span", remoteParent(false), []trace.SpanStartOption{trace.WithNewRoot(), linkTo(true)}, true},
		{"root linked to an unsampled span", context.Background(), []trace.SpanStartOption{linkTo(false)}, false},
		{"root", context.Background(), nil, false},
		{"child of an unsampled parent linked to a sampled span", remoteParent(false), []trace.SpanStartOption{linkTo(true)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, span := tracer.Start(tc.parent, "span", tc.opts...)
			span.End()
			if got := span.SpanContext().IsSampled(); got != tc.sampled {
				t.Errorf("sampled %v, want %v", got, tc.sampled)
			}
		})
	}
}

func TestTracingWithoutEndpointCarriesTheInboundContext(t *testing.T) {
	tr, err := telemetry.NewTracing(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Exporting() {
		t.Error("Exporting() = true without an endpoint")
	}
	ctx, span := tr.Provider().Tracer("test").Start(remoteParent(true), "server")
	defer span.End()
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the context carries trace %s span %s, want the inbound ones", sc.TraceID(), sc.SpanID())
	}
	if span.IsRecording() {
		t.Error("a span records without an exporter")
	}
	// And an outbound call carries it on.
	out := propagation.MapCarrier{}
	telemetry.Propagator().Inject(ctx, out)
	if got := out["traceparent"]; got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("outbound traceparent %q", got)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}
