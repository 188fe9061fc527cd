package a2aotel

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
)

// sink is a span processor that hands every ended span to the test, so a
// test waits for the spans it expects instead of polling.
type sink struct{ ended chan sdktrace.ReadOnlySpan }

func newSink() *sink { return &sink{ended: make(chan sdktrace.ReadOnlySpan, 256)} }

func (s *sink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *sink) OnEnd(sp sdktrace.ReadOnlySpan)                  { s.ended <- sp }
func (s *sink) Shutdown(context.Context) error                  { return nil }
func (s *sink) ForceFlush(context.Context) error                { return nil }

// await returns the next n spans to end.
func (s *sink) await(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	out := make([]sdktrace.ReadOnlySpan, 0, n)
	timeout := time.NewTimer(10 * time.Second) // a guard against a hang, not a wait
	defer timeout.Stop()
	for len(out) < n {
		select {
		case sp := <-s.ended:
			out = append(out, sp)
		case <-timeout.C:
			t.Fatalf("%d of %d spans ended", len(out), n)
		}
	}
	return out
}

// find returns the span of kind named name among spans.
func find(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, sp := range spans {
		if sp.Name() == name && sp.SpanKind() == kind {
			return sp
		}
	}
	t.Fatalf("no %v span %q among %d", kind, name, len(spans))
	return nil
}

func attr(sp sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range sp.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// echo answers with one artifact, then completes; a message "fail"
// fails the call itself.
func echo(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	if req.Message.Text() == "fail" {
		return a2a.NewError(a2a.CodeContentTypeNotSupported, "no")
	}
	if err := u.AddArtifact(ctx, a2a.Artifact{ArtifactID: "a", Parts: req.Message.Parts}, false, true, nil); err != nil {
		return err
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
}

// server serves echo over JSON-RPC, HTTP+JSON and gRPC with a server
// interceptor; wrap, when set, stands in front of the HTTP bindings.
type server struct {
	card    *a2a.AgentCard
	metrics *Metrics
	sink    *sink
	tp      *sdktrace.TracerProvider
}

func newServer(t *testing.T, sampler sdktrace.Sampler, wrap func(http.Handler) http.Handler) *server {
	s := &server{metrics: NewMetrics(), sink: newSink()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(s.sink))
	opts := &a2asrv.Options{Interceptors: []a2asrv.Interceptor{NewServerInterceptor(&Options{TracerProvider: s.tp, Metrics: s.metrics})}}
	h := a2asrv.NewHandler(&a2a.AgentCard{Name: "echo", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)}},
		a2asrv.ExecutorFunc(echo), opts)
	var hh http.Handler = h
	if wrap != nil {
		hh = wrap(h)
	}
	srv := httptest.NewServer(hh)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	grpcsrv.New(h).Register(g)
	go g.Serve(lis)
	t.Cleanup(func() {
		g.Stop()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	s.card = &a2a.AgentCard{Name: "echo", SupportedInterfaces: []a2a.AgentInterface{
		{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
		{URL: srv.URL, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
		{URL: lis.Addr().String(), ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion},
	}}
	return s
}

func (s *server) client(t *testing.T, binding string) *a2aclient.Client {
	c, err := a2aclient.New(s.card, &a2aclient.Options{
		Transports:         []string{binding},
		TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)},
		Interceptors:       []a2aclient.Interceptor{NewClientInterceptor(&Options{TracerProvider: s.tp})},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var allBindings = []struct{ binding, label string }{
	{a2a.BindingJSONRPC, "jsonrpc"}, {a2a.BindingHTTPJSON, "rest"}, {a2a.BindingGRPC, "grpc"},
}

// TestSpansOnEveryBinding: a call's client span is the parent of its
// server span on every binding, both carry the task, and a failure is
// recorded on both.
func TestSpansOnEveryBinding(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b.label, func(t *testing.T) {
			s := newServer(t, sdktrace.AlwaysSample(), nil)
			c := s.client(t, b.binding)

			res, err := c.SendText(t.Context(), "hello", "", "")
			if err != nil {
				t.Fatal(err)
			}
			spans := s.sink.await(t, 2)
			cl, sv := find(t, spans, a2a.MethodSendMessage, trace.SpanKindClient), find(t, spans, a2a.MethodSendMessage, trace.SpanKindServer)
			if sv.Parent().SpanID() != cl.SpanContext().SpanID() || sv.SpanContext().TraceID() != cl.SpanContext().TraceID() {
				t.Errorf("the server span's parent is %v, want the client span %v", sv.Parent(), cl.SpanContext())
			}
			for _, sp := range []sdktrace.ReadOnlySpan{cl, sv} {
				for key, want := range map[attribute.Key]string{
					AttrMethod: a2a.MethodSendMessage, AttrBinding: b.binding, AttrTaskID: res.Task.ID,
					AttrContextID: res.Task.ContextID, AttrTaskState: "TASK_STATE_COMPLETED", AttrOperation: "invoke_agent",
				} {
					if got := attr(sp, key); got != want {
						t.Errorf("%v span: %s = %q, want %q", sp.SpanKind(), key, got, want)
					}
				}
				if sp.Status().Code == codes.Error {
					t.Errorf("%v span failed: %v", sp.SpanKind(), sp.Status())
				}
			}

			_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "missing"})
			if !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Fatalf("GetTask of a missing task: %v", err)
			}
			spans = s.sink.await(t, 2)
			for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
				sp := find(t, spans, a2a.MethodGetTask, kind)
				if sp.Status().Code != codes.Error || attr(sp, AttrErrorType) != "TASK_NOT_FOUND" ||
					attr(sp, AttrRPCStatus) != "-32001" || attr(sp, AttrTaskID) != "missing" {
					t.Errorf("%v span of a failed GetTask: status %v, attributes %v", kind, sp.Status(), sp.Attributes())
				}
			}

			// A stream: the server span lasts until the stream ended, the
			// client span until its connection closed.
			frames := 0
			for _, err := range c.SendStreamingMessage(t.Context(), a2aclient.TextRequest("hi", "", "")) {
				if err != nil {
					t.Fatal(err)
				}
				frames++
			}
			spans = s.sink.await(t, 2)
			for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
				sp := find(t, spans, a2a.MethodSendStreamingMessage, kind)
				if attr(sp, AttrOperation) != "invoke_agent" || sp.Status().Code == codes.Error {
					t.Errorf("%v stream span: status %v, attributes %v", kind, sp.Status(), sp.Attributes())
				}
			}
			if got := attr(find(t, spans, a2a.MethodSendStreamingMessage, trace.SpanKindClient), AttrTaskState); got != "TASK_STATE_COMPLETED" {
				t.Errorf("the client's stream span ends in state %q after %d frames", got, frames)
			}

			for _, tc := range []struct {
				method, outcome string
				want            float64
			}{
				{a2a.MethodSendMessage, "ok", 1}, {a2a.MethodGetTask, "TASK_NOT_FOUND", 1},
				{a2a.MethodSendStreamingMessage, "ok", 1}, {a2a.MethodGetTask, "ok", 0},
			} {
				if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues(tc.method, b.label, tc.outcome)); got != tc.want {
					t.Errorf("%s{%s,%s} = %v, want %v", MetricRequests, tc.method, tc.outcome, got, tc.want)
				}
			}
			if n := testutil.CollectAndCount(s.metrics.duration); n != len(methods)*len(bindings) {
				t.Errorf("%d duration series, want one per method and binding (%d)", n, len(methods)*len(bindings))
			}
		})
	}
}

