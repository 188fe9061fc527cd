package toolgw

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// Default ceilings of one call, the SDK's timeout hierarchy: a built-in
// tool gets DefaultBuiltinTimeout, an upstream's tool DefaultUpstreamTimeout
// unless its registration says otherwise. Agents' own timeout (128 s by
// default) sits above both, so they see the gateway's error.
const (
	DefaultBuiltinTimeout  = 120 * time.Second
	DefaultUpstreamTimeout = 30 * time.Second
)

// Caller is who makes a call, as the platform verified it: every field
// comes from the token, never from a request body.
type Caller struct {
	Tenant   string
	Agent    string
	User     string
	Run      string // the run the token was minted for; "" outside a run
	Instance string
	// Conversation is the conversation of the run the token was minted
	// for.
	Conversation string
	Subject      string
	// CallID is the tool call a resume token is bound to: the call a
	// person approved.
	CallID string
	Scopes []string
	// Token is the caller's own token, for calls that chain it (an A2A
	// call to another agent). It is never sent to an upstream server.
	Token secret.Value
	// Expiry is when Token expires.
	Expiry time.Time
}

// Tool is one tool behind the gateway, as a Provider describes it.
type Tool struct {
	tools.Tool
	// Scopes are scopes the caller needs besides mcp:tools:<name> (or a
	// grant covering it): all of them (memory:write:agent, connector:invoke).
	Scopes []string
	// Timeout is the call's ceiling; zero means the provider's default.
	Timeout time.Duration
	// Source is what the provider's Find read to find the tool (an
	// upstream server's registration), handed back to its Call with the
	// tool so that a call reads it once; the gateway neither reads nor
	// changes it, and a provider checks what it gets back.
	Source any
}

// Request is one call a Provider runs.
type Request struct {
	Caller *Caller
	Tool   *Tool
	// Arguments are the call's arguments, a JSON object, already checked
	// against the tool's input schema.
	Arguments json.RawMessage
	// CallID identifies the call in the run's events and the gate.
	CallID string

	outcome string // how the provider's call went, once made (run)
}

// Provider offers tools: the built-in servers and the upstream MCP
// servers a tenant registered.
type Provider interface {
	// Tools lists the tools the provider offers the caller's tenant.
	Tools(ctx context.Context, c *Caller) ([]Tool, error)
	// Find returns the tool called name for the caller's tenant; ok is
	// false when the provider has none by that name.
	Find(ctx context.Context, c *Caller, name string) (t *Tool, ok bool, err error)
	// Call runs a tool Find returned. A tool that ran and failed answers
	// a result with IsError; an error means the call could not be made
	// (an *Error says why, with a code the caller can branch on).
	Call(ctx context.Context, r *Request) (*mcp.CallToolResult, error)
}

// Error is a call that could not be made, with the reason the caller
// sees (tools.ReasonServiceDisabled, tools.ReasonTimeout, …).
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Message }

// Failf returns an *Error with the reason and a formatted message.
func Failf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// JSONResult is a tool's successful answer: v as JSON text content and
// as structured content, the shape the agent SDKs unwrap into their
// response's data.
func JSONResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("toolgw: encode the result: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// ErrorResult is a tool's failure as a result the caller reads: the
// reason and message as {"error": …, "code": …} text.
func ErrorResult(reason, msg string) *mcp.CallToolResult {
	b, _ := json.Marshal(map[string]string{"code": reason, "error": reason + ": " + msg})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}
