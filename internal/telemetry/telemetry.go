package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/secret"
)

// ServiceName is the service.name every span of the platform carries.
const ServiceName = "novaos"

// DefaultSampleRatio is the share of new traces recorded when
// Options.SampleRatio is zero: all of them, as the OpenTelemetry SDK's own
// default (parentbased_always_on). A busy server lowers it; a trace whose
// caller sampled it is recorded whatever the ratio.
const DefaultSampleRatio = 1.0

// TracesPath is what an OTLP/HTTP endpoint given as a base URL has added
// to it.
const TracesPath = "/v1/traces"

// Options configure NewTracing; nil or the zero value exports nothing.
type Options struct {
	// OTLPEndpoint is where spans are exported over OTLP/HTTP (protobuf):
	// a base URL (http://collector:4318), to which TracesPath is added, or
	// the full URL of a traces endpoint (a path other than "/"). http://
	// sends in clear, https:// over TLS. Empty exports nothing: the tracer
	// provider then records no span but carries an inbound trace context
	// on, so logs and outbound calls still name the caller's trace.
	OTLPEndpoint string
	// OTLPHeaders are sent with every export (a collector's API key).
	// Their values are never logged.
	OTLPHeaders map[string]secret.Value
	// SampleRatio is the share of new traces (no sampled or unsampled
	// parent) that are recorded and exported, from 0 to 1: zero means
	// DefaultSampleRatio, negative none. A span with a parent follows its
	// parent's decision, and a new trace linked to a recorded span (a
	// run's delivery, to the request that queued it) is recorded too.
	SampleRatio float64
	// ServiceVersion is the service.version of the spans' resource.
	ServiceVersion string
	// Logger receives export failures (warn, at most one a minute); nil
	// discards them.
	Logger *slog.Logger
}

// Tracing is the platform's tracer provider: one exporting over
// OTLP/HTTP with a batch span processor, or, without an endpoint, one
// that records nothing and carries an inbound trace context on.
// Shutdown flushes what is not yet exported.
type Tracing struct {
	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil: nothing exported
}

// NewTracing builds the tracer provider opts describe. It does not
// connect: an unreachable collector shows as export failures in the log.
func NewTracing(opts *Options) (*Tracing, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := CheckOptions(&o); err != nil {
		return nil, err
	}
	t := &Tracing{provider: noop.NewTracerProvider()}
	if o.OTLPEndpoint == "" {
		return t, nil
	}
	endpoint, _ := TracesURL(o.OTLPEndpoint)
	ratio, _ := sampleRatio(o.SampleRatio)
	headers := make(map[string]string, len(o.OTLPHeaders))
	for k, v := range o.OTLPHeaders {
		headers[k] = v.Reveal()
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(headers))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, attrs...)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := newSampledProvider([]sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(&loggedExporter{SpanExporter: exp, log: log, every: time.Minute}),
		sdktrace.WithResource(res),
	}, ratio)
	t.sdk, t.provider = p.sdk, p
	return t, nil
}

// linkSampled samples a new trace whose root links to a sampled span,
// and leaves the others to root. A run's delivery starts a trace of its
// own, linked to the request that queued it: a caller who sampled that
// request finds the run it caused recorded, whatever the ratio.
type linkSampled struct{ root sdktrace.Sampler }

func (s linkSampled) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	for _, l := range p.Links {
		if l.SpanContext.IsSampled() {
			return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample,
				Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
		}
	}
	return s.root.ShouldSample(p)
}

func (s linkSampled) Description() string { return "LinkSampled{" + s.root.Description() + "}" }

// NewRegistry is a Prometheus registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// TracesURL is the URL spans are POSTed to for an OTLP endpoint given as
// Options.OTLPEndpoint says. Its errors never repeat the URL, which may
// carry credentials.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("telemetry: OTLP endpoint: want an http:// or https:// URL such as http://127.0.0.1:4318")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("telemetry: OTLP endpoint: want a URL without credentials, query or fragment (send credentials as headers)")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = TracesPath
	}
	return u.String(), nil
}

// sampleRatio checks Options.SampleRatio and resolves its default.
func sampleRatio(r float64) (float64, error) {
	switch {
	case r == 0:
		return DefaultSampleRatio, nil
	case r < 0:
		return 0, nil
	case r > 1 || r != r:
		return 0, fmt.Errorf("telemetry: sample ratio %v: want 0 to 1", r)
	}
	return r, nil
}

// CheckOptions reports what New would refuse in opts, without building
// anything.
func CheckOptions(opts *Options) error {
	if opts == nil || opts.OTLPEndpoint == "" {
		return nil
	}
	if _, err := TracesURL(opts.OTLPEndpoint); err != nil {
		return err
	}
	for k := range opts.OTLPHeaders {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return fmt.Errorf("telemetry: OTLP header %q: not a header name", k)
		}
	}
	_, err := sampleRatio(opts.SampleRatio)
	return err
}

// Provider is the provider every service's spans come from.
func (t *Tracing) Provider() trace.TracerProvider { return t.provider }

// Exporting reports whether spans are exported (an OTLP endpoint is set).
func (t *Tracing) Exporting() bool { return t.sdk != nil }

// Shutdown exports the spans not yet exported and stops the exporter;
// ctx bounds the wait.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush spans: %w", err)
	}
	return nil
}

// Propagator is the W3C Trace Context and Baggage propagator: what
// inbound requests are read with and outbound calls carry.
func Propagator() propagation.TextMapPropagator { return propagator }

var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// loggedExporter logs export failures, at most one line every so often
// with how many failed since, and hands them back to the batch processor
// as successes: it has nothing to do about them but hand them to the
// OpenTelemetry global error handler, which writes to the process's
// stderr outside the server's log.
type loggedExporter struct {
	sdktrace.SpanExporter
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	failures int
}

func (e *loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	e.mu.Lock()
	e.failures++
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.every {
		e.mu.Unlock()
		return nil
	}
	n := e.failures
	e.last, e.failures = now, 0
	e.mu.Unlock()
	// The exporter's errors name the endpoint's host and the status, not
	// the headers.
	e.log.Warn("telemetry: exporting spans failed; they are dropped", "err", err, "failedExports", n, "spans", len(spans))
	return nil
}
