package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

// GRPCSendMessage is SendMessage over the gRPC binding to the agent a
// request's tenant names, with a fresh message id per call; a call fails
// unless it answers a task or a message. conn is shared by every client,
// as HTTP/2 multiplexes their calls.
func GRPCSendMessage(conn *grpc.ClientConn, tenant string) Op {
	c := a2apb.NewA2AServiceClient(conn)
	return Op{Name: ScenarioSend, Do: func(ctx context.Context, _ int) error {
		resp, err := c.SendMessage(grpcCtx(ctx), grpcMessage(tenant))
		if err != nil {
			return a2agrpc.Error(err)
		}
		if resp.GetTask() == nil && resp.GetMessage() == nil {
			return errors.New("result holds neither task nor message")
		}
		return nil
	}}
}

// GRPCSendStreamingMessage is SendStreamingMessage over the gRPC binding,
// read to the end; it fails a stream that ends in an error or before a
// final frame.
func GRPCSendStreamingMessage(conn *grpc.ClientConn, tenant string) Op {
	c := a2apb.NewA2AServiceClient(conn)
	return Op{Name: ScenarioStream, Do: func(ctx context.Context, _ int) error {
		stream, err := c.SendStreamingMessage(grpcCtx(ctx), grpcMessage(tenant))
		if err != nil {
			return a2agrpc.Error(err)
		}
		var last *a2apb.StreamResponse
		for {
			m, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return a2agrpc.Error(err)
			}
			last = m
		}
		if last == nil {
			return errors.New("stream carried no frame")
		}
		r, err := a2agrpc.StreamResponseFromPB(last)
		if err != nil {
			return fmt.Errorf("decode frame: %w", err)
		}
		if !r.Final() {
			return errors.New("stream ended before a final frame")
		}
		return nil
	}}
}

func grpcCtx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "a2a-version", a2a.ProtocolVersion)
}

// grpcMessage is the scenarios' request: the same text as the HTTP ones.
func grpcMessage(tenant string) *a2apb.SendMessageRequest {
	return &a2apb.SendMessageRequest{Tenant: tenant, Message: &a2apb.Message{
		MessageId: a2a.NewID(), Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hello from novaos bench"}}},
	}}
}
