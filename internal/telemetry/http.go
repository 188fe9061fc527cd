package telemetry

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// Label values of requests no route took: the Guard refused them, or no
// pattern matched.
const (
	UnmatchedRoute = "unmatched"
	NoService      = "none"
)

// HTTPOptions configure NewHTTP; nil fields turn their part off.
type HTTPOptions struct {
	// Tracing starts a server span per request, the child of the
	// request's traceparent; nil means noop.NewTracerProvider(), which
	// still carries an inbound trace context to the handlers.
	Tracing trace.TracerProvider
	// Metrics registers novaos_http_requests_total,
	// novaos_http_request_duration_seconds and
	// novaos_http_requests_in_flight; nil measures nothing.
	Metrics prometheus.Registerer
	// AccessLog receives a line per request at info; nil logs none.
	AccessLog *slog.Logger
	// Service names the service that registered a ServeMux pattern, the
	// service label; nil or "" means NoService.
	Service func(pattern string) string
}

// HTTP traces, measures and logs the requests of one listener: put its
// Wrap around the server's whole handler. Routes are ServeMux patterns,
// never raw paths, so labels and span names stay bounded.
type HTTP struct {
	tracer  trace.Tracer
	log     *slog.Logger // nil: no access log
	service func(string) string

	requests *prometheus.CounterVec   // nil: no metrics
	duration *prometheus.HistogramVec // nil: no metrics
	inflight prometheus.Gauge
	// series caches the children of requests and duration by their
	// labels, which are bounded: a request then finds its two without
	// hashing its labels or allocating.
	mu     sync.RWMutex
	series map[seriesKey]*series
}

type seriesKey struct {
	service, route, method string
	code                   int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
	// exemplarAt is when (unix nanoseconds) duration last took an
	// exemplar: an exemplar costs a handful of allocations, and a
	// scrape shows only a bucket's latest, so a busy series takes one
	// every exemplarEvery at most.
	exemplarAt atomic.Int64
}

// exemplarEvery is how often a series' latency takes an exemplar at
// most.
const exemplarEvery = 100 * time.Millisecond

// observe records a request's latency, with the trace id of a sampled
// one as the exemplar when the series has not had one for a while.
func (s *series) observe(elapsed time.Duration, sc trace.SpanContext, now time.Time) {
	if sc.IsSampled() {
		last := s.exemplarAt.Load()
		if n := now.UnixNano(); n-last >= int64(exemplarEvery) && s.exemplarAt.CompareAndSwap(last, n) {
			s.duration.(prometheus.ExemplarObserver).ObserveWithExemplar(elapsed.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	s.duration.Observe(elapsed.Seconds())
}

// seriesOf are the children of the request metrics for k.
func (h *HTTP) seriesOf(k seriesKey) *series {
	h.mu.RLock()
	s, ok := h.series[k]
	h.mu.RUnlock()
	if ok {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.series[k]; ok {
		return s
	}
	s = &series{requests: h.requests.WithLabelValues(k.service, k.route, k.method, codeLabel(k.code)),
		duration: h.duration.WithLabelValues(k.service, k.route, k.method)}
	h.series[k] = s
	return s
}

// DurationBuckets are the request-duration histogram's buckets, in
// seconds: from a cached read to a long call to a model.
var DurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// NewHTTP registers the request metrics with opts.Metrics.
func NewHTTP(opts *HTTPOptions) (*HTTP, error) {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	tp := o.Tracing
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	h := &HTTP{tracer: tp.Tracer(instrumentation), service: o.Service, series: map[seriesKey]*series{}}
	if o.AccessLog != nil {
		h.log = slog.New(LogHandler(o.AccessLog.Handler()))
	}
	if o.Metrics == nil {
		return h, nil
	}
	var err error
	if h.requests, err = Register(o.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "novaos_http_requests_total",
		Help: "HTTP requests answered, by the service and route pattern that served them, method and status code.",
	}, []string{"service", "route", "method", "code"})); err != nil {
		return nil, err
	}
	if h.duration, err = Register(o.Metrics, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "novaos_http_request_duration_seconds",
		Help:    "Time from a request's headers to its handler's return (a stream's whole life), by service, route pattern and method.",
		Buckets: DurationBuckets,
	}, []string{"service", "route", "method"})); err != nil {
		return nil, err
	}
	if h.inflight, err = Register(o.Metrics, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "novaos_http_requests_in_flight",
		Help: "HTTP requests being served, open streams included.",
	})); err != nil {
		return nil, err
	}
	return h, nil
}

// instrumentation names the tracer of the platform's own spans.
const instrumentation = "novaos.dev/novaos"

// Register registers c with reg, or returns the collector already
// registered in its place (a server built twice on one registry).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, err
}

// Wrap returns next traced, measured and logged.
func (h *HTTP) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, next) })
}

