package instrument

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracer returns the tracer of the instrumentation scope name (the
// package's import path) from tp; a nil tp traces nothing.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	return Provider(tp).Tracer(name)
}

// Provider is tp, or for nil the provider that records nothing: what to
// hand a library (a2aotel, say) that would read nil as otel's global
// provider, which the platform does not set.
func Provider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return noop.NewTracerProvider()
	}
	return tp
}

// Register registers c with reg and returns the collector to use: c, or
// the identical collector registered before, so that services sharing a
// registry share their series instead of failing. A nil reg registers
// nothing (c still counts, unseen). A collector that cannot be
// registered (a programming error: a name reused with other labels) is
// logged and returned unregistered, so the service runs on without it.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if log != nil {
		log.Warn("instrument: a metric could not be registered; it is not exported", "err", err)
	}
	return c
}

// Buckets are the latency buckets of the platform's duration histograms,
// in seconds: 5 ms to about five minutes, each 2.5 times the last, so a
// tool call, a model turn and a long stream all land inside.
var Buckets = prometheus.ExponentialBuckets(0.005, 2.5, 12)

// Since is the seconds elapsed since start, for a histogram.
func Since(start time.Time) float64 { return time.Since(start).Seconds() }

// Transport returns base (nil: http.DefaultTransport) sending each
// request with the W3C trace context (traceparent, tracestate) of its
// context, when that has a span. A request whose context has none is sent
// as it is, at no cost.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t, ok := base.(*transport); ok {
		return t // already propagating
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(req.Context()).IsValid() {
		// A RoundTripper must not change the request it was given.
		req = req.Clone(req.Context())
		propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections passes on to the base transport, so an
// http.Client's CloseIdleConnections still reaches it.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
