package grpcclient_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
)

// agent completes with an echo, asks on "ask" and works until cancelled
// on "slow".
func agent(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	switch req.Message.Text() {
	case "ask":
		return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("which one?")), nil)
	case "slow":
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}
	if err := u.AddArtifact(ctx, a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("echo: " + req.Message.Text())}}, false, true, nil); err != nil {
		return err
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
}

// bindings records the binding of every call a client makes.
type bindings struct {
	mu  sync.Mutex
	got []string
}

func (b *bindings) Before(ctx context.Context, c *a2aclient.Call) (context.Context, error) {
	b.mu.Lock()
	b.got = append(b.got, c.Binding)
	b.mu.Unlock()
	return ctx, nil
}

func (*bindings) After(_ context.Context, _ *a2aclient.Call, _ any, err error) error { return err }

// newClient serves the agent over gRPC on loopback (as "echo" of a mux)
// and returns a client whose card lists that interface after a JSON-RPC
// one nobody answers, so only gRPC can work.
func newClient(t *testing.T) (*a2aclient.Client, *bindings) {
	t.Helper()
	card := &a2a.AgentCard{Name: "echo", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(true)},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	h := a2asrv.NewHandler(card, a2asrv.ExecutorFunc(agent), &a2asrv.Options{PushConfigStore: a2asrv.NewMemoryPushConfigStore(nil)})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	grpcsrv.NewMux(map[string]*a2asrv.Handler{"echo": h}).Register(g)
	go g.Serve(lis)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.Shutdown(ctx)
		g.Stop()
	})
	card.SupportedInterfaces = []a2a.AgentInterface{
		{URL: "http://127.0.0.1:1/unused", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
		{URL: lis.Addr().String(), ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion, Tenant: "echo"},
	}
	rec := &bindings{}
	c, err := a2aclient.New(card, &a2aclient.Options{
		Transports:         []string{a2a.BindingGRPC},
		TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)},
		Interceptors:       []a2aclient.Interceptor{rec},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestEveryMethodOverGRPC(t *testing.T) {
	c, rec := newClient(t)
	ctx := t.Context()

	sent, err := c.SendText(ctx, "hello", "", "")
	if err != nil || sent.Task == nil || sent.Task.Status.State != a2a.TaskStateCompleted || a2a.PartsText(sent.Task.Artifacts[0].Parts) != "echo: hello" {
		t.Fatalf("SendMessage: %+v, %v", sent, err)
	}
	task := sent.Task

	var kinds []string
	for f, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("streamed", "", "")) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch {
		case f.Task != nil:
			kinds = append(kinds, "task")
		case f.ArtifactUpdate != nil:
			kinds = append(kinds, "artifact")
		case f.StatusUpdate != nil:
			kinds = append(kinds, f.StatusUpdate.Status.State.String())
		}
	}
	if len(kinds) < 2 || kinds[0] != "task" || kinds[len(kinds)-1] != a2a.TaskStateCompleted.String() {
		t.Errorf("stream frames %v", kinds)
	}

	zero := int32(0)
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &zero})
	if err != nil || got.ID != task.ID || len(got.History) != 0 {
		t.Fatalf("GetTask: %+v, %v", got, err)
	}
	list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("ListTasks: %+v, %v", list, err)
	}

	cfg, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: task.ID, URL: "https://hooks.example.com/a2a"})
	if err != nil || cfg.ID == "" {
		t.Fatalf("CreateTaskPushNotificationConfig: %+v, %v", cfg, err)
	}
	if got, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: task.ID, ID: cfg.ID}); err != nil || got.URL != cfg.URL {
		t.Fatalf("GetTaskPushNotificationConfig: %+v, %v", got, err)
	}
	if got, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: task.ID}); err != nil || len(got.Configs) != 1 {
		t.Fatalf("ListTaskPushNotificationConfigs: %+v, %v", got, err)
	}
	if err := c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: task.ID, ID: cfg.ID}); err != nil {
		t.Fatalf("DeleteTaskPushNotificationConfig: %v", err)
	}

	// A live task: cancel it while a subscription watches.
	slow, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("slow")),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil || slow.Task == nil {
		t.Fatalf("SendMessage returnImmediately: %+v, %v", slow, err)
	}
	frames := make(chan a2a.TaskState, 16)
	go func() {
		defer close(frames)
		for f, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: slow.Task.ID}) {
			if err != nil {
				return
			}
			if f.Task != nil {
				frames <- f.Task.Status.State
			}
			if f.StatusUpdate != nil {
				frames <- f.StatusUpdate.Status.State
			}
		}
	}()
	if first := <-frames; first.Terminal() {
		t.Fatalf("subscription began with %v", first)
	}
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: slow.Task.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %+v, %v", canceled, err)
	}
	var last a2a.TaskState
	for s := range frames {
		last = s
	}
	if last != a2a.TaskStateCanceled {
		t.Errorf("subscription ended on %v, want CANCELED", last)
	}

	if _, err := c.GetExtendedAgentCard(ctx); !errors.Is(err, a2a.ErrExtendedAgentCardNotConfigured) {
		t.Errorf("GetExtendedAgentCard: %v", err)
	}
	for _, b := range rec.got {
		if b != a2a.BindingGRPC {
			t.Fatalf("a call went over %s: %v", b, rec.got)
		}
	}
}

