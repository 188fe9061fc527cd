// Command caller calls an A2A agent over every binding its card offers.
// The bindings are JSON-RPC, HTTP+JSON and gRPC: it fetches the card once,
// then makes one client per interface and sends the same text through each.
//
//	go run ./examples/caller http://127.0.0.1:9000 Ada
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: caller AGENT_URL TEXT")
	}
	agentURL, text := os.Args[1], os.Args[2]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The card says where the agent answers, over which bindings, in its
	// order of preference.
	card, err := a2aclient.NewResolver(nil).Resolve(ctx, agentURL)
	if err != nil {
		log.Fatal(err)
	}
	for _, iface := range card.SupportedInterfaces {
		c, err := a2aclient.New(card, &a2aclient.Options{
			// Only this interface's binding, so each loop calls another.
			Transports: []string{iface.ProtocolBinding},
			// JSON-RPC and HTTP+JSON are built in; gRPC plugs in here.
			TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)},
		})
		if err != nil {
			log.Fatal(err)
		}
		resp, err := c.SendMessage(ctx, a2aclient.TextRequest(text, "", ""))
		if err != nil {
			log.Fatalf("%s: %v", iface.ProtocolBinding, err)
		}
		// An agent answers with a task (its output in artifacts) or, for
		// a quick reply, with a message.
		switch {
		case resp.Task != nil:
			var out string
			for _, art := range resp.Task.Artifacts {
				out += a2a.PartsText(art.Parts)
			}
			fmt.Printf("%-9s task %s %s: %s\n", iface.ProtocolBinding, resp.Task.ID, resp.Task.Status.State, out)
		case resp.Message != nil:
			fmt.Printf("%-9s message: %s\n", iface.ProtocolBinding, a2a.PartsText(resp.Message.Parts))
		}
	}
}
