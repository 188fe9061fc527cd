// Package toolgw is the tool gateway: one governed door for every tool an
// agent calls.
//
// `novaos serve` serves it at tools.Path (/mcp/v1), an MCP server over
// Streamable HTTP built on the official MCP Go SDK; every path under it,
// tools.CallPath (/mcp/v1/tools/call) among them, serves the same
// methods, so the NovaOS Python SDK's bindings, which post their JSON-RPC calls
// there, reach it too. Tools come from Providers: the platform's own servers
// (novaos.memory.*, novaos.knowledge.*, …) and the MCP servers a tenant
// registers (novaos.<server>.<tool>).
//
// # A call's path
//
//  1. The bearer token is verified (a 401 names the protected-resource
//     metadata, RFC 9728, at tools.ResourceMetadataPath), X-Tenant-ID,
//     when sent, must name the token's tenant, and the body is bounded and
//     read once: a repeated key or a batch is refused.
//  2. The tool is found, and the token must grant mcp:tools:<name> (or
//     mcp:tools:<server>, or a wildcard such as mcp:tools:* or mcp:*) and
//     every scope the tool adds (memory, knowledge, connector scopes). A
//     missing one is HTTP 403 with a Bearer challenge naming it
//     (error="insufficient_scope", scope=…) and the JSON-RPC error
//     -31403 with data {code: "insufficient_scope", scope}.
//  3. The arguments are bounded and checked against the tool's input
//     schema (-32602 otherwise); nothing is called.
//  4. The tenant's policy, a CEL expression (see the policy variables in
//     policy.go), may deny the call or move it between read and write.
//  5. tools.ActionClass places the call. A read-class call runs at once.
//     A write-class call is an action for the governance gate, in one
//     gate session per run, with the run's earlier calls as evidence and a
//     floor of hold, so a person decides unless the tenant's policy
//     answers "gate" (the gate's rules alone decide). A pass runs it once
//     (claim, call, acknowledge). A hold answers -32042 with the call id,
//     and the run shows tool.write_confirmation_required; when the agent
//     pauses on it and a person approves on the gate page, the run is
//     queued again with a token bound to that call, and the call, made
//     again with the same arguments, runs once. A kill refuses.
//  6. The call is shown in its run as tool.call and tool.result, metered
//     per tenant, agent, tool, run and outcome (GET UsagePath), and
//     audited in the gate's hash chain.
//
// # Telemetry
//
// Each tools/call is a server span, "tools/call <tool>" as MCP's
// conventions name it (mcp.method.name, gen_ai.operation.name
// execute_tool, gen_ai.tool.name, gen_ai.tool.call.id, novaos.run_id,
// novaos.tenant_id, novaos.tool.class, novaos.tool.outcome, and
// error.type when it failed); never an argument or a result. Its parent
// is the span of the HTTP request, or the trace context the call's _meta
// carries when that is another trace. The span is in the context the
// provider is called with: an upstream server's request carries it as
// traceparent (and in the call's _meta), and so do notify.webhook's,
// http.fetch's and the connectors' requests; agents.call's A2A call is
// its child. novaos_tool_calls_total{outcome,class} counts the calls (ok,
// error, failed, timeout, refused, held, unavailable; read, write,
// unknown) and novaos_tool_call_duration_seconds{class} times them.
//
// # Choices
//
//   - Sessions: initialize mints an Mcp-Session-Id kept in the database,
//     so any replica serves it; it ends after SessionIdle (5 minutes)
//     unused, or at DELETE. A request without one is served statelessly,
//     as the MCP revision 2026-07-28 and the Python SDK's bindings send them.
//     A replica that served a session within a tenth of SessionIdle
//     serves it again without asking the database, so a session deleted
//     elsewhere may be served here for that long; the token is checked on
//     every request all the same.
//   - In a run, the gateway is the source of its tool events: what the
//     gateway saw is recorded, not what an agent says it called.
//   - A write's gate decision and acknowledgement are in the audit chain
//     before the call answers; the entries of results and of read-class
//     calls gather for AuditDelay and are written in batches off the
//     call's path, and those still queued when the process dies are lost
//     (the run's events and the meter have them).
//   - tools/call and tools/list are answered by the gateway itself once it
//     has read the envelope, as the SDK's server would answer them, for
//     the requests the SDK would take as they are (fast.go); any other
//     request, and every other method, goes through the SDK. The SDK's
//     stateless server decodes a body several times and builds a session
//     per request, which cost more than the rest of a proxied call.
//   - The meter counts since the process started; the audit chain is the
//     durable record.
//   - Without a gate, write-class calls are refused.
//   - A gate that is down or slower than GateTimeout refuses the write as
//     unavailable (-31503): nothing ran, and a retry is judged afresh. A
//     write claimed and not acknowledged (its call failed or timed out in
//     flight, its replica died) may have run: the same approved call is
//     refused (ALREADY_EXECUTED) until an operator settles it at the gate.
//   - Shutdown lets calls in flight finish while its context lasts, then
//     cuts them off; a write cut off is left claimed, as above.
package toolgw
