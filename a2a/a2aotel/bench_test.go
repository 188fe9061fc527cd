package a2aotel

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// interceptorSetups are the configurations the benchmarks compare: off
// (the no-op provider, no metrics), metrics only, and tracing that drops
// every call, keeps one in ten, or keeps all (recorded, exported nowhere).
var interceptorSetups = []struct {
	name    string
	options func() *Options
}{
	{"off", func() *Options { return &Options{TracerProvider: noop.NewTracerProvider()} }},
	{"metrics", func() *Options { return &Options{TracerProvider: noop.NewTracerProvider(), Metrics: NewMetrics()} }},
	{"unsampled", func() *Options {
		return &Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())), Metrics: NewMetrics()}
	}},
	{"sampled10pct", func() *Options {
		return &Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.TraceIDRatioBased(0.1))), Metrics: NewMetrics()}
	}},
	{"sampled", func() *Options {
		return &Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())), Metrics: NewMetrics()}
	}},
}

// BenchmarkServerInterceptor measures the interceptor alone: Before and
// After of one successful SendMessage.
func BenchmarkServerInterceptor(b *testing.B) {
	req := &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m-1", TaskID: "t-1", Role: a2a.RoleUser}}
	resp := &a2a.SendMessageResponse{Task: &a2a.Task{ID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}}
	for _, setup := range interceptorSetups {
		b.Run(setup.name, func(b *testing.B) {
			ic := NewServerInterceptor(setup.options())
			ctx := context.Background()
			// One call, reused: what is measured is the interceptor's own
			// cost, not the Call a binding makes anyway.
			call := &a2asrv.Call{Method: a2a.MethodSendMessage, Binding: a2a.BindingJSONRPC, Header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				cctx, _ := ic.Before(ctx, call, req)
				ic.After(cctx, call, resp, nil)
			}
		})
	}
}

// BenchmarkSendMessage measures a blocking SendMessage through the whole
// handler (decode, execute, store writes, encode) with the interceptor in
// each configuration, and without it ("none"): the cost of tracing and
// metrics in the throughput a server sees.
func BenchmarkSendMessage(b *testing.B) {
	setups := append([]struct {
		name    string
		options func() *Options
	}{{"none", nil}}, interceptorSetups...)
	for _, setup := range setups {
		b.Run(setup.name, func(b *testing.B) {
			var opts a2asrv.Options
			if setup.options != nil {
				opts.Interceptors = []a2asrv.Interceptor{NewServerInterceptor(setup.options())}
			}
			h := a2asrv.NewHandler(&a2a.AgentCard{Name: "echo"}, a2asrv.ExecutorFunc(echo), &opts)
			defer h.Shutdown(context.Background())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`, i, i)
				r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(body)))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte("TASK_STATE_COMPLETED")) {
					b.Fatalf("unexpected response %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