func (h *HTTP) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	ctx := r.Context()
	if len(r.Header["Traceparent"]) > 0 || len(r.Header["Baggage"]) > 0 {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	// Named by method only until the mux has matched a pattern.
	ctx, span := h.tracer.Start(ctx, r.Method, serverKind)
	rec := &recorder{ResponseWriter: w}
	r = r.WithContext(httpapi.WithCallerSlot(ctx, &rec.caller))
	if h.inflight != nil {
		h.inflight.Inc()
	}
	// Also while a panic unwinds (net/http answers it and logs it): the
	// request counts, as a 500 unless something was sent.
	defer h.finish(ctx, r, rec, span, start)
	next.ServeHTTP(rec, r)
	rec.returned = true
}

// serverKind is the option every server span starts with, made once.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// finish ends the request's span, counts it and logs it.
func (h *HTTP) finish(ctx context.Context, r *http.Request, rec *recorder, span trace.Span, start time.Time) {
	end := time.Now()
	status := rec.status
	switch {
	case status == 0 && !rec.returned:
		status = http.StatusInternalServerError // a panic before anything was sent
	case status == 0:
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	// The mux set the pattern on this request (net/http's ServeMux
	// writes Request.Pattern before calling the route's handler).
	route, service, method := UnmatchedRoute, NoService, methodLabel(r.Method)
	tenant := tenantOf(rec.caller.Caller())
	if r.Pattern != "" {
		route = routeOf(r.Pattern)
		if h.service != nil {
			if s := h.service(r.Pattern); s != "" {
				service = s
			}
		}
	}
	if span.IsRecording() {
		if route != UnmatchedRoute {
			span.SetName(method + " " + route)
		}
		attrs := []attribute.KeyValue{
			semconv.HTTPRequestMethodKey.String(method),
			semconv.HTTPResponseStatusCode(status),
			semconv.URLPath(r.URL.Path),
			semconv.URLScheme(scheme(r)),
			semconv.NetworkProtocolVersion(protocolVersion(r)),
			attribute.String("novaos.service", service),
		}
		if route != UnmatchedRoute {
			attrs = append(attrs, semconv.HTTPRoute(route))
		}
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			attrs = append(attrs, semconv.ClientAddress(host))
		}
		if ua := r.UserAgent(); ua != "" {
			attrs = append(attrs, semconv.UserAgentOriginal(ua))
		}
		if tenant != "" {
			attrs = append(attrs, attribute.String("novaos.tenant_id", tenant))
		}
		if status >= 500 {
			attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(status)))
			span.SetStatus(codes.Error, "")
		}
		span.SetAttributes(attrs...)
	}
	span.End()
	elapsed := end.Sub(start)
	if h.requests != nil {
		h.inflight.Dec()
		m := h.seriesOf(seriesKey{service, route, method, status})
		m.requests.Inc()
		// An exemplar links a bucket to a trace the backend holds.
		m.observe(elapsed, span.SpanContext(), end)
	}
	if h.log != nil && h.log.Enabled(ctx, slog.LevelInfo) {
		attrs := make([]slog.Attr, 0, 10)
		attrs = append(attrs, slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.Int64("bytes", rec.bytes),
			slog.Float64("durationMs", float64(elapsed.Microseconds())/1000), slog.String("service", service),
			slog.String("remote", r.RemoteAddr))
		if tenant != "" {
			attrs = append(attrs, slog.String("tenant", tenant))
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "http request", attrs...)
	}
}

// routeOf is a ServeMux pattern's path: "GET /api/v1/runs/{id}" is
// "/api/v1/runs/{id}" (the method is a label of its own).
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return strings.TrimLeft(path, " \t")
	}
	return pattern
}

// methodLabel bounds the method label: a method HTTP does not define is
// "_OTHER", as the OpenTelemetry conventions have it.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// codeLabels are the status codes' labels, made once.
var codeLabels = func() []string {
	out := make([]string, 600)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func codeLabel(status int) string {
	if status >= 0 && status < len(codeLabels) {
		return codeLabels[status]
	}
	return strconv.Itoa(status)
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)
}

// tenantOf is the tenant of a caller holding an execution token's claims.
func tenantOf(c *httpapi.Caller) string {
	if c == nil {
		return ""
	}
	if claims, ok := c.Claims.(*identity.Claims); ok && claims != nil {
		return claims.TenantID
	}
	return ""
}

// recorder is the ResponseWriter the handlers below see: it keeps the
// status and the bytes written, and passes everything on, flushes, read
// deadlines and hijacking included (Unwrap gives http.ResponseController
// the rest).
type recorder struct {
	http.ResponseWriter
	status   int
	bytes    int64
	returned bool // the handler returned rather than panicked
	caller   httpapi.CallerSlot
}

func (w *recorder) WriteHeader(code int) {
	// Informational answers (100 Continue, 103 Early Hints) come before
	// the real one; 101 Switching Protocols is the last.
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush sends what is buffered: a stream's events must not wait for the
// recorder.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// SetReadDeadline reaches net/http's writer without the allocation
// http.ResponseController would cost the Guard's body deadline.
func (w *recorder) SetReadDeadline(t time.Time) error {
	if d, ok := w.ResponseWriter.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return http.NewResponseController(w.ResponseWriter).SetReadDeadline(t)
}

// Hijack hands the connection over (a WebSocket upgrade) when the writer
// below can; the request then counts as 101 Switching Protocols.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
