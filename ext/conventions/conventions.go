package conventions

import (
	"errors"
	"slices"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/ext/worldstate"
)

// The provider block every card built here carries unless Options say
// otherwise.
const (
	ProviderOrganization = "NovaOS"
	ProviderURL          = "https://novaos.dev"
)

// Security scheme names and the API key header.
const (
	APIKeySchemeName = "apiKey"
	BearerSchemeName = "bearer"
	APIKeyHeader     = "X-API-Key"
)

// URIs returns the four extension URIs in their canonical order: cost,
// confidence, worldstate delta, tool call.
func URIs() []string {
	return []string{cost.URI, confidence.URI, worldstate.URI, toolcall.URI}
}

var descriptions = map[string]string{
	cost.URI:       cost.Description,
	confidence.URI: confidence.Description,
	worldstate.URI: worldstate.Description,
	toolcall.URI:   toolcall.Description,
}

// Declarations returns the capabilities.extensions entries for uris, in
// their order, without duplicates. nil means all four; an empty non-nil
// slice declares none. A URI other than the four is declared without a
// description. None is required: they only add data.
func Declarations(uris []string) []a2a.AgentExtension {
	if uris == nil {
		uris = URIs()
	}
	out := make([]a2a.AgentExtension, 0, len(uris))
	seen := make(map[string]bool, len(uris))
	for _, u := range uris {
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, a2a.AgentExtension{URI: u, Description: descriptions[u]})
	}
	return out
}

// Provider returns the default provider block.
func Provider() *a2a.AgentProvider {
	return &a2a.AgentProvider{Organization: ProviderOrganization, URL: ProviderURL}
}

// JSONRPCInterface returns a JSON-RPC interface at url, protocol 1.0.
func JSONRPCInterface(url string) a2a.AgentInterface {
	return a2a.AgentInterface{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}
}

// APIKeyScheme returns an API key sent in header ("" means X-API-Key).
func APIKeyScheme(header string) a2a.SecurityScheme {
	if header == "" {
		header = APIKeyHeader
	}
	return a2a.SecurityScheme{APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: header}}
}

// BearerScheme returns HTTP bearer authentication.
func BearerScheme() a2a.SecurityScheme {
	return a2a.SecurityScheme{HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "bearer"}}
}

// SecuritySchemes returns the card's securitySchemes: "apiKey" always (in
// header, "" meaning X-API-Key), "bearer" when bearer is set.
func SecuritySchemes(header string, bearer bool) map[string]a2a.SecurityScheme {
	s := map[string]a2a.SecurityScheme{APIKeySchemeName: APIKeyScheme(header)}
	if bearer {
		s[BearerSchemeName] = BearerScheme()
	}
	return s
}

// SecurityRequirements returns the requirements matching SecuritySchemes:
// one alternative per scheme, no scopes.
func SecurityRequirements(bearer bool) []a2a.SecurityRequirement {
	req := func(name string) a2a.SecurityRequirement {
		return a2a.SecurityRequirement{Schemes: map[string]a2a.StringList{name: {List: []string{}}}}
	}
	out := []a2a.SecurityRequirement{req(APIKeySchemeName)}
	if bearer {
		out = append(out, req(BearerSchemeName))
	}
	return out
}

// Agent is what only the agent knows: who it is, where it answers and what
// it can do.
type Agent struct {
	Name        string
	Description string
	Version     string
	// URL is the JSON-RPC endpoint.
	URL    string
	Skills []a2a.AgentSkill
}

// Options adjust the conventions; nil means defaults.
type Options struct {
	// Extensions are the extension URIs the agent emits; nil declares all
	// four, an empty non-nil slice none.
	Extensions []string
	// Bearer adds the bearer scheme as an alternative to the API key.
	Bearer bool
	// APIKeyHeader names the API key header ("" means X-API-Key).
	APIKeyHeader string
	// Provider replaces the default provider block.
	Provider *a2a.AgentProvider
	// DisableStreaming publishes capabilities.streaming=false.
	DisableStreaming bool
	// PushNotifications publishes capabilities.pushNotifications=true; set
	// it only when the server has a push-config store.
	PushNotifications bool
	// DefaultInputModes and DefaultOutputModes default to text/plain and
	// text/markdown.
	DefaultInputModes  []string
	DefaultOutputModes []string
}

// ErrIncomplete is returned by Card when the agent lacks a name, version
// or URL.
var ErrIncomplete = errors.New("conventions: agent card needs a name, a version and a URL")

// Card builds an agent card with the conventions applied.
func Card(ag Agent, opts *Options) (*a2a.AgentCard, error) {
	if ag.Name == "" || ag.Version == "" || ag.URL == "" {
		return nil, ErrIncomplete
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	provider := o.Provider
	if provider == nil {
		provider = Provider()
	} else {
		p := *provider
		provider = &p
	}
	in, out := o.DefaultInputModes, o.DefaultOutputModes
	if in == nil {
		in = []string{"text/plain"}
	}
	if out == nil {
		out = []string{"text/markdown"}
	}
	skills := make([]a2a.AgentSkill, len(ag.Skills))
	for i, s := range ag.Skills {
		if s.Tags == nil {
			s.Tags = []string{}
		}
		skills[i] = s
	}
	return &a2a.AgentCard{
		Name:                ag.Name,
		Description:         ag.Description,
		Version:             ag.Version,
		Provider:            provider,
		SupportedInterfaces: []a2a.AgentInterface{JSONRPCInterface(ag.URL)},
		Capabilities: a2a.AgentCapabilities{
			Streaming:         a2a.Bool(!o.DisableStreaming),
			PushNotifications: a2a.Bool(o.PushNotifications),
			Extensions:        Declarations(o.Extensions),
		},
		SecuritySchemes:      SecuritySchemes(o.APIKeyHeader, o.Bearer),
		SecurityRequirements: SecurityRequirements(o.Bearer),
		DefaultInputModes:    slices.Clone(in),
		DefaultOutputModes:   slices.Clone(out),
		Skills:               skills,
	}, nil
}
