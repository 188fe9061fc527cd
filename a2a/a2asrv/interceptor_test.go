package a2asrv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc/metadata"
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

// recorder is an interceptor that keeps what it saw.
type recorder struct {
	name   string
	refuse func(call *a2asrv.Call, req any) error

	mu    sync.Mutex
	log   *[]string
	calls []recorded
}

type recorded struct {
	method, binding string
	scope           a2asrv.Scope
	req, resp       any
	err             error
}

type ctxKey struct{}

func (r *recorder) Before(ctx context.Context, call *a2asrv.Call, req any) (context.Context, error) {
	r.mu.Lock()
	*r.log = append(*r.log, r.name+".before "+call.Method)
	r.mu.Unlock()
	if r.refuse != nil {
		if err := r.refuse(call, req); err != nil {
			return nil, err
		}
	}
	return context.WithValue(ctx, ctxKey{}, r.name), nil
}

func (r *recorder) After(ctx context.Context, call *a2asrv.Call, resp any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, r.name+".after "+call.Method)
	r.calls = append(r.calls, recorded{method: call.Method, binding: call.Binding, scope: call.Scope, resp: resp, err: err})
}

func (r *recorder) last() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

func TestInterceptorsOrderAndRefusal(t *testing.T) {
	var log []string
	outer := &recorder{name: "outer", log: &log}
	inner := &recorder{name: "inner", log: &log, refuse: func(call *a2asrv.Call, req any) error {
		if r, ok := req.(*a2a.GetTaskRequest); ok && r.ID == "forbidden" {
			return a2a.NewError(a2a.CodeUnsupportedOperation, "not for you")
		}
		if r, ok := req.(*a2a.GetTaskRequest); ok && r.ID == "broken" {
			return errors.New("quota store down: secret detail")
		}
		return nil
	}}
	var sawValue any
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		sawValue = ctx.Value(ctxKey{})
		return scripted(ctx, req, u)
	})
	c, _ := newServer(t, exec, &a2asrv.Options{Interceptors: []a2asrv.Interceptor{outer, inner},
		Identify: func(_ context.Context, call *a2asrv.Call) (a2asrv.Scope, error) {
			return a2asrv.Scope{Tenant: "acme", Owner: call.Header.Get("X-User")}, nil
		}})

	// Admitted: every Before in order, then every After in reverse, and the
	// context the interceptors built reaches the executor.
	var resp a2a.SendMessageResponse
	if e := c.call(a2a.MethodSendMessage, userMessage("complete it"), &resp, "X-User", "ada"); e != nil {
		t.Fatal(e)
	}
	want := []string{"outer.before SendMessage", "inner.before SendMessage", "inner.after SendMessage", "outer.after SendMessage"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q", log, want)
	}
	if sawValue != "inner" {
		t.Errorf("executor's context value %v, want the innermost interceptor's", sawValue)
	}
	got := outer.last()
	if got.binding != a2a.BindingJSONRPC || got.scope != (a2asrv.Scope{Tenant: "acme", Owner: "ada"}) || got.err != nil {
		t.Errorf("outer saw %+v", got)
	}
	if r, ok := got.resp.(*a2a.SendMessageResponse); !ok || r.Task == nil || r.Task.ID != resp.Task.ID {
		t.Errorf("After's response %#v, want the task answered", got.resp)
	}

	// Refused with a typed error: the caller gets it as is, the method does
	// not run, and only the interceptors that admitted see After.
	log = nil
	e := c.call(a2a.MethodGetTask, map[string]any{"id": "forbidden"}, nil, "X-User", "ada")
	if e == nil || e.Code != a2a.CodeUnsupportedOperation || e.Message != "not for you" {
		t.Fatalf("refusal answered %v", e)
	}
	want = []string{"outer.before GetTask", "inner.before GetTask", "outer.after GetTask"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q", log, want)
	}
	var ae *a2a.Error
	if got := outer.last(); !errors.As(got.err, &ae) || ae.Code != a2a.CodeUnsupportedOperation || got.resp != nil {
		t.Errorf("outer.After saw %+v", got)
	}

	// Refused with a plain error: internal error, its text not sent.
	e = c.call(a2a.MethodGetTask, map[string]any{"id": "broken"}, nil, "X-User", "ada")
	if e == nil || e.Code != a2a.CodeInternalError || e.Message != "internal error" {
		t.Fatalf("plain refusal answered %v", e)
	}

	// A method's own error is recorded as the outcome.
	if e := c.call(a2a.MethodGetTask, map[string]any{"id": "missing"}, nil, "X-User", "ada"); e == nil || e.Code != a2a.CodeTaskNotFound {
		t.Fatalf("GetTask of a missing task: %v", e)
	}
	if got := outer.last(); !errors.As(got.err, &ae) || ae.Code != a2a.CodeTaskNotFound {
		t.Errorf("outer.After saw %+v", got)
	}
}

