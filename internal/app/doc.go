// Package app is the embeddable NovaOS server: every platform service behind one listener.
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
// New opens the database Options select (SQLite in DataDir by default,
// PostgreSQL for a postgres:// URL) and takes its stores as one
// store.Stores value; Options.Stores gives the server stores of the
// caller's instead (the benchmark runs on tasks kept in memory). The
// server owns a database it opened and closes it in Shutdown.
//
// # Services
//
// Start listens, then mounts the platform services from one list
// (services.go). Every service has the same face:
//
//   - a constructor in its own package taking the server's *store.Stores,
//     its Deps (what it takes from the server and from other services, as
//     small interfaces) and its own Options;
//   - Routes: its HTTP routes, mounted on one mux behind the Guard, which
//     applies the server-wide limits and Host and Origin rules;
//   - Interceptors: what it adds to every call to a hosted agent, on every
//     binding;
//   - Run: its background work until the server stops;
//   - optionally Start, run before the server serves (settle what a crash
//     left behind), and Shutdown, run as it stops (drain in-flight work).
//
// The list today: the token issuer (internal/auth), the memory service
// (internal/memorysvc), the governance gate (internal/gatesvc), the hosted
// agents (internal/agenthost), the agent registry (internal/registrysvc),
// and the server's own health check, index and card key set. A service
// whose store is nil is not served. A new service is its package, built on
// internal/httpapi (problems, callers, bodies, paging), and one line in
// that list; its options become one field of Options.
package app
