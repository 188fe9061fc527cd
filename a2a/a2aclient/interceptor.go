package a2aclient

import (
	"context"
	"net/http"

	"novaos.dev/novaos/a2a"
)

// Call is one client call as interceptors and auth providers see it.
type Call struct {
	// Method is the A2A method name (a2a.MethodSendMessage, …).
	Method string
	// Params is a pointer to the request (*a2a.SendMessageRequest, …),
	// with the tenant already filled in. Before may change it.
	Params any
	// Card is the agent's card (nil when the client was built without one).
	Card *a2a.AgentCard
	// Binding is the protocol binding the call travels over
	// (a2a.BindingJSONRPC, a2a.BindingHTTPJSON, …).
	Binding string
	// Header carries the call's service parameters: HTTP headers, or what
	// a binding such as gRPC sends in their place. Before and auth
	// providers may set entries. A2A-Version is set after Before runs,
	// and the transport sets Content-Type and Accept.
	Header http.Header
	// SessionID is the caller's session (WithSession), which keys the
	// credential store.
	SessionID string
	// Values carries state from Before to After of the same call.
	Values map[string]any
}

// Interceptor runs around every call, on every binding, in
// Options.Interceptors order for Before and reverse order for After.
type Interceptor interface {
	// Before runs before the request is sent; an error fails the call
	// without sending it. The returned context is used for the call.
	Before(ctx context.Context, call *Call) (context.Context, error)
	// After runs with the call's outcome: once for a unary call (result is
	// the decoded result), and for a stream once per frame (result is the
	// *a2a.StreamResponse) and once more if the stream fails (result nil).
	// A non-nil return replaces err as the call's error.
	After(ctx context.Context, call *Call, result any, err error) error
}

// A Finisher is an Interceptor told when a call is over, to release
// what its Before started (a span, a timer): once per call whose Before
// succeeded, after the call's last After. A unary call is over once it
// answered or failed; a stream connection once it closed, whether its
// final frame arrived, the consumer stopped reading, or it broke (each
// resumption of a stream is a call of its own). err is what ended the
// call, nil for a clean end; a later interceptor's refusal in Before ends
// the call with that error before anything was sent.
type Finisher interface {
	Finish(ctx context.Context, call *Call, err error)
}

// InterceptorFuncs adapts two functions to an Interceptor; either may be nil.
type InterceptorFuncs struct {
	BeforeFunc func(ctx context.Context, call *Call) (context.Context, error)
	AfterFunc  func(ctx context.Context, call *Call, result any, err error) error
}

// Before calls BeforeFunc.
func (f InterceptorFuncs) Before(ctx context.Context, call *Call) (context.Context, error) {
	if f.BeforeFunc == nil {
		return ctx, nil
	}
	return f.BeforeFunc(ctx, call)
}

// After calls AfterFunc.
func (f InterceptorFuncs) After(ctx context.Context, call *Call, result any, err error) error {
	if f.AfterFunc == nil {
		return err
	}
	return f.AfterFunc(ctx, call, result, err)
}
