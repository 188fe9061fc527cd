package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/secret"
)

func ExampleNewExporter() {
	// A collector counting the spans it is sent.
	var mu sync.Mutex
	received := 0
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				received += len(ss.Spans)
			}
		}
	}))
	defer collector.Close()

	exp, err := telemetry.NewExporter(collector.URL, &telemetry.ExporterOptions{
		Headers: map[string]secret.Value{"X-Api-Key": secret.New("collector-key")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	_, span := tp.Tracer("example").Start(context.Background(), "hello")
	span.End()
	// Shutdown exports the spans left, then shuts the exporter down.
	if err := tp.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("spans received:", received)
	// Output: spans received: 1
}