func TestErrorsOverGRPC(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()
	_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "missing"})
	var ce *a2aclient.CallError
	if !errors.Is(err, a2a.ErrTaskNotFound) || !errors.As(err, &ce) || ce.Method != a2a.MethodGetTask {
		t.Fatalf("GetTask of a missing task: %v", err)
	}
	done, err := c.SendText(ctx, "done", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.Task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("CancelTask of a completed task: %v", err)
	}
	// A streaming call refused before its first frame fails as a call.
	for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: done.Task.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("SubscribeToTask of a completed task: %v", err)
		}
		break
	}
}

func TestUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	card := &a2a.AgentCard{Name: "gone", SupportedInterfaces: []a2a.AgentInterface{{URL: addr, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion}}}
	c, err := a2aclient.New(card, &a2aclient.Options{TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); !errors.Is(err, a2aclient.ErrUnreachable) {
		t.Fatalf("GetTask on a closed port: %v", err)
	}
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// The connect guard of a2aclient reaches the gRPC transport: its dialer
// refuses an address the policy does not allow before connecting, and a
// bare host:port interface is checked by its host when the client is
// built. (seed 000, novaos_client_sdk.client.Client(guard_connect_ips):
// "Resolve the host again at connect time, refuse a private/loopback/
// link-local/reserved address … For gRPC it pins the channel to the
// checked address".)
func TestConnectGuardOverGRPC(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: raw}
	g := grpc.NewServer()
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	addr := lis.Addr().String()
	iface := a2a.AgentInterface{URL: addr, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion}

	tests := []struct {
		name  string
		guard *netguard.Policy
	}{
		{name: "refused at dial", guard: &netguard.Policy{}},
		{name: "private allowed is not loopback", guard: &netguard.Policy{AllowPrivate: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The factory itself, so that only the dialer stands between
			// the call and the listener.
			tr, err := grpcclient.Factory(nil)(&a2aclient.TransportConfig{Interface: iface, ConnectGuard: tt.guard})
			if err != nil {
				t.Fatal(err)
			}
			if cl, ok := tr.(io.Closer); ok {
				defer cl.Close()
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			call := &a2aclient.Call{Method: a2a.MethodGetTask, Params: &a2a.GetTaskRequest{ID: "x"}, Header: http.Header{}}
			if err := tr.Unary(ctx, call, &a2a.Task{}); err == nil || !strings.Contains(err.Error(), "loopback") {
				t.Fatalf("call = %v, want a refusal naming the loopback class", err)
			}
			if n := lis.n.Load(); n != 0 {
				t.Errorf("the server accepted %d connections", n)
			}
		})
	}

	card := &a2a.AgentCard{Name: "g", SupportedInterfaces: []a2a.AgentInterface{iface}}
	_, err = a2aclient.New(card, &a2aclient.Options{ConnectGuard: &netguard.Policy{}, TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
	if !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("New with a loopback host:port = %v, want netguard.ErrRefused", err)
	}
	c, err := a2aclient.New(card, &a2aclient.Options{ConnectGuard: &netguard.Policy{AllowLoopback: true}, TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// Allowed: the call reaches the server (which serves no A2A service).
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); errors.Is(err, a2aclient.ErrUnreachable) {
		t.Errorf("GetTask with loopback allowed: %v", err)
	}
}
