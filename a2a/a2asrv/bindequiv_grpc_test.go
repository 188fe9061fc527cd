package a2asrv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

// grpcEquivalent is a JSON-RPC golden step as a gRPC call: the metadata
// and the typed request, run by do. ok is false for what gRPC cannot
// express (an envelope or body the JSON reader refuses, a notification).
type grpcStep struct {
	md     metadata.MD
	method string
	params json.RawMessage
}

func grpcEquivalent(raw []byte, opts map[string]string) (grpcStep, bool) {
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	if lines[0] != "POST /" {
		return grpcStep{}, false
	}
	req, err := a2a.DecodeRequest(bytes.TrimSpace(body))
	if err != nil || req.Notification || len(req.ID) > 256 {
		return grpcStep{}, false
	}
	if limit, err := strconv.Atoi(opts["max-body"]); err == nil && len(body) > limit {
		// The body limit is the gRPC server's message limit there, a
		// RESOURCE_EXHAUSTED of gRPC's own rather than an A2A error.
		return grpcStep{}, false
	}
	md := metadata.MD{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.EqualFold(k, "Content-Type") || strings.EqualFold(k, "Accept") {
			continue
		}
		md.Append(strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v))
	}
	// A body refused for its Content-Type has no gRPC equivalent.
	ct := ""
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Content-Type") {
			ct = strings.TrimSpace(v)
		}
	}
	if !strings.HasPrefix(ct, "application/json") && !strings.Contains(ct, "+json") {
		return grpcStep{}, false
	}
	return grpcStep{md: md, method: req.Method, params: req.Params}, true
}

// decodeAs reads params as a T the way the JSON-RPC binding does; false
// when it refuses them (gRPC could not carry such params).
func decodeAs[T any](params json.RawMessage) (*T, bool) {
	v := new(T)
	if a2a.DecodeParams(params, v) != nil {
		return nil, false
	}
	return v, true
}

// startGRPC serves a scripted handler over gRPC on an in-memory listener.
func startGRPC(t *testing.T, opts map[string]string) a2apb.A2AServiceClient {
	return serveGRPC(t, newScriptedHandler(t, opts))
}

// serveGRPC serves h over gRPC on an in-memory listener until the test
// ends.
func serveGRPC(t *testing.T, h *a2asrv.Handler) a2apb.A2AServiceClient {
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	grpcsrv.New(h).Register(g)
	go g.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2e9)
		defer cancel()
		h.Shutdown(ctx)
		g.Stop()
	})
	return a2apb.NewA2AServiceClient(conn)
}

// runGRPC makes the call and returns its outcome in the JSON model.
func runGRPC(t *testing.T, c a2apb.A2AServiceClient, st grpcStep) (outcome, bool) {
	ctx := metadata.NewOutgoingContext(context.Background(), st.md)
	result := func(v any, err error) (outcome, bool) {
		if err != nil {
			return outcome{Code: a2agrpc.Error(err).Code}, true
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return outcome{Result: decodeAny(t, b)}, true
	}
	stream := func(s grpc.ServerStreamingClient[a2apb.StreamResponse], err error) (outcome, bool) {
		var o outcome
		for err == nil {
			var m *a2apb.StreamResponse
			if m, err = s.Recv(); err == nil {
				r, cerr := a2agrpc.StreamResponseFromPB(m)
				if cerr != nil {
					t.Fatalf("stream frame: %v", cerr)
				}
				b, _ := json.Marshal(r)
				o.Frames = append(o.Frames, outcome{Result: decodeAny(t, b)})
			}
		}
		if !errors.Is(err, io.EOF) {
			e := outcome{Code: a2agrpc.Error(err).Code}
			if len(o.Frames) == 0 {
				return e, true
			}
			o.Frames = append(o.Frames, e)
		}
		return o, true
	}
	switch st.method {
	case a2a.MethodSendMessage, a2a.MethodSendStreamingMessage:
		r, ok := decodeAs[a2a.SendMessageRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		in, err := a2agrpc.SendMessageRequestToPB(r)
		if err != nil {
			return outcome{}, false
		}
		if st.method == a2a.MethodSendStreamingMessage {
			return stream(c.SendStreamingMessage(ctx, in))
		}
		out, err := c.SendMessage(ctx, in)
		if err != nil {
			return result(nil, err)
		}
		resp, err := a2agrpc.SendMessageResponseFromPB(out)
		return result(resp, err)
	case a2a.MethodGetTask:
		r, ok := decodeAs[a2a.GetTaskRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		out, err := c.GetTask(ctx, a2agrpc.GetTaskRequestToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.TaskFromPB(out))
	case a2a.MethodListTasks:
		r, ok := decodeAs[a2a.ListTasksRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		in, err := a2agrpc.ListTasksRequestToPB(r)
		if err != nil {
			return outcome{}, false // a timestamp the model reads but the proto cannot hold
		}
		out, err := c.ListTasks(ctx, in)
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.ListTasksResponseFromPB(out))
	case a2a.MethodCancelTask:
		r, ok := decodeAs[a2a.CancelTaskRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		in, err := a2agrpc.CancelTaskRequestToPB(r)
		if err != nil {
			return outcome{}, false
		}
		out, err := c.CancelTask(ctx, in)
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.TaskFromPB(out))
	case a2a.MethodSubscribeToTask:
		r, ok := decodeAs[a2a.SubscribeToTaskRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		return stream(c.SubscribeToTask(ctx, a2agrpc.SubscribeToTaskRequestToPB(r)))
	case a2a.MethodCreateTaskPushNotificationConfig:
		r, ok := decodeAs[a2a.TaskPushNotificationConfig](st.params)
		if !ok {
			return outcome{}, false
		}
		out, err := c.CreateTaskPushNotificationConfig(ctx, a2agrpc.TaskPushNotificationConfigToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.TaskPushNotificationConfigFromPB(out), nil)
	case a2a.MethodGetTaskPushNotificationConfig:
		r, ok := decodeAs[a2a.GetTaskPushNotificationConfigRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		out, err := c.GetTaskPushNotificationConfig(ctx, a2agrpc.GetTaskPushNotificationConfigRequestToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.TaskPushNotificationConfigFromPB(out), nil)
	case a2a.MethodListTaskPushNotificationConfigs:
		r, ok := decodeAs[a2a.ListTaskPushNotificationConfigsRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		out, err := c.ListTaskPushNotificationConfigs(ctx, a2agrpc.ListTaskPushNotificationConfigsRequestToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.ListTaskPushNotificationConfigsResponseFromPB(out), nil)
	case a2a.MethodDeleteTaskPushNotificationConfig:
		r, ok := decodeAs[a2a.DeleteTaskPushNotificationConfigRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		_, err := c.DeleteTaskPushNotificationConfig(ctx, a2agrpc.DeleteTaskPushNotificationConfigRequestToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return outcome{Result: nil}, true
	case a2a.MethodGetExtendedAgentCard:
		r, ok := decodeAs[a2a.GetExtendedAgentCardRequest](st.params)
		if !ok {
			return outcome{}, false
		}
		out, err := c.GetExtendedAgentCard(ctx, a2agrpc.GetExtendedAgentCardRequestToPB(r))
		if err != nil {
			return result(nil, err)
		}
		return result(a2agrpc.AgentCardFromPB(out))
	}
	return outcome{}, false
}
