package identity

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"novaos.dev/novaos/secret"
)

// Headers of the platform's auth proxy: it verifies the execution token and
// hands the agent the ids it carries and the token itself. The Python SDK names
// no header for the conversation or the agent name; these two follow the
// pattern.
const (
	HeaderUserID         = "X-NovaOS-User-Id"
	HeaderTenantID       = "X-NovaOS-Tenant-Id"
	HeaderRunID          = "X-NovaOS-Run-Id"
	HeaderAgentID        = "X-NovaOS-Agent-Id"
	HeaderInstanceID     = "X-NovaOS-Instance-Id"
	HeaderExecutionToken = "X-NovaOS-Execution-Token"
	HeaderAgentName      = "X-NovaOS-Agent-Name"
	HeaderConversationID = "X-NovaOS-Conversation-Id"
)

// ErrNoToken is RequireToken's error: the execution carries no token, so
// a call to a platform service would be refused.
var ErrNoToken = errors.New("identity: no execution token (the request carried none: run under the platform, or set NOVAOS_EXECUTION_TOKEN for the program to give the agent)")

// Execution is the Python SDK's ExecutionContext: the execution token an agent
// calls platform services with, and the ids it acts under. Token is a
// secret.Value, so printing an Execution never shows it. Verified is true
// when the ids come from a token this process verified; otherwise they are
// what the request said (the platform context or the auth proxy's
// headers), for logs and correlation, and the service that receives the
// token decides for itself.
type Execution struct {
	Token          secret.Value
	TenantID       string
	UserID         string
	RunID          string
	AgentID        string
	AgentName      string
	InstanceID     string
	ConversationID string
	Scopes         []string
	Verified       bool
}

// Execution returns the execution context of a verified token.
func (c *Claims) Execution(token secret.Value) Execution {
	return Execution{
		Token: token, TenantID: c.TenantID, UserID: c.UserID, RunID: c.RunID,
		AgentID: c.AgentID, AgentName: c.AgentName, InstanceID: c.InstanceID,
		ConversationID: c.ConversationID, Scopes: slices.Clone(c.Scopes), Verified: true,
	}
}

// ExecutionFromHeaders reads the auth proxy's X-NovaOS-* headers. The ids
// are unverified (Verified is false): trust them only behind a proxy that
// strips the caller's own.
func ExecutionFromHeaders(h http.Header) Execution {
	return Execution{
		Token:          secret.New(h.Get(HeaderExecutionToken)),
		TenantID:       h.Get(HeaderTenantID),
		UserID:         h.Get(HeaderUserID),
		RunID:          h.Get(HeaderRunID),
		AgentID:        h.Get(HeaderAgentID),
		AgentName:      h.Get(HeaderAgentName),
		InstanceID:     h.Get(HeaderInstanceID),
		ConversationID: h.Get(HeaderConversationID),
	}
}

// WithFallbackToken returns e with token as its Token when e carries
// none: the token of an agent outside the platform's auth proxy (local
// development, a test harness), which its program reads once at startup
// (NOVAOS_EXECUTION_TOKEN, envconfig.ExecutionToken). A token the request
// carried always wins; the ids stay as they were.
func (e Execution) WithFallbackToken(token secret.Value) Execution {
	if e.Token.IsZero() {
		e.Token = token
	}
	return e
}

// RequireToken returns the token, or ErrNoToken: call it before an
// outbound call that needs one, so a missing token is reported where it
// is missing and not as a 401 from the service.
func (e Execution) RequireToken() (secret.Value, error) {
	if e.Token.IsZero() {
		return secret.Value{}, ErrNoToken
	}
	return e.Token, nil
}

// AuthHeaders is the Python SDK's to_auth_headers: {"Authorization": "Bearer
// <token>"}, or an empty map without a token. The map holds the token in
// the clear: pass it to the request, never to a log.
func (e Execution) AuthHeaders() map[string]string {
	if e.Token.IsZero() {
		return map[string]string{}
	}
	return map[string]string{"Authorization": "Bearer " + e.Token.Reveal()}
}

// Authorize sets the Authorization header of an outbound request to the
// execution token; without a token it leaves h alone and reports false.
func (e Execution) Authorize(h http.Header) bool {
	if e.Token.IsZero() {
		return false
	}
	h.Set("Authorization", "Bearer "+e.Token.Reveal())
	return true
}

// ContextHeaders is the Python SDK's to_context_headers: the X-NovaOS-* headers
// of every non-empty field, the token included, for forwarding the whole
// context to a service that reads them. It holds the token in the clear.
func (e Execution) ContextHeaders() map[string]string {
	out := map[string]string{}
	for _, f := range []struct{ name, v string }{
		{HeaderUserID, e.UserID}, {HeaderTenantID, e.TenantID}, {HeaderRunID, e.RunID},
		{HeaderAgentID, e.AgentID}, {HeaderInstanceID, e.InstanceID},
		{HeaderExecutionToken, e.Token.Reveal()}, {HeaderAgentName, e.AgentName},
		{HeaderConversationID, e.ConversationID},
	} {
		if f.v != "" {
			out[f.name] = f.v
		}
	}
	return out
}

type verifiedKey struct{}

// Verified is a verified token's claims with the token they came from:
// what a server that checked the token hands the code it calls (through
// NewContext, or as an A2A call's a2asrv.Call.Identity).
type Verified struct {
	Claims *Claims
	Token  secret.Value
}

// Execution returns the execution context of the verified token.
func (v Verified) Execution() Execution { return v.Claims.Execution(v.Token) }

// NewContext returns ctx carrying verified claims and the token they came
// from, as Middleware leaves them for the handler.
func NewContext(ctx context.Context, c *Claims, token secret.Value) context.Context {
	return context.WithValue(ctx, verifiedKey{}, Verified{Claims: c, Token: token})
}

// FromContext returns the claims Middleware verified for this request.
// Identity is taken from here, never from a request body.
func FromContext(ctx context.Context) (*Claims, bool) {
	v, ok := ctx.Value(verifiedKey{}).(Verified)
	return v.Claims, ok && v.Claims != nil
}

// ExecutionFromContext returns the execution context of the verified
// token in ctx: a service or agent behind Middleware calls onwards as the
// caller with it.
func ExecutionFromContext(ctx context.Context) (Execution, bool) {
	v, ok := ctx.Value(verifiedKey{}).(Verified)
	if !ok || v.Claims == nil {
		return Execution{}, false
	}
	return v.Execution(), true
}