func TestInterceptorsSeeStreams(t *testing.T) {
	var log []string
	rec := &recorder{name: "rec", log: &log}
	c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), &a2asrv.Options{Interceptors: []a2asrv.Interceptor{rec}})
	var frames int
	for range c.stream(context.Background(), a2a.MethodSendStreamingMessage, userMessage("complete it")) {
		frames++
	}
	got := rec.last()
	r, ok := got.resp.(*a2asrv.StreamResult)
	if !ok || got.err != nil || r.Frames != frames || frames < 2 {
		t.Fatalf("After of a stream of %d frames saw %#v, %v", frames, got.resp, got.err)
	}
}

// breakingSink takes one frame, then fails, as a connection the caller
// dropped does.
type breakingSink struct{ sent int }

func (s *breakingSink) Send(a2asrv.Version, *a2a.StreamResponse) error {
	if s.sent++; s.sent > 1 {
		return errors.New("connection reset")
	}
	return nil
}
func (s *breakingSink) Flush() error     { return nil }
func (s *breakingSink) KeepAlive() error { return nil }

// After tells a stream that broke off after sending frames (its
// StreamResult, with the error) from one refused before any (no result).
func TestInterceptorsSeeBrokenStreams(t *testing.T) {
	var log []string
	rec := &recorder{name: "rec", log: &log}
	h := a2asrv.NewHandler(testCard(), a2asrv.ExecutorFunc(scripted), &a2asrv.Options{Interceptors: []a2asrv.Interceptor{rec}})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	hd := http.Header{}
	hd.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	send := func(m *a2a.Message) (recorded, error) {
		err := h.Core().SendStreamingMessage(context.Background(), &a2asrv.Call{Header: hd.Clone()}, &a2a.SendMessageRequest{Message: m}, &breakingSink{})
		return rec.last(), err
	}
	got, err := send(a2a.NewMessage(a2a.RoleUser, a2a.TextPart("complete it")))
	if r, ok := got.resp.(*a2asrv.StreamResult); err == nil || got.err == nil || !ok || r.Frames != 1 {
		t.Errorf("a stream broken after one frame: the call returned %v; After saw %#v, %v", err, got.resp, got.err)
	}
	m := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("complete it"))
	m.TaskID = "no-such-task"
	got, err = send(m)
	if err == nil || got.err == nil || got.resp != nil {
		t.Errorf("a refused stream: the call returned %v; After saw %#v, %v", err, got.resp, got.err)
	}
}

