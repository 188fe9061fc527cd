package a2aclient_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

// fakeTransport is a binding plugged in through Options.TransportFactories,
// the way a gRPC transport is: it records what the Client hands it and
// answers from memory.
type fakeTransport struct {
	cfg   a2aclient.TransportConfig
	calls []string // method, tenant and version of each call
}

func (f *fakeTransport) record(call *a2aclient.Call) {
	tenant := ""
	switch p := call.Params.(type) {
	case *a2a.GetTaskRequest:
		tenant = p.Tenant
	case *a2a.SubscribeToTaskRequest:
		tenant = p.Tenant
	case *a2a.CancelTaskRequest:
		tenant = p.Tenant
	}
	f.calls = append(f.calls, call.Method+" tenant="+tenant+" version="+call.Header.Get(a2a.HeaderVersion)+" binding="+call.Binding)
}

func (f *fakeTransport) Unary(_ context.Context, call *a2aclient.Call, out any) error {
	f.record(call)
	req, ok := call.Params.(*a2a.GetTaskRequest)
	if !ok {
		return &a2aclient.CallError{Method: call.Method, Err: a2a.NewError(a2a.CodeUnsupportedOperation, "fake: %s", call.Method)}
	}
	*out.(*a2a.Task) = a2a.Task{ID: req.ID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	return nil
}

func (f *fakeTransport) Stream(_ context.Context, call *a2aclient.Call, activity func()) (a2aclient.FrameStream, error) {
	f.record(call)
	req := call.Params.(*a2a.SubscribeToTaskRequest)
	return &fakeFrames{frames: []*a2a.StreamResponse{
		{Task: &a2a.Task{ID: req.ID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}},
		{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: req.ID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}},
	}, activity: activity}, nil
}

type fakeFrames struct {
	frames   []*a2a.StreamResponse
	activity func()
}

func (s *fakeFrames) Next() (*a2a.StreamResponse, int64, error) {
	if len(s.frames) == 0 {
		return nil, 0, io.EOF
	}
	if s.activity != nil {
		s.activity()
	}
	f := s.frames[0]
	s.frames = s.frames[1:]
	return f, 0, nil
}

func (s *fakeFrames) Close() error { return nil }

// The seam: a binding the package does not build in plugs in without any
// change to the Client, and gets typed requests with the tenant filled in,
// the service parameters set, and interceptors run around it.
func TestPluggedTransport(t *testing.T) {
	var ft *fakeTransport
	factory := func(cfg *a2aclient.TransportConfig) (a2aclient.Transport, error) {
		ft = &fakeTransport{cfg: *cfg}
		return ft, nil
	}
	card := &a2a.AgentCard{Name: "g", SupportedInterfaces: []a2a.AgentInterface{
		{URL: "grpc.example.com:443", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0", Tenant: "acme"},
		{URL: "http://x", ProtocolBinding: a2a.BindingJSONRPC},
	}}
	var seen []string
	c, err := a2aclient.New(card, &a2aclient.Options{
		TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: factory},
		StreamIdleTimeout:  1 << 40,
		Interceptors: []a2aclient.Interceptor{a2aclient.InterceptorFuncs{AfterFunc: func(_ context.Context, call *a2aclient.Call, res any, err error) error {
			seen = append(seen, call.Method)
			return err
		}}},
	})
	must(t, err)
	if c.Binding() != a2a.BindingGRPC || ft.cfg.Interface.URL != "grpc.example.com:443" || ft.cfg.MaxResponseBytes != a2aclient.DefaultMaxResponseBytes {
		t.Fatalf("binding %s, transport config %+v", c.Binding(), ft.cfg)
	}
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "t-1"})
	must(t, err)
	if task.ID != "t-1" {
		t.Errorf("task %+v", task)
	}
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: "t-1"}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("cancel: %v", err)
	}
	fs, err := collect(t, c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: "t-1"}))
	must(t, err)
	if k := frameKinds(fs); k != "task status:TASK_STATE_COMPLETED " {
		t.Errorf("frames %s", k)
	}
	want := []string{
		"GetTask tenant=acme version=1.0 binding=GRPC",
		"CancelTask tenant=acme version=1.0 binding=GRPC",
		"SubscribeToTask tenant=acme version=1.0 binding=GRPC",
	}
	if d := cmp.Diff(want, ft.calls); d != "" {
		t.Errorf("transport calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"GetTask", "CancelTask", "SubscribeToTask", "SubscribeToTask"}, seen); d != "" {
		t.Errorf("interceptor After calls (-want +got):\n%s", d)
	}
}

