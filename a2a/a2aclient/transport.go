package a2aclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// Transport carries a Client's calls over one protocol binding. By the time
// a call reaches it the Client has done everything that does not depend on
// the binding: the interceptors' Before, the auth provider, the tenant in
// the request, and the A2A-Version and A2A-Extensions entries of
// call.Header. A Transport maps call.Method and the typed request in
// call.Params (*a2a.SendMessageRequest, *a2a.GetTaskRequest, …) onto its
// wire, sends call.Header the way its binding carries service parameters
// (HTTP headers, gRPC metadata; the JSON-RPC transport rewrites the two
// entries as A2A 0.3 carries them for a 0.3 interface), and reports what
// the agent answered.
//
// The Client builds one Transport per client from a TransportFactory, so a
// binding the package does not build in (gRPC, a custom binding) plugs in
// through Options.TransportFactories without changing the Client.
//
// Errors a Transport returns: an error answered by the agent is a
// *CallError (unwrapping to the *a2a.Error); an HTTP answer that carries no
// A2A error is an *HTTPError; an answer that is not the binding's shape
// wraps ErrInvalidResponse; an answer over a size limit wraps
// ErrResponseTooLarge; a failure to reach the agent matches ErrUnreachable.
// When ctx ends, the error wraps context.Cause(ctx).
type Transport interface {
	// Unary sends one request and decodes its result into out, a pointer
	// to the method's result (*a2a.SendMessageResponse, *a2a.Task,
	// *a2a.ListTasksResponse, *a2a.TaskPushNotificationConfig,
	// *a2a.ListTaskPushNotificationConfigsResponse, *a2a.AgentCard), or
	// nil for a method without one (DeleteTaskPushNotificationConfig).
	Unary(ctx context.Context, call *Call, out any) error
	// Stream opens a streaming call (SendStreamingMessage,
	// SubscribeToTask). An error returned here was answered before any
	// frame. activity, when not nil, is called whenever anything arrives
	// on the stream, frames and keep-alives alike: it drives
	// Options.StreamIdleTimeout.
	Stream(ctx context.Context, call *Call, activity func()) (FrameStream, error)
}

// FrameStream is an open stream of A2A frames. It is used by one goroutine.
type FrameStream interface {
	// Next returns the next frame and its sequence number: the task's
	// sequence number when the server numbers its frames (NovaOS's SSE
	// ids), else 0. It returns io.EOF when the stream closed cleanly, and
	// any other error as Transport describes.
	Next() (frame *a2a.StreamResponse, seq int64, err error)
	// Close releases the stream; Next must not be called afterwards.
	Close() error
}

// TransportConfig is what a TransportFactory builds a Transport from: the
// selected interface and the Client's options that concern the wire.
type TransportConfig struct {
	// Interface is the agent interface the client calls: its URL,
	// binding, tenant and protocol version.
	Interface a2a.AgentInterface
	// HTTPClient, for bindings over HTTP.
	HTTPClient *http.Client
	// MaxResponseBytes bounds a unary answer; MaxEventBytes one stream
	// frame.
	MaxResponseBytes int64
	MaxEventBytes    int
	Logger           *slog.Logger
	// ConnectGuard is Options.ConnectGuard: nil, or the policy a
	// transport that dials its own connections (not through HTTPClient,
	// which is guarded already) should apply to them.
	ConnectGuard *netguard.Policy
}

// TransportFactory builds the Transport for one interface.
type TransportFactory func(cfg *TransportConfig) (Transport, error)

// builtinTransports are the bindings this package speaks itself.
var builtinTransports = []struct {
	binding string
	factory TransportFactory
}{
	{a2a.BindingJSONRPC, NewJSONRPCTransport},
	{a2a.BindingHTTPJSON, NewRESTTransport},
}

// transportFor returns the factory for binding: Options.TransportFactories
// first, then the built-in ones. Bindings compare case-insensitively.
func (o *Options) transportFor(binding string) TransportFactory {
	for b, f := range o.TransportFactories {
		if strings.EqualFold(b, binding) && f != nil {
			return f
		}
	}
	for _, t := range builtinTransports {
		if strings.EqualFold(t.binding, binding) {
			return t.factory
		}
	}
	return nil
}

// httpWire is what the HTTP bindings share: the client, the limits, and
// how a response body is read.
type httpWire struct {
	hc       *http.Client
	maxBody  int64
	maxEvent int
}

