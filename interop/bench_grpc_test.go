package interop

import (
	"context"
	"net"
	"testing"

	goa2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	goa2asrv "github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
)

// BenchmarkGRPCSendMessage measures SendMessage over gRPC against our
// gRPC binding and a2a-go v2.3.1's, side by side in one run: both serve
// the suite's echo agent with in-memory stores on loopback, and both are
// called by the same generated client (the wire is the same proto) from
// 32 concurrent callers on one connection.
//
//	GOLANG_PROTOBUF_REGISTRATION_CONFLICT=ignore go test -run '^$' -bench GRPCSendMessage -count 5
func BenchmarkGRPCSendMessage(b *testing.B) {
	servers := []struct {
		name     string
		register func(*grpc.Server)
	}{
		{"novaos", func(g *grpc.Server) {
			h := a2asrv.NewHandler(&a2a.AgentCard{Name: "echo"}, echoExecutor{}, nil)
			b.Cleanup(func() { h.Shutdown(context.Background()) })
			grpcsrv.New(h).Register(g)
		}},
		{"a2a-go", func(g *grpc.Server) {
			goa2agrpc.NewHandler(goa2asrv.NewHandler(goPeerExecutor{})).RegisterWith(g)
		}},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			g := grpc.NewServer()
			s.register(g)
			go g.Serve(lis)
			defer g.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			c := a2apb.NewA2AServiceClient(conn)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "a2a-version", a2a.ProtocolVersion)
			b.SetParallelism(16) // 32 callers on 2 CPUs, as bench a2a's default
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{
						MessageId: a2a.NewID(), Role: a2apb.Role_ROLE_USER,
						Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hello from the benchmark"}}},
					}})
					if err != nil {
						b.Error(err)
						return
					}
					if resp.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
						b.Errorf("answer %v", resp)
						return
					}
				}
			})
		})
	}
}
