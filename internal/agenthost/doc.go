// Package agenthost serves the platform's hosted agents over every A2A binding.
//
// A Host is built from the server's stores (store.Stores), what it takes
// from the server (Deps: the base URL, the Guard, TLS, the token issuer,
// the other services' interceptors) and its Options. It hosts the built-in
// echo, ask and tck agents and the Options' own at /agents/{name}: JSON-RPC
// and HTTP+JSON at that URL, gRPC on its own listener (Options.GRPCAddr)
// with the agent's name as the request's tenant, each card naming the
// interfaces in the operator's order of preference and, with a card key,
// signed.
//
// The agents share one database, but an A2A task belongs to the agent
// that ran it: the agent's name partitions every scope (partition.go), so
// a task id from one agent is "not found" through another's endpoint.
//
// Push-config secrets (webhook credentials and tokens) are sealed on
// their way into the store by the same partition layer (pushkey.go):
// AES-256-GCM under the key in Options.PushKeyFile (default
// Deps.DataDir/push.key), bound to tenant, task, config id, URL and field.
// Reads through the A2A methods get the token, never the credentials;
// delivery (a2apush, over the stores' outbox) opens them whole and dials
// through the push URL policy, checked again at connect time.
//
// Crash recovery (recover.go): Start settles, before the server serves,
// the tasks a dead process left running, and Run sweeps again every lease
// expiry, so a replica that dies on a shared PostgreSQL is cleaned up by
// the others. Replicas hear of each other's task writes through the
// stores' feed, so a stream or CancelTask may land on any replica.
//
// The Host shows the server the face every platform service has: Routes,
// Interceptors, Run, plus Start and Shutdown.
package agenthost
