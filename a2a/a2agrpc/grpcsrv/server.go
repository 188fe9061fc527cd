package grpcsrv

import (
	"context"
	"net/http"
	"net/textproto"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

// A Router picks the core a request's tenant addresses (a handler's
// Core), and the tenant that core sees. An *a2a.Error it returns is the
// answer.
type Router func(tenant string) (c *a2asrv.Core, inner string, err error)

// Server implements a2apb.A2AServiceServer over the cores its Router
// picks.
type Server struct {
	a2apb.UnimplementedA2AServiceServer
	route Router
}

var _ a2apb.A2AServiceServer = (*Server)(nil)

// New serves every request with h, its tenant unchanged.
func New(h *a2asrv.Handler) *Server {
	c := h.Core()
	return &Server{route: func(tenant string) (*a2asrv.Core, string, error) { return c, tenant, nil }}
}

// NewMux serves several handlers by name: a request's tenant "name" or
// "name/tenant" reaches handlers[name], with the tenant after the first
// "/" (or none). Any other tenant is refused with -32602 (INVALID_ARGUMENT).
func NewMux(handlers map[string]*a2asrv.Handler) *Server {
	return &Server{route: func(tenant string) (*a2asrv.Core, string, error) {
		name, inner, _ := strings.Cut(tenant, "/")
		if h, ok := handlers[name]; ok {
			return h.Core(), inner, nil
		}
		e := a2a.NewError(a2a.CodeInvalidParams, "the tenant names no agent this server hosts: want an agent's name, optionally followed by /tenant")
		e.Metadata = map[string]string{"field": "tenant"}
		return nil, "", e
	}}
}

// Register registers the service on s.
func (s *Server) Register(g *grpc.Server) { a2apb.RegisterA2AServiceServer(g, s) }

// newCall is the call a request makes: its method, and its metadata as
// service parameters under canonical header names.
func newCall(ctx context.Context, method string) *a2asrv.Call {
	md, _ := metadata.FromIncomingContext(ctx)
	h := make(http.Header, len(md))
	for k, vs := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue // transport pseudo-headers, not service parameters
		}
		h[textproto.CanonicalMIMEHeaderKey(k)] = vs
	}
	return &a2asrv.Call{Method: method, Binding: a2a.BindingGRPC, Header: h}
}

// sendExtensions tells the caller which extensions the call activated.
func sendExtensions(ctx context.Context, c *a2asrv.Call) {
	if len(c.Extensions) > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs(strings.ToLower(a2a.HeaderExtensions), strings.Join(c.Extensions, ", ")))
	}
}

// badRequest is the answer to a request the model refuses.
func badRequest(err error) error {
	return a2agrpc.Status(a2a.NewError(a2a.CodeInvalidParams, "%s", strings.TrimPrefix(err.Error(), "a2agrpc: "))).Err()
}

// unary runs one unary method: convert the request, route it by tenant,
// call the core, convert the answer.
func unary[In, Req, Resp, Out any](ctx context.Context, s *Server, name string, in In,
	from func(In) (*Req, error), tenant func(*Req) *string,
	method func(*a2asrv.Core, context.Context, *a2asrv.Call, *Req) (Resp, error),
	to func(Resp) (Out, error)) (Out, error) {
	var zero Out
	req, err := from(in)
	if err != nil {
		return zero, badRequest(err)
	}
	core, inner, err := s.route(*tenant(req))
	if err != nil {
		return zero, a2agrpc.Status(err).Err()
	}
	*tenant(req) = inner
	c := newCall(ctx, name)
	resp, err := method(core, ctx, c, req)
	sendExtensions(ctx, c)
	if err != nil {
		return zero, a2agrpc.Status(err).Err()
	}
	out, err := to(resp)
	if err != nil {
		return zero, a2agrpc.Status(a2a.NewError(a2a.CodeInternalError, "could not encode the result")).Err()
	}
	return out, nil
}

// infallible adapts a conversion that cannot fail.
func infallible[A, B any](f func(A) B) func(A) (B, error) {
	return func(a A) (B, error) { return f(a), nil }
}

func (s *Server) SendMessage(ctx context.Context, in *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	return unary(ctx, s, a2a.MethodSendMessage, in, a2agrpc.SendMessageRequestFromPB,
		func(r *a2a.SendMessageRequest) *string { return &r.Tenant },
		(*a2asrv.Core).SendMessage, a2agrpc.SendMessageResponseToPB)
}

func (s *Server) GetTask(ctx context.Context, in *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	return unary(ctx, s, a2a.MethodGetTask, in, infallible(a2agrpc.GetTaskRequestFromPB),
		func(r *a2a.GetTaskRequest) *string { return &r.Tenant },
		(*a2asrv.Core).GetTask, a2agrpc.TaskToPB)
}

func (s *Server) ListTasks(ctx context.Context, in *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	return unary(ctx, s, a2a.MethodListTasks, in, a2agrpc.ListTasksRequestFromPB,
		func(r *a2a.ListTasksRequest) *string { return &r.Tenant },
		(*a2asrv.Core).ListTasks, a2agrpc.ListTasksResponseToPB)
}

