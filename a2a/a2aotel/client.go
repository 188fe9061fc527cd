package a2aotel

import (
	"context"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/a2a/a2aclient"
)

// ClientInterceptor traces every call an a2aclient.Client makes: a client
// span per call (each connection of a resumed stream is a call), named by
// its A2A method, whose trace context the request carries to the agent
// (traceparent in the HTTP headers or the gRPC metadata).
type ClientInterceptor struct{ t tracing }

var (
	_ a2aclient.Interceptor = (*ClientInterceptor)(nil)
	_ a2aclient.Finisher    = (*ClientInterceptor)(nil)
)

// NewClientInterceptor returns a client interceptor; o may be nil (its
// Metrics are not used: a server counts calls).
func NewClientInterceptor(o *Options) *ClientInterceptor {
	return &ClientInterceptor{t: newTracing(o)}
}

// Before starts the call's span as a child of the span in ctx and puts
// its trace context in the call's headers.
func (c *ClientInterceptor) Before(ctx context.Context, call *a2aclient.Call) (context.Context, error) {
	if c.t.tracer == nil {
		// No spans of ours, but a caller's span still travels.
		c.t.prop.Inject(ctx, propagation.HeaderCarrier(call.Header))
		return ctx, nil
	}
	st := &callState{call: call}
	ctx, st.span = c.t.tracer.Start(ctx, call.Method, clientSpan...)
	if st.span.IsRecording() {
		requestAttrs(st.span, call.Method, call.Binding, "", call.Params)
	}
	c.t.prop.Inject(ctx, propagation.HeaderCarrier(call.Header))
	st.Context = ctx
	return st, nil
}

// After notes the task a result or a stream frame names.
func (c *ClientInterceptor) After(ctx context.Context, call *a2aclient.Call, result any, err error) error {
	if st := stateOf(ctx, call); st != nil && result != nil && st.span.IsRecording() {
		resultAttrs(st.span, result)
	}
	return err
}

// Finish ends the call's span with its outcome.
func (c *ClientInterceptor) Finish(ctx context.Context, call *a2aclient.Call, err error) {
	if st := stateOf(ctx, call); st != nil {
		endSpan(st.span, err)
	}
}