// Interceptors see, and may refuse, calls on every binding alike.
func TestInterceptorsOnEveryBinding(t *testing.T) {
	var log []string
	rec := &recorder{name: "rec", log: &log, refuse: func(call *a2asrv.Call, req any) error {
		if r, ok := req.(*a2a.GetTaskRequest); ok && r.ID == "forbidden" {
			return a2a.NewError(a2a.CodeUnsupportedOperation, "not for you")
		}
		return nil
	}}
	h := a2asrv.NewHandler(testCard(), a2asrv.ExecutorFunc(scripted), &a2asrv.Options{Interceptors: []a2asrv.Interceptor{rec},
		Identify: func(_ context.Context, call *a2asrv.Call) (a2asrv.Scope, error) {
			return a2asrv.Scope{Owner: call.Header.Get("X-User")}, nil
		}})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Shutdown(context.Background()); srv.Close() })
	grpcClient := serveGRPC(t, h)

	calls := map[string]func(id string) int{
		a2a.BindingJSONRPC: func(id string) int {
			c := &client{t: t, url: srv.URL}
			if e := c.call(a2a.MethodGetTask, map[string]any{"id": id}, nil, "X-User", "ada"); e != nil {
				return e.Code
			}
			return 0
		},
		a2a.BindingHTTPJSON: func(id string) int {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/tasks/"+id, nil)
			req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
			req.Header.Set("X-User", "ada")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusOK {
				return 0
			}
			return restErrorCode(t, fmt.Sprint(resp.StatusCode), body)
		},
		a2a.BindingGRPC: func(id string) int {
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("a2a-version", a2a.ProtocolVersion, "x-user", "ada"))
			_, err := grpcClient.GetTask(ctx, &a2apb.GetTaskRequest{Id: id})
			if err == nil {
				return 0
			}
			return a2agrpc.Error(err).Code
		},
	}
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		t.Run(binding, func(t *testing.T) {
			if code := calls[binding]("forbidden"); code != a2a.CodeUnsupportedOperation {
				t.Errorf("refused call answered %d, want the interceptor's -32004", code)
			}
			if code := calls[binding]("missing"); code != a2a.CodeTaskNotFound {
				t.Errorf("admitted call answered %d, want -32001", code)
			}
			got := rec.last()
			var e *a2a.Error
			if got.binding != binding || got.scope.Owner != "ada" || !errors.As(got.err, &e) || e.Code != a2a.CodeTaskNotFound {
				t.Errorf("After saw %+v", got)
			}
		})
	}
}

// Identification comes before every interceptor: a caller Identify refuses
// never reaches one.
func TestInterceptorsRunAfterIdentify(t *testing.T) {
	var log []string
	rec := &recorder{name: "rec", log: &log}
	c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), &a2asrv.Options{Interceptors: []a2asrv.Interceptor{rec},
		Identify: func(context.Context, *a2asrv.Call) (a2asrv.Scope, error) {
			return a2asrv.Scope{}, errors.New("no token")
		}})
	if e := c.call(a2a.MethodGetTask, map[string]any{"id": "x"}, nil); e == nil || e.Code != a2asrv.CodeUnauthenticated {
		t.Fatalf("unidentified caller answered %v", e)
	}
	if len(log) != 0 {
		t.Fatalf("interceptors ran for an unidentified caller: %q", log)
	}
}

// ExampleInterceptor shows the order of the hooks: every Before in the
// order of Options.Interceptors, the method, then the Afters in reverse.
// A refusal stops the call at that interceptor.
func ExampleInterceptor() {
	trace := func(name string, refuses bool) a2asrv.Interceptor {
		return a2asrv.InterceptorFuncs{
			BeforeFunc: func(ctx context.Context, call *a2asrv.Call, req any) (context.Context, error) {
				fmt.Println(name, "before", call.Method, "for", call.Scope.Tenant)
				if r, ok := req.(*a2a.GetTaskRequest); ok && refuses && r.ID == "secret" {
					return nil, a2a.NewError(a2a.CodeTaskNotFound, "task not found")
				}
				return ctx, nil
			},
			AfterFunc: func(ctx context.Context, call *a2asrv.Call, resp any, err error) {
				fmt.Println(name, "after", call.Method, "error:", err)
			},
		}
	}
	h := a2asrv.NewHandler(nil, a2asrv.ExecutorFunc(scripted), &a2asrv.Options{
		Interceptors: []a2asrv.Interceptor{trace("metering", false), trace("gate", true)},
	})
	defer h.Shutdown(context.Background())
	newCall := func() *a2asrv.Call {
		hd := http.Header{}
		hd.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		return &a2asrv.Call{Method: a2a.MethodGetTask, Binding: "example", Header: hd}
	}
	_, err := h.Core().GetTask(context.Background(), newCall(), &a2a.GetTaskRequest{Tenant: "acme", ID: "t-1"})
	fmt.Println("answer:", err)
	_, err = h.Core().GetTask(context.Background(), newCall(), &a2a.GetTaskRequest{Tenant: "acme", ID: "secret"})
	fmt.Println("answer:", err)
	// Output:
	// metering before GetTask for acme
	// gate before GetTask for acme
	// gate after GetTask error: a2a: task not found (-32001)
	// metering after GetTask error: a2a: task not found (-32001)
	// answer: a2a: task not found (-32001)
	// metering before GetTask for acme
	// gate before GetTask for acme
	// metering after GetTask error: a2a: task not found (-32001)
	// answer: a2a: task not found (-32001)
}
