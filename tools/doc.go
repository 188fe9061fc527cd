// Package tools is the SDK of the tool gateway, every agent tool's one door.
//
// The gateway is an MCP server (Streamable HTTP) at Path that fronts the
// platform's own tools (novaos.memory.*, novaos.knowledge.*, …) and the
// upstream MCP servers a tenant registers (novaos.<server>.<tool>). It
// checks the caller's token and scopes, applies the tenant's policy,
// sends write-class calls (ActionClass) through the governance gate, and
// audits and meters every call. This package holds its wire types, the
// classifier agents and the gateway share, and the clients.
package tools
