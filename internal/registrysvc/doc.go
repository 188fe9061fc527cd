// Package registrysvc is the platform's agent registry service and its HTTP
// API.
//
// It validates agent records (package novaos.dev/novaos/registry has the
// record, rules and matching), keeps them in a Store (MemoryStore here;
// store/sqlite and store/postgres for durable ones) and serves the HTTP API
// under /api/v1/agents with RFC 9457 problem+json errors.
//
//	svc := registrysvc.New(store, &registrysvc.Options{Policy: &registry.Policy{AllowedHostSuffixes: []string{".example.com"}}})
//	mux.Handle(registry.APIPath, svc.Handler())
//	mux.Handle(registry.APIPath+"/", svc.Handler())
//	svc.Put(ctx, &registry.Agent{Name: "echo", URL: "http://127.0.0.1:8080/agents/echo"}) // trusted, no policy
//
// Listing and search read the records through the Store in name order.
// Capability queries match against a snapshot of every record and its
// capability index, rebuilt when the Store's version (a change counter
// kept in the database) moves, so replicas sharing a database agree: each
// sees the others' writes at its next query. An update reads the record
// and then replaces it: of two concurrent updates of one agent, the last
// one wins.
//
// A record carries the agent's public recipient keys for sealed secrets
// (registry.Agent.RecipientKeys), so the registry is the key store a sender
// seals to; they are stored in the record's body like its other fields.
// The agents the platform hosts have none.
//
// The HTTP plumbing (problems, the write rule, body limits and strict
// decoding, page tokens) is internal/httpapi's API; this package adds its
// routes and problemFor, the one place its errors become statuses.
//
// # Who may write
//
// Reads (GET, HEAD, OPTIONS) are open to every peer that reaches the
// server. Writes (POST, PUT, PATCH, DELETE: every other method) follow one
// of the two rules of httpapi.AdminRule, chosen by Options.AdminToken
// (Service.WriteMode says which):
//
//   - With an admin token, a write must carry "Authorization: Bearer
//     <token>", from any peer. The token is compared in constant time;
//     without it, or with another one, the answer is 401 with
//     "WWW-Authenticate: Bearer" and a registry.ProblemUnauthorized problem.
//   - Without one, the secure default: writes are accepted only from
//     loopback peers (a RemoteAddr on 127.0.0.0/8 or ::1), so a developer
//     can register agents on their own machine and nobody else can. Other
//     peers get 403 and a registry.ProblemWriteForbidden problem saying how to
//     configure a token. Behind a reverse proxy on the same machine every
//     peer looks local: configure a token there.
//
// The token never appears in logs, errors or problem details.
//
// # The NovaOS Python SDK's Agent-DNS shape
//
// DNSHandler serves the same records read-only in the shape the NovaOS
// Python SDK's AgentDNSClient calls, under DNSPath (/api/v1/dns): GET
// /agents (a JSON array of every record), POST /agents/search (a JSON body
// of query, name, domain, tag and status) and GET /agents/{name}, each
// record with that SDK's AgentDNSRecord fields (snake_case timestamps,
// every field present). A client of that SDK takes the server's URL plus
// DNSPath as its base_url. The base is not the SDK's bare /agents because
// the server hosts A2A agents at /agents/{name}.
package registrysvc
