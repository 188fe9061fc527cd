package telemetry_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/telemetry"
)

// records is a slog handler that hands each record to the test.
type records chan slog.Record

func (records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	r <- rec.Clone()
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// next waits for the next record.
func (r records) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case rec := <-r:
		out := map[string]any{"msg": rec.Message}
		rec.Attrs(func(a slog.Attr) bool {
			out[a.Key] = a.Value.Resolve().Any()
			return true
		})
		return out
	case <-time.After(time.Minute): // a failure bound, not a measure
		t.Fatal("no access log line")
		return nil
	}
}

// httpFixture is a server behind HTTP.Wrap with a few routes.
type httpFixture struct {
	srv     *httptest.Server
	reg     *prometheus.Registry
	spans   *tracetest.SpanRecorder
	log     records
	proceed chan struct{} // lets /stream end
}

func newHTTPFixture(t *testing.T) *httpFixture {
	t.Helper()
	f := &httpFixture{reg: prometheus.NewRegistry(), spans: tracetest.NewSpanRecorder(), log: make(records, 16),
		proceed: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	services := map[string]string{"GET /api/v1/runs/{id}": "gateway", "/stream": "gateway", "POST /agents/echo": "agents"}
	h, err := telemetry.NewHTTP(&telemetry.HTTPOptions{Tracing: tp, Metrics: f.reg, AccessLog: slog.New(f.log),
		Service: func(p string) string { return services[p] }})
	if err != nil {
		t.Fatal(err)
	}
	api := &httpapi.API{Name: "runs", Auth: httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		if _, ok := httpapi.BearerToken(r); !ok {
			return nil, httpapi.ErrUnauthenticated
		}
		return &httpapi.Caller{Scheme: httpapi.SchemeExecutionToken, Claims: &identity.Claims{TenantID: "acme"}}, nil
	})}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/runs/{id}", api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "run "+r.PathValue("id"))
	})))
	mux.HandleFunc("POST /agents/echo", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		<-f.proceed
		io.WriteString(w, "data: last\n\n")
	})
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	f.srv = httptest.NewUnstartedServer(h.Wrap(mux))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *httpFixture) do(t *testing.T, method, path string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// sample is the value of the metric name with labels in reg (-1: none).
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestHTTPRequests(t *testing.T) {
	const inboundTrace, inboundSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name, method, path string
		header             http.Header
		status             int
		service, route     string
		methodLabel        string
		spanName           string
		tenant             string
	}{
		{name: "matched with a tenant", method: "GET", path: "/api/v1/runs/r-1?token=hunter2",
			header: http.Header{"Authorization": {"Bearer tok-secret"}, "Traceparent": {"00-" + inboundTrace + "-" + inboundSpan + "-01"}},
			status: 200, service: "gateway", route: "/api/v1/runs/{id}", methodLabel: "GET", spanName: "GET /api/v1/runs/{id}", tenant: "acme"},
		{name: "refused by the API", method: "GET", path: "/api/v1/runs/r-2", status: 401, service: "gateway",
			route: "/api/v1/runs/{id}", methodLabel: "GET", spanName: "GET /api/v1/runs/{id}"},
		{name: "status of its own", method: "POST", path: "/agents/echo", status: 201, service: "agents",
			route: "/agents/echo", methodLabel: "POST", spanName: "POST /agents/echo"},
		{name: "no route", method: "GET", path: "/nowhere/else", status: 404, service: telemetry.NoService,
			route: telemetry.UnmatchedRoute, methodLabel: "GET", spanName: "GET"},
		{name: "a method HTTP does not define", method: "BREW", path: "/nowhere", status: 404, service: telemetry.NoService,
			route: telemetry.UnmatchedRoute, methodLabel: "_OTHER", spanName: "BREW"},
		// POST: net/http's client retries a GET whose connection broke.
		{name: "a panic is a 500", method: "POST", path: "/panic", status: 500, service: telemetry.NoService,
			route: "/panic", methodLabel: "POST", spanName: "POST /panic"},
	}
	f := newHTTPFixture(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.srv.URL+tc.path, nil)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := f.srv.Client().Do(req)
			if tc.status == 500 {
				if err == nil {
					t.Fatalf("a panicking handler answered %d", resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
			}
			line := f.log.next(t)
			want := map[string]any{"msg": "http request", "method": tc.method, "route": tc.route, "status": int64(tc.status),
				"service": tc.service}
			for k, v := range want {
				if line[k] != v {
					t.Errorf("access log %s = %v, want %v (line %v)", k, line[k], v, line)
				}
			}
			if got, _ := line["tenant"].(string); got != tc.tenant {
				t.Errorf("access log tenant %q, want %q", got, tc.tenant)
			}
			if p, _ := line["path"].(string); strings.Contains(p, "?") {
				t.Errorf("access log path %q has the query", p)
			}
			for k, v := range line {
				if s, ok := v.(string); ok && (strings.Contains(s, "hunter2") || strings.Contains(s, "tok-secret")) {
					t.Errorf("access log %s = %q holds a secret", k, s)
				}
			}
			labels := map[string]string{"service": tc.service, "route": tc.route, "method": tc.methodLabel, "code": strconv.Itoa(tc.status)}
			if n := sample(t, f.reg, "novaos_http_requests_total", labels); n != 1 {
				t.Errorf("novaos_http_requests_total%v = %v, want 1", labels, n)
			}
			delete(labels, "code")
			if n := sample(t, f.reg, "novaos_http_request_duration_seconds", labels); n < 1 {
				t.Errorf("novaos_http_request_duration_seconds%v has %v observations", labels, n)
			}
			ended := f.spans.Ended()
			span := ended[len(ended)-1]
			if span.Name() != tc.spanName || span.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q server", span.Name(), span.SpanKind(), tc.spanName)
			}
			if tc.header.Get("Traceparent") != "" {
				if span.Parent().SpanID().String() != inboundSpan || span.SpanContext().TraceID().String() != inboundTrace {
					t.Errorf("span parent %s trace %s, want the inbound %s %s", span.Parent().SpanID(), span.SpanContext().TraceID(), inboundSpan, inboundTrace)
				}
			} else if span.Parent().IsValid() {
				t.Errorf("span has parent %s without a traceparent", span.Parent().SpanID())
			}
			attrs := map[string]any{}
			for _, a := range span.Attributes() {
				attrs[string(a.Key)] = a.Value.AsInterface()
			}
			if attrs["http.response.status_code"] != int64(tc.status) || attrs["http.request.method"] != tc.methodLabel {
				t.Errorf("span attributes %v", attrs)
			}
			if tc.route != telemetry.UnmatchedRoute && attrs["http.route"] != tc.route {
				t.Errorf("span http.route %v, want %q", attrs["http.route"], tc.route)
			}
		})
	}
	if n := sample(t, f.reg, "novaos_http_requests_in_flight", nil); n != 0 {
		t.Errorf("novaos_http_requests_in_flight = %v after every request ended", n)
	}
}

