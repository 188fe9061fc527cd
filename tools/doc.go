// Package tools is the SDK of the tool gateway, every agent tool's one door.
//
// The gateway is an MCP server (Streamable HTTP) at Path that fronts the
// platform's own tools (novaos.memory.*, novaos.knowledge.*, …) and the
// upstream MCP servers a tenant registers (novaos.<server>.<tool>). It
// checks the caller's token and scopes, applies the tenant's policy,
// sends write-class calls (ActionClass) through the governance gate, and
// audits and meters every call. This package holds its wire types, the
// classifier agents and the gateway share, and the clients.
//
// Every binding call is a client span, "tools/call <tool>" (MCP's and
// GenAI's conventions: mcp.method.name, gen_ai.operation.name
// execute_tool, gen_ai.tool.name, gen_ai.tool.call.id, and novaos.run_id
// when bound to a run), a child of the span in its context (a skill's).
// Every request carries the trace context of the span in its context as a
// W3C traceparent header, and a tools/call in its _meta too
// (MetaTraceparent), as MCP's conventions have it.
package tools
