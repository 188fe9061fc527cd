package grpcsrv_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

func echo(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	msg := &a2a.Message{MessageID: u.TaskID() + "-done", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("echo: " + req.Message.Text())}}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, msg, nil)
}

func card(name string) *a2a.AgentCard {
	return &a2a.AgentCard{Name: name, Description: "test", Version: "1",
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true),
			Extensions: []a2a.AgentExtension{{URI: "https://example.com/ext/trace/v1"}}},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
}

// serve starts s on an in-memory listener and returns a client of it.
func serve(t *testing.T, s *grpcsrv.Server) a2apb.A2AServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	s.Register(g)
	go g.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop() })
	return a2apb.NewA2AServiceClient(conn)
}

func handler(t *testing.T, name string, opts *a2asrv.Options) *a2asrv.Handler {
	h := a2asrv.NewHandler(card(name), a2asrv.ExecutorFunc(echo), opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return h
}

func versioned(md ...string) context.Context {
	return metadata.NewOutgoingContext(context.Background(), metadata.Pairs(append([]string{"a2a-version", a2a.ProtocolVersion}, md...)...))
}

func send(t *testing.T, c a2apb.A2AServiceClient, tenant, text string) *a2apb.Task {
	t.Helper()
	req, err := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Tenant: tenant, Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.SendMessage(versioned(), req)
	if err != nil {
		t.Fatalf("SendMessage (tenant %q): %v", tenant, err)
	}
	return resp.GetTask()
}

func TestMuxRoutesByTenant(t *testing.T) {
	c := serve(t, grpcsrv.NewMux(map[string]*a2asrv.Handler{"a": handler(t, "a", nil), "b": handler(t, "b", nil)}))
	task := send(t, c, "a", "hello")
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("task %v", task)
	}
	inTenant := send(t, c, "a/acme", "in acme")
	tests := []struct {
		name, tenant, id string
		want             codes.Code
	}{
		{"own agent", "a", task.GetId(), codes.OK},
		{"other agent", "b", task.GetId(), codes.NotFound},
		{"other tenant of the agent", "a/acme", task.GetId(), codes.NotFound},
		{"tenant of the agent", "a/acme", inTenant.GetId(), codes.OK},
		{"no agent", "", task.GetId(), codes.InvalidArgument},
		{"unknown agent", "zz", task.GetId(), codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.GetTask(versioned(), &a2apb.GetTaskRequest{Tenant: tt.tenant, Id: tt.id})
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %v (%v), want %v", got, err, tt.want)
			}
			if tt.want == codes.InvalidArgument {
				if e := a2agrpc.Error(err); e.Code != a2a.CodeInvalidParams || e.Metadata["field"] != "tenant" {
					t.Errorf("error %+v, want -32602 naming the tenant", e)
				}
			}
		})
	}
}

// Metadata are the call's service parameters: the version, the extensions
// (echoed in the response header) and what Identify reads.
func TestMetadataAreServiceParameters(t *testing.T) {
	var seen string
	h := handler(t, "a", &a2asrv.Options{Identify: func(_ context.Context, c *a2asrv.Call) (a2asrv.Scope, error) {
		seen = c.Header.Get("Authorization")
		return a2asrv.Scope{Owner: seen}, nil
	}})
	c := serve(t, grpcsrv.New(h))

	_, err := c.GetTask(context.Background(), &a2apb.GetTaskRequest{Id: "x"})
	if e := a2agrpc.Error(err); e.Code != a2a.CodeVersionNotSupported || status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("no a2a-version: %v", err)
	}

	var header metadata.MD
	req, _ := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("hi"))})
	_, err = c.SendMessage(versioned("authorization", "Bearer t-1", "a2a-extensions", "https://example.com/ext/trace/v1"), req, grpc.Header(&header))
	if err != nil {
		t.Fatal(err)
	}
	if seen != "Bearer t-1" {
		t.Errorf("Identify read authorization %q", seen)
	}
	if got := header.Get("a2a-extensions"); len(got) != 1 || got[0] != "https://example.com/ext/trace/v1" {
		t.Errorf("a2a-extensions response header %q", got)
	}

	stream, err := c.SendStreamingMessage(versioned("authorization", "Bearer t-1"), req)
	if err != nil {
		t.Fatal(err)
	}
	var last *a2apb.StreamResponse
	for {
		m, err := stream.Recv()
		if err != nil {
			break
		}
		last = m
	}
	if last == nil {
		t.Fatal("empty stream")
	}
	if r, err := a2agrpc.StreamResponseFromPB(last); err != nil || !r.Final() {
		t.Errorf("stream ended on %v (%v), want the completed task", last, err)
	}
}