func newHTTPWire(binding string, cfg *TransportConfig) (httpWire, error) {
	url := cfg.Interface.URL
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return httpWire{}, fmt.Errorf("a2aclient: %s agent URL %q is not http(s)", binding, url)
	}
	w := httpWire{hc: cfg.HTTPClient, maxBody: cfg.MaxResponseBytes, maxEvent: cfg.MaxEventBytes}
	if w.hc == nil {
		w.hc = &http.Client{}
	}
	if w.maxBody <= 0 {
		w.maxBody = DefaultMaxResponseBytes
	}
	if w.maxEvent <= 0 {
		w.maxEvent = a2a.DefaultMaxEventSize
	}
	return w, nil
}

// do sends one request whose header is call.Header (Content-Type and
// Accept set here).
func (w *httpWire) do(ctx context.Context, call *Call, verb, url string, body []byte, contentType, accept string) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, verb, url, r)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: %s: %w", call.Method, err)
	}
	req.Header = call.Header
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	} else {
		req.Header.Del("Content-Type")
	}
	req.Header.Set("Accept", accept)
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, transportErr(ctx, call.Method, err)
	}
	return resp, nil
}

// read reads a unary answer within the body limit.
func (w *httpWire) read(ctx context.Context, method string, resp *http.Response) ([]byte, error) {
	body, err := readBody(resp.Body, w.maxBody)
	if err != nil {
		if errors.Is(err, ErrResponseTooLarge) {
			return nil, fmt.Errorf("a2aclient: %s: %w", method, err)
		}
		return nil, transportErr(ctx, method, err)
	}
	return body, nil
}

// readBody reads at most limit bytes of body.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrResponseTooLarge
	}
	return b, nil
}

func mediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt
}

func snippet(b []byte) string {
	if len(b) > 512 {
		b = b[:512]
	}
	return string(b)
}

// activityReader reports every read that returned bytes.
type activityReader struct {
	r  io.Reader
	fn func()
}

func (r *activityReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.fn()
	}
	return n, err
}

// sseStream reads the frames of a text/event-stream answer; decode turns
// one event's data into a frame or the agent's error.
type sseStream struct {
	ctx    context.Context
	method string
	body   io.Closer
	er     *a2a.EventReader
	decode func(method string, ev a2a.Event) (*a2a.StreamResponse, error)
}

func newSSEStream(ctx context.Context, method string, resp *http.Response, maxEvent int, activity func(), decode func(string, a2a.Event) (*a2a.StreamResponse, error)) *sseStream {
	var r io.Reader = resp.Body
	if activity != nil {
		r = &activityReader{r: r, fn: activity}
	}
	return &sseStream{ctx: ctx, method: method, body: resp.Body, er: a2a.NewEventReader(r, maxEvent), decode: decode}
}

func (s *sseStream) Next() (*a2a.StreamResponse, int64, error) {
	ev, err := s.er.Next()
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return nil, 0, io.EOF
		case errors.Is(err, a2a.ErrEventTooLarge):
			return nil, 0, fmt.Errorf("a2aclient: %s: %w", s.method, ErrResponseTooLarge)
		}
		return nil, 0, transportErr(s.ctx, s.method, err)
	}
	f, err := s.decode(s.method, ev)
	if err != nil {
		return nil, 0, err
	}
	if err := checkFrame(s.method, f); err != nil {
		return nil, 0, err
	}
	seq, err := strconv.ParseInt(ev.ID, 10, 64)
	if err != nil || seq < 0 {
		seq = 0
	}
	return f, seq, nil
}

func (s *sseStream) Close() error { return s.body.Close() }

// oneFrame is a stream answered with one plain JSON frame.
type oneFrame struct {
	f    *a2a.StreamResponse
	done bool
}

func (o *oneFrame) Next() (*a2a.StreamResponse, int64, error) {
	if o.done {
		return nil, 0, io.EOF
	}
	o.done = true
	return o.f, 0, nil
}

func (o *oneFrame) Close() error { return nil }

// transportErr wraps a failure below the binding: the context's cause when
// it ended, else an error matching ErrUnreachable.
func transportErr(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("a2aclient: %s: %w", method, context.Cause(ctx))
	}
	return &transportError{method: method, err: err}
}

// checkFrame requires exactly one member.
func checkFrame(method string, f *a2a.StreamResponse) error {
	n := 0
	for _, set := range []bool{f.Task != nil, f.Message != nil, f.StatusUpdate != nil, f.ArtifactUpdate != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("a2aclient: %s: %w: a stream frame must hold exactly one of task, message, statusUpdate, artifactUpdate (got %d)", method, ErrInvalidResponse, n)
	}
	return nil
}
