// Package conventions builds agent cards that declare the four metadata
// extensions.
//
// A card built here declares the four metadata extensions together (cost-v1,
// confidence-v1, worldstate-delta-v1, tool-call-v1), a JSON-RPC interface at
// protocol version 1.0, the provider block, and the two security schemes
// callers authenticate with: "apiKey" (an X-API-Key header) and "bearer"
// (HTTP Authorization: Bearer). It is the card the Python conventions layer
// these four extensions come from builds, so agents built on either declare
// the same.
//
//	card, err := conventions.Card(conventions.Agent{
//		Name: "triage", Description: "Files bugs", Version: "1.0.0",
//		URL:    "https://agents.example.com/triage",
//		Skills: []a2a.AgentSkill{{ID: "file_bug", Name: "File bug", Description: "Files a bug", Tags: []string{"bugs"}}},
//	}, &conventions.Options{Bearer: true})
//
// An agent built with package agent takes the same pieces through its
// Options, so the card it serves declares what it emits:
//
//	agent.New("triage", "1.0.0", &agent.Options{
//		Provider:             conventions.Provider(),
//		Extensions:           conventions.Declarations(nil),
//		SecuritySchemes:      conventions.SecuritySchemes("", true),
//		SecurityRequirements: conventions.SecurityRequirements(true),
//	})
//
// The card only declares the schemes: checking an X-API-Key or a bearer
// token is the server's job (a2asrv.Options.Identify). The security
// requirements are alternatives: either scheme alone is enough.
package conventions
