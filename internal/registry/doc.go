// Package registry is the platform's agent registry service: it validates
// agent records (package novaos.dev/novaos/registry has the record, rules
// and matching), keeps them in a Store (MemoryStore here; store/sqlite and
// store/postgres for durable ones) and serves the HTTP API under
// /api/v1/agents with RFC 9457 problem+json errors.
//
//	svc := registry.New(store, &registry.Options{Policy: &pub.Policy{AllowedHostSuffixes: []string{".example.com"}}})
//	mux.Handle(pub.APIPath, svc.Handler())
//	mux.Handle(pub.APIPath+"/", svc.Handler())
//	svc.Put(ctx, &pub.Agent{Name: "echo", URL: "http://127.0.0.1:8080/agents/echo"}) // trusted, no policy
//
// Listing, search and capability queries read the records through the
// Store in name order; the service keeps no state of its own, so replicas
// sharing a database agree. An update reads the record and then replaces
// it: of two concurrent updates of one agent, the last one wins.
package registry
