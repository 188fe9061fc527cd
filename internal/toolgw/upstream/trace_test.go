package upstream

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/tools"
)

// A call to an upstream server carries the gateway's trace context, in
// the HTTP request's traceparent header and in the call's _meta.
func TestUpstreamCallCarriesTraceContext(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("the test's traceparent does not parse")
	}
	res, err := e.callCtx(ctx, "novaos.up.traceparent", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != traceparent {
		t.Errorf("the call's _meta traceparent %q, want %q", got, traceparent)
	}
	h := up.seen()
	if got := h[len(h)-1].Get("traceparent"); got != traceparent {
		t.Errorf("the call's header traceparent %q, want %q", got, traceparent)
	}
}
