// Package upstream serves the tools of tenants' upstream MCP servers.
//
// A tenant's admin registers a server (tools.UpstreamServer) through the
// admin API at tools.ServersPath; its tools then appear behind the tool
// gateway as novaos.<server>.<tool>, with the server's input and output
// schemas and annotations. The Provider implements toolgw.Provider over
// the registrations in a tools.ServerStore:
//
//	p, err := upstream.New(st.ToolServers, upstream.Deps{Sealer: sealer, Auth: auth},
//		&upstream.Options{AllowedCommands: []string{"/usr/local/bin/mcp-files"}})
//	for _, r := range p.Routes() { mux.Handle(r.Pattern, r.Handler) }
//	go p.Run(ctx) // closes idle sessions
//	defer p.Close()
//
// How it talks to a server:
//
//   - http servers are reached with the MCP Go SDK's Streamable HTTP
//     client, which speaks both the session era (2025-11-25 and before)
//     and the stateless one (2026-07-28), whichever the server does. Their
//     URLs pass the platform's SSRF guard when registered and again when
//     dialled (loopback and private addresses only with
//     Options.AllowPrivate); redirects are not followed; answers are
//     bounded.
//   - stdio servers run one of Options.AllowedCommands (none: stdio is
//     off), with Options.StdioEnv and the registration's variables as
//     their whole environment, one process per server, at most
//     Options.MaxStdioProcesses at once: an idle one is stopped to make
//     room, and a call finding every process busy fails.
//   - A registration's header and environment values are sealed at rest
//     (Deps.Sealer, purpose "novaos tool-server-credentials v1", bound
//     to the tenant and name), sent to that server only, and never
//     answered, logged or shown. The caller's own token never leaves the
//     gateway.
//   - Sessions are kept per server and reused; one idle for
//     Options.IdleTimeout is closed, one that broke is replaced. A call is
//     sent once: only a session the server no longer knows (HTTP 404) is
//     retried, as the server did not run the call.
//   - Each call is bounded by the registration's timeout (30 s by
//     default, 120 s at most): past it the call fails with
//     tools.ReasonTimeout. A server that fails or times out
//     Options.BreakerThreshold times in a row has its circuit opened for
//     Options.BreakerReset (package resilience): calls then fail at once
//     with tools.ReasonUnavailable, without dialling, until a probe
//     succeeds.
//   - A server's tool list is cached for Options.ListTTL. The
//     registration itself is read from the store for every call, once,
//     when the gateway looks the tool up (Find hands it to Call as the
//     tool's Source; a call made more than Options.LookupReuse later reads
//     it again), so a changed, disabled or removed registration takes
//     effect at once (and drops the old sessions and list), on every
//     replica.
//   - A tool whose name is not a gateway tool name once prefixed
//     (tools.ValidName), or whose schema is too large, is left out and
//     logged. An upstream's readOnlyHint and idempotentHint read as false
//     when absent, as MCP defines them.
//   - A JSON-RPC error from the server is a failed result (IsError), with
//     tools.ReasonInvalidArguments for invalid params; a server down, a
//     broken exchange or an open circuit is a *toolgw.Error with
//     tools.ReasonUnavailable.
package upstream
