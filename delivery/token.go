package delivery

// The invocation token's JOSE header: exactly this algorithm and type,
// a non-empty key id, and no "crit".
const (
	TokenAlgorithm = "EdDSA"
	TokenType      = "agent-invocation+jwt"
)

// InvocationTokenHeader carries a run's newest invocation token on every
// request an agent makes for that run.
const InvocationTokenHeader = "Invocation-Token"

// BillingMode says who pays for the model calls of a run.
type BillingMode string

const (
	// BillingPlatform: the platform meters and pays (its LLM gateway).
	BillingPlatform BillingMode = "platform"
	// BillingAgent: the agent's own provider account pays.
	BillingAgent BillingMode = "agent"
	// BillingUnknown: the agent cannot tell. It never matches a claim.
	BillingUnknown BillingMode = "unknown"
)

// ToolClass is how far a run's tools may reach, in rising order: chat
// (conversation only), scoped (the tools the platform grants the run),
// host (the agent's own machine).
type ToolClass string

const (
	ToolChat   ToolClass = "chat"
	ToolScoped ToolClass = "scoped"
	ToolHost   ToolClass = "host"
)

// Rank orders the classes: chat 1, scoped 2, host 3, and 0 for a value
// that is not a class (which is above none and allowed by none).
func (c ToolClass) Rank() int {
	switch c {
	case ToolChat:
		return 1
	case ToolScoped:
		return 2
	case ToolHost:
		return 3
	}
	return 0
}

// Allows reports whether a run granted c may use actual: actual is a
// class, and not above c.
func (c ToolClass) Allows(actual ToolClass) bool {
	return c.Rank() > 0 && actual.Rank() > 0 && actual.Rank() <= c.Rank()
}

// TriggerKind names what started a run, and so which triggering object
// the token and payload name.
type TriggerKind string

const (
	TriggerMessage     TriggerKind = "message"     // MessageID
	TriggerInteraction TriggerKind = "interaction" // InteractionID
	TriggerCommand     TriggerKind = "command"     // CommandID
)

// Claims are an invocation token's claims. The audience is one string,
// the agent's id; an array is not accepted. Times are Unix seconds.
type Claims struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"`
	Subject   string `json:"sub"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
	ID        string `json:"jti"`

	TenantID string `json:"tenant_id,omitempty"`
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	// EventID is the event the token was delivered with.
	EventID     string      `json:"event_id,omitempty"`
	TriggerKind TriggerKind `json:"trigger_kind,omitempty"`
	// Exactly one triggering object, as TriggerKind says; a follow-up,
	// interaction or command on a running run names its own.
	MessageID     string `json:"message_id,omitempty"`
	InteractionID string `json:"interaction_id,omitempty"`
	CommandID     string `json:"command_id,omitempty"`

	BillingMode       BillingMode `json:"billing_mode"`
	ToolClass         ToolClass   `json:"tool_class"`
	PermissionVersion int64       `json:"permission_version"`
}

// TokenCreate asks for an agent API token (createToken). DPoPJKT binds it
// to a proof key, the RFC 7638 thumbprint of its public JWK: the token is
// then accepted only as "Authorization: DPoP <token>" with a proof.
type TokenCreate struct {
	DPoPJKT string `json:"dpop_jkt,omitempty"`
	// Name says what the token is for, in lists.
	Name string `json:"name,omitempty"`
}

// TokenGrant is a created API token. Token is shown once and never
// again; the platform keeps its hash.
type TokenGrant struct {
	ID      string `json:"id"`
	AgentID string `json:"agent_id"`
	Token   string `json:"token"`
	DPoPJKT string `json:"dpop_jkt,omitempty"`
}

// String leaves the token out.
func (g TokenGrant) String() string { return "TokenGrant{" + g.ID + " agent=" + g.AgentID + "}" }

// GoString leaves the token out.
func (g TokenGrant) GoString() string { return g.String() }

// InvocationTokenRenew asks for a fresh token for a run whose newest
// token has expired; the expired token itself goes in the
// InvocationTokenHeader.
type InvocationTokenRenew struct{}

// InvocationTokenGrant is a renewed token.
type InvocationTokenGrant struct {
	InvocationToken string `json:"invocation_token"`
	ExpiresAt       int64  `json:"expires_at"`
}

// String leaves the token out.
func (g InvocationTokenGrant) String() string { return "InvocationTokenGrant{…}" }

// GoString leaves the token out.
func (g InvocationTokenGrant) GoString() string { return g.String() }
