// Command greeter is a one-skill A2A agent written with the NovaOS SDK.
// It serves JSON-RPC and HTTP+JSON on --addr, gRPC too with --grpc-addr,
// and keeps its tasks in memory.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"

	"google.golang.org/grpc"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	grpcAddr := flag.String("grpc-addr", "", "address to serve gRPC on too (empty: no gRPC)")
	flag.Parse()

	a := agent.New("greeter", "1.0.0", &agent.Options{Description: "Says hello"})
	a.MustRegister(agent.Skill{
		ID:          "greet",
		Description: "Greets the caller by name",
		Handler: func(c *agent.Context) (agent.Result, error) {
			// c is a context.Context, cancelled by CancelTask, that also
			// carries the task's ids, history and a task updater.
			return agent.Result{Output: "Hello, " + c.Input() + "!"}, nil
		},
	})
	url := "http://" + *addr
	// The card lists JSON-RPC and HTTP+JSON at url; a gRPC listener adds
	// its interface, so clients learn of it from the card.
	card := a.CardAt(url)
	if *grpcAddr != "" {
		card.SupportedInterfaces = append(card.SupportedInterfaces, a2a.AgentInterface{
			URL: "http://" + *grpcAddr, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion,
		})
	}
	// No TaskStore: tasks in memory; a2asrv.Options takes a durable one.
	h := a2asrv.NewHandler(card, a, &a2asrv.Options{NewTaskID: a.NewTaskID})
	if *grpcAddr != "" {
		ln, err := net.Listen("tcp", *grpcAddr)
		if err != nil {
			log.Fatal(err)
		}
		// The gRPC binding serves the same handler: the same tasks.
		g := grpc.NewServer()
		grpcsrv.New(h).Register(g)
		go func() { log.Fatal(g.Serve(ln)) }()
	}
	log.Printf("greeter is serving on %s", url)
	log.Fatal(http.ListenAndServe(*addr, h))
}
