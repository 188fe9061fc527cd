package builtin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
)

// The tools that reach out (notify.webhook, http.fetch) send the call's
// trace context with their requests: the receiver's spans join the run's
// trace.
func TestOutboundCarriesTraceContext(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h, hookSrv := newHook(t, 0)
	site := newSite(t, map[string]http.HandlerFunc{"/doc": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }})
	notify, err := builtin.Notify(&builtin.NotifyOptions{Policy: loopback, AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	web, err := builtin.HTTP(&builtin.HTTPOptions{Policy: loopback, AllowHTTP: true, AllowedDomains: []string{"api.test"}, Resolver: names})
	if err != nil {
		t.Fatal(err)
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote(t, traceparent))
	for _, tc := range []struct {
		p    toolgw.Provider
		tool string
		args any
		seen func() string
	}{
		{notify, "novaos.notify.webhook", map[string]any{"url": hookSrv.URL, "payload": json.RawMessage(`{}`)}, func() string {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.reqs[len(h.reqs)-1].Header.Get("traceparent")
		}},
		{web, "novaos.http.fetch", map[string]any{"url": site.url("api.test", "/doc")}, func() string {
			r := site.requests()
			return r[len(r)-1].Header.Get("traceparent")
		}},
	} {
		res, err := callCtx(t, ctx, tc.p, testCaller(), tc.tool, tc.args)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tc.tool, err, res)
		}
		if got := tc.seen(); got != traceparent {
			t.Errorf("%s sent traceparent %q, want %q", tc.tool, got, traceparent)
		}
	}
}

// remote is the span context traceparent names.
func remote(t *testing.T, traceparent string) trace.SpanContext {
	t.Helper()
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		t.Fatalf("traceparent %q does not parse", traceparent)
	}
	return sc
}