func TestSelectInterface(t *testing.T) {
	card := &a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{
		{URL: "grpc.example.com:443", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0"},
		{URL: "http://x/old", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "0.3"},
		{URL: "http://x/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0", Tenant: "t-rest"},
		{URL: "http://x/rpc", ProtocolBinding: a2a.BindingJSONRPC, Tenant: "t-rpc"},
		{URL: "http://x/custom", ProtocolBinding: "https://example.com/bindings/pigeon", ProtocolVersion: "1.0"},
	}}
	fake := func(cfg *a2aclient.TransportConfig) (a2aclient.Transport, error) { return &fakeTransport{}, nil }
	for _, tc := range []struct {
		name      string
		card      *a2a.AgentCard
		opts      a2aclient.Options
		url       string // of the selected interface
		tenant    string
		errSubstr string
	}{
		{"no preference: the card's first interface the client speaks", card, a2aclient.Options{}, "http://x/rest", "t-rest", ""},
		{"one binding", card, a2aclient.Options{Transports: []string{a2a.BindingJSONRPC}}, "http://x/rpc", "t-rpc", ""},
		{"the caller's order beats the card's", card, a2aclient.Options{Transports: []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}}, "http://x/rpc", "t-rpc", ""},
		{"a binding without a transport is skipped", card, a2aclient.Options{Transports: []string{a2a.BindingGRPC, a2a.BindingHTTPJSON}}, "http://x/rest", "t-rest", ""},
		{"bindings compare case-insensitively", card, a2aclient.Options{Transports: []string{"jsonrpc"}}, "http://x/rpc", "t-rpc", ""},
		{"Options.Tenant overrides the interface's", card, a2aclient.Options{Tenant: "mine"}, "http://x/rest", "mine", ""},
		{"a plugged transport joins the card's order", card, a2aclient.Options{TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: fake}}, "grpc.example.com:443", "", ""},
		{"a custom binding by URI", card, a2aclient.Options{Transports: []string{"https://example.com/bindings/pigeon"},
			TransportFactories: map[string]a2aclient.TransportFactory{"https://example.com/bindings/pigeon": fake}}, "http://x/custom", "", ""},
		{"nothing the client speaks", &a2a.AgentCard{Name: "x", SupportedInterfaces: card.SupportedInterfaces[:2]}, a2aclient.Options{}, "", "",
			"the card offers GRPC 1.0, HTTP+JSON 0.3; want JSONRPC or HTTP+JSON (protocol version 1.x, or 0.3 over JSONRPC)"},
		{"the preferred binding is not offered", &a2a.AgentCard{Name: "x", SupportedInterfaces: card.SupportedInterfaces[2:3]}, a2aclient.Options{Transports: []string{a2a.BindingJSONRPC}}, "", "",
			"the card offers HTTP+JSON 1.0; want JSONRPC"},
		{"no transport for any preferred binding", card, a2aclient.Options{Transports: []string{a2a.BindingGRPC}}, "", "",
			"no transport for GRPC (add one in Options.TransportFactories)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a2aclient.New(tc.card, &tc.opts)
			if tc.errSubstr != "" {
				if !errors.Is(err, a2aclient.ErrNoInterface) || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err = %v, want ErrNoInterface saying %q", err, tc.errSubstr)
				}
				return
			}
			must(t, err)
			if c.URL() != tc.url || c.Tenant() != tc.tenant {
				t.Errorf("selected %s (tenant %q), want %s (tenant %q)", c.URL(), c.Tenant(), tc.url, tc.tenant)
			}
		})
	}
}

func TestNewForURLBinding(t *testing.T) {
	for _, tc := range []struct {
		transports []string
		binding    string
		errSubstr  string
	}{
		{nil, a2a.BindingJSONRPC, ""},
		{[]string{a2a.BindingHTTPJSON, a2a.BindingJSONRPC}, a2a.BindingHTTPJSON, ""},
		{[]string{a2a.BindingGRPC}, "", "no transport for the GRPC binding"},
	} {
		c, err := a2aclient.NewForURL("http://x", &a2aclient.Options{Transports: tc.transports})
		if tc.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("%v: err = %v, want %q", tc.transports, err, tc.errSubstr)
			}
			continue
		}
		must(t, err)
		if c.Binding() != tc.binding {
			t.Errorf("%v: binding %s, want %s", tc.transports, c.Binding(), tc.binding)
		}
	}
}
