// Package app is the embeddable NovaOS server: one HTTP listener hosting
// the built-in agents over A2A (each at /agents/{name}, with its card at
// /agents/{name}/.well-known/agent-card.json) and /healthz, on a SQLite file
// by default or PostgreSQL when a database URL says so.
//
// Everything `novaos serve` runs is started through this package, so tests
// start the real server in-process:
//
//	srv, err := app.New(ctx, &app.Options{Addr: "127.0.0.1:0", DataDir: dir})
//	if err != nil { ... }
//	if err := srv.Start(ctx); err != nil { ... }
//	defer srv.Shutdown(context.Background())
//	resp, err := http.Get(srv.URL() + "/healthz")
//
// Start mounts the server's services from one list (server.go, services):
// each is a name, its mux patterns and a handler; the hosted agents, the
// card key's JWKS, the agent registry and its seed 000 Agent-DNS shape,
// /healthz and the index are entries. A new platform service builds its
// handler on internal/httpapi's API (problems, callers, bodies, paging) and
// adds one entry; the Guard in front of the mux applies the server-wide
// limits and Host and Origin rules to all of them.
//
// Options are read once by New; the server owns the database it opens and
// closes it in Shutdown. A TaskStore given in Options is used instead of
// the database (the benchmark runs that way, on the in-memory store).
//
// The hosted agents share one database, but each sees only its own tasks:
// the agent's name partitions every scope (see partition.go), so a task id
// from one agent is "not found" through another agent's endpoint and
// ListTasks lists only that agent's tasks.
//
// Push-config secrets (webhook credentials and tokens) are sealed on their
// way into the store by the same partition layer (pushkey.go), so the
// stores stay plain: AES-256-GCM under the key in Options.PushKeyFile
// (default DataDir/push.key), bound to tenant, task, config id, URL and
// field. Reads through the A2A methods get the token, never the
// credentials; agentPushConfigs.Open is the read for webhook delivery,
// which must dial through a netguard.Policy Dialer (the policy the
// handlers check URLs with, pushURLPolicy) so that a name resolving to a
// forbidden address is refused at connect time.
package app
