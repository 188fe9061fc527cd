package a2a

import "encoding/json"

// Protocol bindings an AgentInterface can name.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingGRPC     = "GRPC"
	BindingHTTPJSON = "HTTP+JSON"
)

// WellKnownCardPath is where an agent publishes its card, relative to its base
// URL.
const WellKnownCardPath = "/.well-known/agent-card.json"

// AgentCard describes an agent: who it is, where and how it answers, and what
// it can do.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     *string                   `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
	Signatures           []AgentCardSignature      `json:"signatures,omitempty"`
	IconURL              *string                   `json:"iconUrl,omitempty"`
}

// AgentInterface is one URL and protocol binding an agent answers on.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider names the organisation publishing an agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities lists optional protocol features. The booleans are
// pointers because proto3 `optional` keeps an explicit false, which matters
// for card signatures.
type AgentCapabilities struct {
	Streaming         *bool            `json:"streaming,omitempty"`
	PushNotifications *bool            `json:"pushNotifications,omitempty"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool            `json:"extendedAgentCard,omitempty"`
}

// AgentExtension declares an extension the agent supports.
type AgentExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
}

// AgentSkill is one capability an agent offers.
type AgentSkill struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Tags                 []string              `json:"tags"`
	Examples             []string              `json:"examples,omitempty"`
	InputModes           []string              `json:"inputModes,omitempty"`
	OutputModes          []string              `json:"outputModes,omitempty"`
	SecurityRequirements []SecurityRequirement `json:"securityRequirements,omitempty"`
}

// AgentCardSignature is a detached JWS over the card's canonical JSON.
type AgentCardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// StringList is the proto wrapper used for scope lists.
type StringList struct {
	List []string `json:"list"`
}

// SecurityRequirement maps scheme names to the scopes they need.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// SecurityScheme is a oneof: exactly one member is set.
type SecurityScheme struct {
	APIKey        *APIKeySecurityScheme        `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth      *HTTPAuthSecurityScheme      `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2        *OAuth2SecurityScheme        `json:"oauth2SecurityScheme,omitempty"`
	OpenIDConnect *OpenIDConnectSecurityScheme `json:"openIdConnectSecurityScheme,omitempty"`
	MTLS          *MutualTLSSecurityScheme     `json:"mtlsSecurityScheme,omitempty"`
}

// APIKeySecurityScheme is an API key in a header, query parameter or cookie.
type APIKeySecurityScheme struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

// HTTPAuthSecurityScheme is HTTP authentication such as Bearer.
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// OAuth2SecurityScheme is OAuth 2.0; Flows is kept as raw JSON because its
// members are only read by OAuth tooling.
type OAuth2SecurityScheme struct {
	Description       string          `json:"description,omitempty"`
	Flows             json.RawMessage `json:"flows,omitempty"`
	OAuth2MetadataURL string          `json:"oauth2MetadataUrl,omitempty"`
}

// OpenIDConnectSecurityScheme is OpenID Connect discovery.
type OpenIDConnectSecurityScheme struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

// MutualTLSSecurityScheme is mutual TLS.
type MutualTLSSecurityScheme struct {
	Description string `json:"description,omitempty"`
}

// Bool returns a pointer to v, for the optional card booleans.
func Bool(v bool) *bool { return &v }

// MarshalJSON writes the card with the lists the specification requires
// (supportedInterfaces, defaultInputModes, defaultOutputModes, skills)
// written as [] when empty: null would not validate against the A2A schema.
func (c AgentCard) MarshalJSON() ([]byte, error) {
	type plain AgentCard // no methods: no recursion
	p := plain(c)
	p.SupportedInterfaces = nonNil(p.SupportedInterfaces)
	p.DefaultInputModes = nonNil(p.DefaultInputModes)
	p.DefaultOutputModes = nonNil(p.DefaultOutputModes)
	p.Skills = nonNil(p.Skills)
	return json.Marshal(p)
}

// MarshalJSON writes the skill with tags written as [] when empty.
func (s AgentSkill) MarshalJSON() ([]byte, error) {
	type plain AgentSkill
	p := plain(s)
	p.Tags = nonNil(p.Tags)
	return json.Marshal(p)
}

// MarshalJSON writes the list as [] when empty.
func (l StringList) MarshalJSON() ([]byte, error) {
	type plain StringList
	return json.Marshal(plain{List: nonNil(l.List)})
}

// MarshalJSON writes the schemes as {} when empty.
func (r SecurityRequirement) MarshalJSON() ([]byte, error) {
	type plain SecurityRequirement
	p := plain(r)
	if p.Schemes == nil {
		p.Schemes = map[string]StringList{}
	}
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
