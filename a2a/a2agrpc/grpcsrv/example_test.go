package grpcsrv_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

// An agent served over gRPC on its own listener, called with the generated
// client.
func Example() {
	h := a2asrv.NewHandler(card("echo"), a2asrv.ExecutorFunc(echo), nil)
	defer h.Shutdown(context.Background())
	g := grpc.NewServer(grpc.MaxRecvMsgSize(a2asrv.DefaultMaxBodyBytes))
	grpcsrv.New(h).Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go g.Serve(lis)
	defer g.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := a2apb.NewA2AServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "a2a-version", a2a.ProtocolVersion)
	req, _ := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("hello"))})
	resp, err := client.SendMessage(ctx, req)
	if err != nil {
		panic(err)
	}
	task, _ := a2agrpc.TaskFromPB(resp.GetTask())
	fmt.Println(task.Status.State, task.Status.Message.Text())
	// Output: TASK_STATE_COMPLETED echo: hello
}