// TestServerSpanParentsOnTheContext: a span already in the call's
// context (an HTTP middleware's) is the parent, not the header's.
func TestServerSpanParentsOnTheContext(t *testing.T) {
	var mw trace.SpanContext
	var s *server
	s = newServer(t, sdktrace.AlwaysSample(), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, span := s.tp.Tracer("middleware").Start(r.Context(), "POST /")
			mw = span.SpanContext()
			next.ServeHTTP(w, r.WithContext(ctx))
			span.End()
		})
	})
	c, err := a2aclient.New(s.card, &a2aclient.Options{Transports: []string{a2a.BindingJSONRPC}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendText(t.Context(), "hello", "", "", a2aclient.WithHeader("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")); err != nil {
		t.Fatal(err)
	}
	spans := s.sink.await(t, 2)
	sv := find(t, spans, a2a.MethodSendMessage, trace.SpanKindServer)
	if sv.Parent().SpanID() != mw.SpanID() {
		t.Errorf("server span's parent %v, want the middleware's %v", sv.Parent(), mw)
	}
}

// TestUnsampled: a dropped trace records no span, the trace context still
// travels (unsampled), and the metrics count.
func TestUnsampled(t *testing.T) {
	var seen string
	s := newServer(t, sdktrace.NeverSample(), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = r.Header.Get("traceparent")
			next.ServeHTTP(w, r)
		})
	})
	c := s.client(t, a2a.BindingJSONRPC)
	if _, err := c.SendText(t.Context(), "hello", "", ""); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 55 || seen[53:] != "00" {
		t.Errorf("traceparent %q, want an unsampled one", seen)
	}
	select {
	case sp := <-s.sink.ended:
		t.Errorf("an unsampled call recorded span %q", sp.Name())
	default:
	}
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues(a2a.MethodSendMessage, "jsonrpc", "ok")); got != 1 {
		t.Errorf("requests = %v, want 1", got)
	}
}

// TestOutcomeIsTheMethodsError: an error the executor returns is the
// call's outcome.
func TestOutcomeIsTheMethodsError(t *testing.T) {
	s := newServer(t, sdktrace.AlwaysSample(), nil)
	c := s.client(t, a2a.BindingHTTPJSON)
	if _, err := c.SendText(t.Context(), "fail", "", ""); !errors.Is(err, a2a.ErrContentTypeNotSupported) {
		t.Fatalf("got %v", err)
	}
	s.sink.await(t, 2)
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues(a2a.MethodSendMessage, "rest", "CONTENT_TYPE_NOT_SUPPORTED")); got != 1 {
		t.Errorf("requests{outcome=CONTENT_TYPE_NOT_SUPPORTED} = %v, want 1", got)
	}
}
