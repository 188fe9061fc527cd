package instrument

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestRegisterSharesACollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	mk := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "novaos_test_calls_total", Help: "Calls."}, []string{"outcome"})
	}
	a := Register(reg, mk(), nil)
	b := Register(reg, mk(), nil)
	if a != b {
		t.Fatal("a second registration of the same metric got a collector of its own")
	}
	a.WithLabelValues("ok").Inc()
	b.WithLabelValues("ok").Inc()
	if got := testutil.ToFloat64(a.WithLabelValues("ok")); got != 2 {
		t.Errorf("shared counter = %v, want 2", got)
	}
	// Another type under the same name is refused, and the caller keeps a
	// working, unregistered collector.
	g := Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "novaos_test_calls_total", Help: "Other."}), nil)
	g.Set(3)
	if got := testutil.ToFloat64(g); got != 3 {
		t.Errorf("unregistered gauge = %v, want 3", got)
	}
	// No registry: the collector works, nothing is registered.
	c := Register[prometheus.Counter](nil, prometheus.NewCounter(prometheus.CounterOpts{Name: "novaos_test_other_total", Help: "x"}), nil)
	c.Inc()
	if n, err := testutil.GatherAndCount(reg, "novaos_test_other_total"); err != nil || n != 0 {
		t.Errorf("nil registerer registered %d series (%v)", n, err)
	}
}

func TestTransportPropagates(t *testing.T) {
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("t").Start(context.Background(), "call")
	defer span.End()
	client := &http.Client{Transport: Transport(nil)}

	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"span", ctx, "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"},
		{"no span", context.Background(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodGet, srv.URL, nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := <-seen; got != tc.want {
				t.Errorf("traceparent %q, want %q", got, tc.want)
			}
			if req.Header.Get("traceparent") != "" {
				t.Error("the caller's request was changed")
			}
		})
	}
	if Transport(client.Transport) != client.Transport {
		t.Error("wrapping twice made a second layer")
	}
}

func TestProvider(t *testing.T) {
	if sc := Tracer(nil, "t"); sc == nil {
		t.Fatal("no tracer for a nil provider")
	}
	_, span := Provider(nil).Tracer("t").Start(context.Background(), "x")
	if span.IsRecording() {
		t.Error("the provider for nil records")
	}
	tp := sdktrace.NewTracerProvider()
	if Provider(tp) != tp {
		t.Error("a provider was not passed through")
	}
}
