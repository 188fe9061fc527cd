package conventions_test

import (
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/conventions"
	"novaos.dev/novaos/ext/toolcall"
)

func ExampleCard() {
	card, err := conventions.Card(conventions.Agent{
		Name: "triage", Description: "Files bugs", Version: "1.0.0",
		URL:    "https://agents.example.com/triage",
		Skills: []a2a.AgentSkill{{ID: "file_bug", Name: "File bug", Description: "Files a bug", Tags: []string{"bugs"}}},
	}, &conventions.Options{Bearer: true, Extensions: []string{toolcall.URI}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.SupportedInterfaces[0].ProtocolBinding, card.SupportedInterfaces[0].ProtocolVersion)
	fmt.Println(card.Provider.Organization)
	for _, e := range card.Capabilities.Extensions {
		fmt.Println(e.URI)
	}
	for _, r := range card.SecurityRequirements {
		for name := range r.Schemes {
			fmt.Println("either", name)
		}
	}
	fmt.Println(card.SecuritySchemes["apiKey"].APIKey.Name)
	// Output:
	// JSONRPC 1.0
	// NovaOS
	// https://proto-labs.ai/a2a/ext/tool-call-v1
	// either apiKey
	// either bearer
	// X-API-Key
}
