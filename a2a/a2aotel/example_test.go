package a2aotel_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2aotel"
	"novaos.dev/novaos/a2a/a2asrv"
)

// A server and a client that trace their calls into one provider, and a
// registry the server counts its calls in.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	metrics := a2aotel.NewMetrics()
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)

	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		return u.Reply(ctx, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("hi")))
	})
	h := a2asrv.NewHandler(&a2a.AgentCard{Name: "hello"}, exec, &a2asrv.Options{Interceptors: []a2asrv.Interceptor{
		a2aotel.NewServerInterceptor(&a2aotel.Options{TracerProvider: tp, Metrics: metrics}),
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Shutdown(context.Background())

	client, _ := a2aclient.NewForURL(srv.URL, &a2aclient.Options{Interceptors: []a2aclient.Interceptor{
		a2aotel.NewClientInterceptor(&a2aotel.Options{TracerProvider: tp}),
	}})
	if _, err := client.SendText(context.Background(), "hello", "", ""); err != nil {
		panic(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.SpanKind(), s.Name())
	}
	families, _ := registry.Gather()
	for _, f := range families {
		fmt.Println(f.GetName())
	}
	// Output:
	// server SendMessage
	// client SendMessage
	// novaos_a2a_request_duration_seconds
	// novaos_a2a_requests_total
}
