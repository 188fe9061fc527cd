package tools

import (
	"encoding/json"
	"strings"
)

// Paths of the tool gateway. Path is its MCP endpoint (Streamable HTTP);
// CallPath, where the NovaOS Python SDK's tool bindings post their JSON-RPC calls,
// serves the same methods, as does ListPath.
const (
	Path     = "/mcp/v1"
	CallPath = "/mcp/v1/tools/call"
	ListPath = "/mcp/v1/tools/list"
	// ResourceMetadataPath is the gateway's OAuth protected-resource
	// metadata (RFC 9728), the document an MCP client reads to learn
	// how to authenticate.
	ResourceMetadataPath = "/.well-known/oauth-protected-resource" + Path
)

// Headers of a call.
const (
	// TenantHeader, when a caller sends it, must name the tenant of the
	// caller's token; a call naming another is refused.
	TenantHeader = "X-Tenant-ID"
	// SessionHeader carries the MCP session id: minted at initialize,
	// good on any replica until it has been idle for SessionIdle.
	SessionHeader = "Mcp-Session-Id"
)

// Prefix starts every tool name behind the gateway: novaos.<server>.<tool>.
const Prefix = "novaos."

// The built-in servers, by the second segment of their tools' names.
const (
	ServerMemory    = "memory"
	ServerKnowledge = "knowledge"
	ServerAgents    = "agents"
	ServerNotify    = "notify"
	ServerHTTP      = "http"
	ServerFiles     = "files"
	ServerHITL      = "hitl"
	ServerConnector = "connector"
)

// BuiltinServers are the server names the platform keeps for itself: an
// upstream server cannot be registered under one of them.
var BuiltinServers = []string{ServerMemory, ServerKnowledge, ServerAgents, ServerNotify, ServerHTTP,
	ServerFiles, ServerHITL, ServerConnector}

// JSON-RPC error codes the gateway answers with, beyond JSON-RPC's own
// (-32700 parse error, -32600 invalid request, -32601 method not found,
// -32602 invalid params, -32603 internal error). Apart from -32042 they
// stay out of -32000…-32099, which MCP reserves and which MCP clients
// read as their own (the Go SDK's -32003 and -32004 close the
// connection): like the platform's A2A errors, they are -31000 less the
// HTTP status they stand for.
const (
	// CodeWriteConfirmationRequired: a write-class call was held for a
	// person's decision (HITL_REQUIRED, as the NovaOS SDKs name it). The error's data
	// is a WriteConfirmationData.
	CodeWriteConfirmationRequired = -32042
	// CodeForbidden: the caller may not call the tool (a scope missing,
	// the tenant's policy, the gate's kill). The error's data is an
	// ErrorData naming the reason.
	CodeForbidden = -31403
	// CodeUnavailable: the tool's backend is down, slow past its
	// timeout, or turned off (SERVICE_DISABLED).
	CodeUnavailable = -31503
	// CodeUnauthorized: no token, or one that is not valid (HTTP 401).
	CodeUnauthorized = -31401
)

// Reasons carried in ErrorData.Code and in a failed result's error text.
const (
	ReasonHITLRequired      = "HITL_REQUIRED"
	ReasonInsufficientScope = "insufficient_scope"
	ReasonPolicyDenied      = "POLICY_DENIED"
	ReasonGateKilled        = "GATE_KILLED"
	ReasonServiceDisabled   = "SERVICE_DISABLED"
	ReasonToolNotFound      = "TOOL_NOT_FOUND"
	ReasonInvalidArguments  = "INVALID_ARGUMENTS"
	ReasonTimeout           = "TIMEOUT"
	ReasonUnavailable       = "UPSTREAM_UNAVAILABLE"
	ReasonTenantMismatch    = "TENANT_MISMATCH"
	ReasonAlreadyExecuted   = "ALREADY_EXECUTED"
)

// ErrorData is the data of the gateway's JSON-RPC errors.
type ErrorData struct {
	Code string `json:"code"`
	// Scope is the scope a refused call lacked (insufficient_scope).
	Scope string `json:"scope,omitempty"`
	// Tool is the tool the call named.
	Tool string `json:"tool,omitempty"`
	// Rule is the gate rule or policy that refused the call.
	Rule string `json:"rule,omitempty"`
}

// WriteConfirmationData is the data of a -32042 error: the call id the
// held call was given, which the run's resume token will be bound to, and
// the pause payload an agent passes on (what the NovaOS Python SDK's
// create_write_confirmation_required_message takes). Elicitations
// carries the same hold in the MCP URL-elicitation shape, so a generic MCP
// client shows the person where to decide.
type WriteConfirmationData struct {
	Code      string `json:"code"` // ReasonHITLRequired
	CallID    string `json:"call_id"`
	ToolName  string `json:"tool_name"`
	SessionID string `json:"session_id,omitempty"`
	// ActionID is the gate's action the person decides.
	ActionID string `json:"action_id,omitempty"`
	// RunID is the run the call was made in, when it was made in one.
	RunID        string        `json:"run_id,omitempty"`
	Elicitations []Elicitation `json:"elicitations,omitempty"`
}

// Elicitation is one MCP URL-mode elicitation.
type Elicitation struct {
	Mode          string `json:"mode"` // "url"
	ElicitationID string `json:"elicitationId"`
	URL           string `json:"url"`
	Message       string `json:"message"`
}

// Annotations are an MCP tool's behaviour hints, the classifier's first
// source. A nil field was not given.
type Annotations struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Server returns the server segment of a tool name (novaos.<server>.…),
// or "" when name is not a gateway tool name.
func Server(name string) string {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return ""
	}
	server, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return server
}

// ValidName reports whether name is a gateway tool name: novaos. and at
// least two more segments of a-z, A-Z, 0-9, '_' and '-', at most 128
// bytes in all (the MCP tool-name rules).
func ValidName(name string) bool {
	if len(name) > 128 {
		return false
	}
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return false
	}
	n := 0
	for seg := range strings.SplitSeq(rest, ".") {
		if !validSegment(seg) {
			return false
		}
		n++
	}
	return n >= 2
}

func validSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