func (s *Server) CancelTask(ctx context.Context, in *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	return unary(ctx, s, a2a.MethodCancelTask, in, a2agrpc.CancelTaskRequestFromPB,
		func(r *a2a.CancelTaskRequest) *string { return &r.Tenant },
		(*a2asrv.Core).CancelTask, a2agrpc.TaskToPB)
}

func (s *Server) CreateTaskPushNotificationConfig(ctx context.Context, in *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	return unary(ctx, s, a2a.MethodCreateTaskPushNotificationConfig, in, infallible(a2agrpc.TaskPushNotificationConfigFromPB),
		func(r *a2a.TaskPushNotificationConfig) *string { return &r.Tenant },
		(*a2asrv.Core).CreateTaskPushNotificationConfig, infallible(a2agrpc.TaskPushNotificationConfigToPB))
}

func (s *Server) GetTaskPushNotificationConfig(ctx context.Context, in *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	return unary(ctx, s, a2a.MethodGetTaskPushNotificationConfig, in, infallible(a2agrpc.GetTaskPushNotificationConfigRequestFromPB),
		func(r *a2a.GetTaskPushNotificationConfigRequest) *string { return &r.Tenant },
		(*a2asrv.Core).GetTaskPushNotificationConfig, infallible(a2agrpc.TaskPushNotificationConfigToPB))
}

func (s *Server) ListTaskPushNotificationConfigs(ctx context.Context, in *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	return unary(ctx, s, a2a.MethodListTaskPushNotificationConfigs, in, infallible(a2agrpc.ListTaskPushNotificationConfigsRequestFromPB),
		func(r *a2a.ListTaskPushNotificationConfigsRequest) *string { return &r.Tenant },
		(*a2asrv.Core).ListTaskPushNotificationConfigs, infallible(a2agrpc.ListTaskPushNotificationConfigsResponseToPB))
}

func (s *Server) DeleteTaskPushNotificationConfig(ctx context.Context, in *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	return unary(ctx, s, a2a.MethodDeleteTaskPushNotificationConfig, in, infallible(a2agrpc.DeleteTaskPushNotificationConfigRequestFromPB),
		func(r *a2a.DeleteTaskPushNotificationConfigRequest) *string { return &r.Tenant },
		func(core *a2asrv.Core, ctx context.Context, c *a2asrv.Call, r *a2a.DeleteTaskPushNotificationConfigRequest) (struct{}, error) {
			return struct{}{}, core.DeleteTaskPushNotificationConfig(ctx, c, r)
		}, func(struct{}) (*emptypb.Empty, error) { return &emptypb.Empty{}, nil })
}

func (s *Server) GetExtendedAgentCard(ctx context.Context, in *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	return unary(ctx, s, a2a.MethodGetExtendedAgentCard, in, infallible(a2agrpc.GetExtendedAgentCardRequestFromPB),
		func(r *a2a.GetExtendedAgentCardRequest) *string { return &r.Tenant },
		(*a2asrv.Core).GetExtendedAgentCard, a2agrpc.AgentCardToPB)
}

// sink sends each frame as one stream message; gRPC flow control and
// keep-alive take the place of SSE batching and comments.
type sink struct {
	stream grpc.ServerStreamingServer[a2apb.StreamResponse]
	call   *a2asrv.Call
	sent   bool
}

func (s *sink) Send(_ a2asrv.Version, resp *a2a.StreamResponse) error {
	if !s.sent {
		s.sent = true
		sendExtensions(s.stream.Context(), s.call)
	}
	out, err := a2agrpc.StreamResponseToPB(resp)
	if err != nil {
		return err
	}
	return s.stream.Send(out)
}

func (*sink) Flush() error     { return nil }
func (*sink) KeepAlive() error { return nil }

// streaming runs one streaming method.
func streaming[Req any](s *Server, stream grpc.ServerStreamingServer[a2apb.StreamResponse], name string, req *Req, tenant *string,
	method func(*a2asrv.Core, context.Context, *a2asrv.Call, *Req, a2asrv.StreamSink) error) error {
	ctx := stream.Context()
	core, inner, err := s.route(*tenant)
	if err != nil {
		return a2agrpc.Status(err).Err()
	}
	*tenant = inner
	c := newCall(ctx, name)
	out := &sink{stream: stream, call: c}
	err = method(core, ctx, c, req, out)
	if !out.sent {
		sendExtensions(ctx, c)
	}
	if err != nil {
		return a2agrpc.Status(err).Err()
	}
	return nil
}

func (s *Server) SendStreamingMessage(in *a2apb.SendMessageRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	req, err := a2agrpc.SendMessageRequestFromPB(in)
	if err != nil {
		return badRequest(err)
	}
	return streaming(s, stream, a2a.MethodSendStreamingMessage, req, &req.Tenant,
		(*a2asrv.Core).SendStreamingMessage)
}

func (s *Server) SubscribeToTask(in *a2apb.SubscribeToTaskRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	req := a2agrpc.SubscribeToTaskRequestFromPB(in)
	return streaming(s, stream, a2a.MethodSubscribeToTask, req, &req.Tenant,
		(*a2asrv.Core).SubscribeToTask)
}
