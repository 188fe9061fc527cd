package adapter_test

import (
	"context"
	"errors"
	"log"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

// An adapter receives its agent's events over the gateway, stores each
// durably, and only then acknowledges it.
func ExampleNewGatewaySource() {
	ctx := context.Background()
	key, _ := dpop.GenerateKey() // in practice loaded: its thumbprint is bound to the token
	src, err := adapter.NewGatewaySource("https://platform.example.com",
		delivery.GatewayInfo{URL: delivery.GatewayPath}, // from the platform's discovery document
		&adapter.GatewayOptions{AgentID: "agent-1", Consumer: "main", Credentials: adapter.Credentials{APIToken: secret.New("the-api-token"), DPoP: key}})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	for {
		events, err := src.Receive(ctx)
		var reason adapter.CloseReason
		if errors.As(err, &reason) {
			log.Printf("the platform closed the session for good: %v", reason)
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		for _, ev := range events {
			// Check the event's invocation token and store it durably here.
			if err := src.Ack(ctx, ev.Seq); err != nil {
				log.Fatal(err)
			}
		}
	}
}
