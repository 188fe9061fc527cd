package telemetry_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/internal/telemetry"
)

// BenchmarkHTTP is what HTTP.Wrap adds to one request, against the bare
// handler: metrics; metrics and a span sampled at 10% (recorded in
// memory); those and the access log formatted as JSON.
func BenchmarkHTTP(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agents/echo", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))))
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		opts *telemetry.HTTPOptions
	}{
		{"bare", nil},
		{"metrics", &telemetry.HTTPOptions{}},
		{"metrics+traces", &telemetry.HTTPOptions{Tracing: tp}},
		{"metrics+traces+accesslog", &telemetry.HTTPOptions{Tracing: tp, AccessLog: log}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := http.Handler(mux)
			if tc.opts != nil {
				tc.opts.Metrics = prometheus.NewRegistry()
				tc.opts.Service = func(string) string { return "agents" }
				obs, err := telemetry.NewHTTP(tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				h = obs.Wrap(mux)
			}
			req := httptest.NewRequest("POST", "/agents/echo", nil)
			req.RemoteAddr = "127.0.0.1:40000"
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w discardWriter) WriteHeader(int)             {}
