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
// Listing and search read the records through the Store in name order.
// Capability queries match against a snapshot of every record and its
// capability index, rebuilt when the Store's version (a change counter
// kept in the database) moves, so replicas sharing a database agree: each
// sees the others' writes at its next query. An update reads the record
// and then replaces it: of two concurrent updates of one agent, the last
// one wins.
package registry