// A stream's events reach the client while its handler still runs: the
// recorder passes flushes on.
func TestHTTPStreamsFlush(t *testing.T) {
	f := newHTTPFixture(t)
	resp, err := f.srv.Client().Get(f.srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if n := sample(t, f.reg, "novaos_http_requests_in_flight", nil); n != 1 {
		t.Errorf("novaos_http_requests_in_flight = %v during a stream, want 1", n)
	}
	close(f.proceed)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "data: last") {
		t.Fatalf("rest %q, %v", rest, err)
	}
	line2 := f.log.next(t)
	if line2["route"] != "/stream" || line2["bytes"] != int64(len("data: first\n\ndata: last\n\n")) {
		t.Errorf("access log %v", line2)
	}
}

func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := telemetry.NewHTTP(&telemetry.HTTPOptions{Metrics: reg}); err != nil {
			t.Fatalf("a second NewHTTP on the same registry: %v", err)
		}
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "novaos_http_requests_total", Help: "a counter of another shape"})
	if _, err := telemetry.Register(reg, c); err == nil || errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("registering a collector of another shape under a taken name: %v", err)
	}
}

// A handler that takes the connection over (a WebSocket upgrade) can,
// through the recorder, and the request counts as 101.
func TestHTTPHijack(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := telemetry.NewHTTP(&telemetry.HTTPOptions{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	wrapped := h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		rw.Flush()
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		wrapped.ServeHTTP(w, r)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	<-served // counted before Wrap's handler returned
	if n := sample(t, reg, "novaos_http_requests_total", map[string]string{"code": "101"}); n != 1 {
		t.Errorf("novaos_http_requests_total{code=101} = %v, want 1", n)
	}
}
