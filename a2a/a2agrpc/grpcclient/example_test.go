package grpcclient_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
)

// A client that prefers gRPC among the interfaces of an agent's card.
func Example() {
	// An agent served over gRPC on loopback.
	h := a2asrv.NewHandler(&a2a.AgentCard{Name: "echo"}, a2asrv.ExecutorFunc(agent), nil)
	defer h.Shutdown(context.Background())
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	g := grpc.NewServer()
	grpcsrv.New(h).Register(g)
	go g.Serve(lis)
	defer g.Stop()

	card := &a2a.AgentCard{Name: "echo", SupportedInterfaces: []a2a.AgentInterface{
		{URL: lis.Addr().String(), ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion},
	}}
	c, err := a2aclient.New(card, &a2aclient.Options{
		Transports:         []string{a2a.BindingGRPC},
		TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)},
	})
	if err != nil {
		panic(err)
	}
	resp, err := c.SendText(context.Background(), "hello", "", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Binding(), resp.Task.Status.State, a2a.PartsText(resp.Task.Artifacts[0].Parts))
	// Output: GRPC TASK_STATE_COMPLETED echo: hello
}
