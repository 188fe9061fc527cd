package a2av03

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"novaos.dev/novaos/a2a"
)

// AgentCard is the 0.3 agent card: one main URL with its transport, the
// other interfaces beside it, and the protocol version for the whole card.
type AgentCard struct {
	ProtocolVersion                   string                    `json:"protocolVersion"`
	Name                              string                    `json:"name"`
	Description                       string                    `json:"description"`
	URL                               string                    `json:"url"`
	PreferredTransport                string                    `json:"preferredTransport,omitempty"`
	AdditionalInterfaces              []AgentInterface          `json:"additionalInterfaces,omitempty"`
	IconURL                           string                    `json:"iconUrl,omitempty"`
	Provider                          *AgentProvider            `json:"provider,omitempty"`
	Version                           string                    `json:"version"`
	DocumentationURL                  string                    `json:"documentationUrl,omitempty"`
	Capabilities                      AgentCapabilities         `json:"capabilities"`
	SecuritySchemes                   map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	Security                          []map[string][]string     `json:"security,omitempty"`
	DefaultInputModes                 []string                  `json:"defaultInputModes"`
	DefaultOutputModes                []string                  `json:"defaultOutputModes"`
	Skills                            []AgentSkill              `json:"skills"`
	SupportsAuthenticatedExtendedCard bool                      `json:"supportsAuthenticatedExtendedCard,omitempty"`
	Signatures                        []AgentCardSignature      `json:"signatures,omitempty"`
}

// AgentInterface is one more URL and the transport it speaks: "JSONRPC",
// "HTTP+JSON" or "GRPC", the names v1 uses too.
type AgentInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// AgentProvider names the organisation publishing an agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities lists optional features.
type AgentCapabilities struct {
	Streaming              *bool            `json:"streaming,omitempty"`
	PushNotifications      *bool            `json:"pushNotifications,omitempty"`
	StateTransitionHistory *bool            `json:"stateTransitionHistory,omitempty"`
	Extensions             []AgentExtension `json:"extensions,omitempty"`
}

// AgentExtension declares an extension the agent supports; 0.3 and 1.0
// spell it alike.
type AgentExtension = a2a.AgentExtension

// AgentSkill is one capability an agent offers.
type AgentSkill struct {
	ID          string                `json:"id"`
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Examples    []string              `json:"examples,omitempty"`
	InputModes  []string              `json:"inputModes,omitempty"`
	OutputModes []string              `json:"outputModes,omitempty"`
	Security    []map[string][]string `json:"security,omitempty"`
}

// AgentCardSignature is a JWS over the card.
type AgentCardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// SecurityScheme is 0.3's OpenAPI-style scheme, told apart by Type:
// "apiKey" (In, Name), "http" (Scheme, BearerFormat), "oauth2" (Flows,
// OAuth2MetadataURL), "openIdConnect" (OpenIDConnectURL) or "mutualTLS".
type SecurityScheme struct {
	Type              string          `json:"type"`
	Description       string          `json:"description,omitempty"`
	In                string          `json:"in,omitempty"`
	Name              string          `json:"name,omitempty"`
	Scheme            string          `json:"scheme,omitempty"`
	BearerFormat      string          `json:"bearerFormat,omitempty"`
	Flows             json.RawMessage `json:"flows,omitempty"`
	OAuth2MetadataURL string          `json:"oauth2MetadataUrl,omitempty"`
	OpenIDConnectURL  string          `json:"openIdConnectUrl,omitempty"`
}

// MarshalJSON writes the lists the 0.3 schema requires as [] when empty.
func (c AgentCard) MarshalJSON() ([]byte, error) {
	type plain AgentCard
	p := plain(c)
	p.DefaultInputModes, p.DefaultOutputModes = nonNil(p.DefaultInputModes), nonNil(p.DefaultOutputModes)
	p.Skills = nonNil(p.Skills)
	return json.Marshal(p)
}

// MarshalJSON writes tags as [] when empty.
func (s AgentSkill) MarshalJSON() ([]byte, error) {
	type plain AgentSkill
	p := plain(s)
	p.Tags = nonNil(p.Tags)
	return json.Marshal(p)
}

// ErrNoJSONRPCInterface is returned by CardFromV1 for a card with no
// JSON-RPC interface: 0.3 is only served over JSON-RPC here.
var ErrNoJSONRPCInterface = errors.New("a2av03: the card has no JSON-RPC interface")

// CardFromV1 derives the card a 0.3 client reads from a v1 card. The main
// url and preferredTransport "JSONRPC" come from the first JSON-RPC
// interface that states protocol version 0.3, else from the first JSON-RPC
// interface (a server answers 0.3 calls on its JSON-RPC URL).
// additionalInterfaces lists the main interface first, as the 0.3
// specification asks, then every other JSON-RPC interface and any interface
// that states 0.3. A v1-only HTTP+JSON or gRPC interface is left out: a 0.3
// client would call it with 0.3's REST paths (/v1/message:send) or gRPC
// service, which a v1 server does not serve.
//
// The v1 card's signatures are dropped: they sign the v1 document, so no
// 0.3 reader could verify them against this one. deviceCode OAuth flows
// (v1 only) are dropped from each scheme's flows.
func CardFromV1(c *a2a.AgentCard) (*AgentCard, error) {
	main := slices.IndexFunc(c.SupportedInterfaces, func(i a2a.AgentInterface) bool {
		return i.ProtocolBinding == a2a.BindingJSONRPC && isV03(i.ProtocolVersion)
	})
	if main < 0 {
		main = slices.IndexFunc(c.SupportedInterfaces, func(i a2a.AgentInterface) bool {
			return i.ProtocolBinding == a2a.BindingJSONRPC
		})
	}
	if main < 0 {
		return nil, ErrNoJSONRPCInterface
	}
	m := c.SupportedInterfaces[main]
	out := &AgentCard{
		ProtocolVersion:    ProtocolVersion,
		Name:               c.Name,
		Description:        c.Description,
		URL:                m.URL,
		PreferredTransport: a2a.BindingJSONRPC,
		AdditionalInterfaces: []AgentInterface{{
			URL: m.URL, Transport: a2a.BindingJSONRPC,
		}},
		Version:            c.Version,
		DefaultInputModes:  c.DefaultInputModes,
		DefaultOutputModes: c.DefaultOutputModes,
		Capabilities: AgentCapabilities{
			Streaming:         c.Capabilities.Streaming,
			PushNotifications: c.Capabilities.PushNotifications,
		},
		SupportsAuthenticatedExtendedCard: c.Capabilities.ExtendedAgentCard != nil && *c.Capabilities.ExtendedAgentCard,
		Security:                          securityFromV1(c.SecurityRequirements),
	}
	for i, in := range c.SupportedInterfaces {
		if i == main || in.ProtocolBinding != a2a.BindingJSONRPC && !isV03(in.ProtocolVersion) {
			continue
		}
		ai := AgentInterface{URL: in.URL, Transport: in.ProtocolBinding}
		if !slices.Contains(out.AdditionalInterfaces, ai) {
			out.AdditionalInterfaces = append(out.AdditionalInterfaces, ai)
		}
	}
	if c.Provider != nil {
		out.Provider = &AgentProvider{Organization: c.Provider.Organization, URL: c.Provider.URL}
	}
	if c.DocumentationURL != nil {
		out.DocumentationURL = *c.DocumentationURL
	}
	if c.IconURL != nil {
		out.IconURL = *c.IconURL
	}
	out.Capabilities.Extensions = slices.Clone(c.Capabilities.Extensions)
	if len(c.SecuritySchemes) > 0 {
		out.SecuritySchemes = make(map[string]SecurityScheme, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			out.SecuritySchemes[name] = schemeFromV1(s)
		}
	}
	if c.Skills != nil {
		out.Skills = make([]AgentSkill, len(c.Skills))
		for i, s := range c.Skills {
			out.Skills[i] = AgentSkill{
				ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
				InputModes: s.InputModes, OutputModes: s.OutputModes, Security: securityFromV1(s.SecurityRequirements),
			}
		}
	}
	return out, nil
}

// isV03 reports whether a protocol version is 0.3 or a patch of it.
func isV03(v string) bool { return v == "0.3" || strings.HasPrefix(v, "0.3.") }

func securityFromV1(reqs []a2a.SecurityRequirement) []map[string][]string {
	if reqs == nil {
		return nil
	}
	out := make([]map[string][]string, len(reqs))
	for i, r := range reqs {
		out[i] = make(map[string][]string, len(r.Schemes))
		for name, scopes := range r.Schemes {
			out[i][name] = nonNil(scopes.List)
		}
	}
	return out
}

func securityToV1(reqs []map[string][]string) []a2a.SecurityRequirement {
	if reqs == nil {
		return nil
	}
	out := make([]a2a.SecurityRequirement, len(reqs))
	for i, r := range reqs {
		out[i].Schemes = make(map[string]a2a.StringList, len(r))
		for name, scopes := range r {
			out[i].Schemes[name] = a2a.StringList{List: scopes}
		}
	}
	return out
}

func schemeFromV1(s a2a.SecurityScheme) SecurityScheme {
	switch {
	case s.APIKey != nil:
		return SecurityScheme{Type: "apiKey", Description: s.APIKey.Description, In: s.APIKey.Location, Name: s.APIKey.Name}
	case s.HTTPAuth != nil:
		return SecurityScheme{Type: "http", Description: s.HTTPAuth.Description, Scheme: s.HTTPAuth.Scheme, BearerFormat: s.HTTPAuth.BearerFormat}
	case s.OAuth2 != nil:
		return SecurityScheme{Type: "oauth2", Description: s.OAuth2.Description, Flows: withoutDeviceCode(s.OAuth2.Flows), OAuth2MetadataURL: s.OAuth2.OAuth2MetadataURL}
	case s.OpenIDConnect != nil:
		return SecurityScheme{Type: "openIdConnect", Description: s.OpenIDConnect.Description, OpenIDConnectURL: s.OpenIDConnect.OpenIDConnectURL}
	case s.MTLS != nil:
		return SecurityScheme{Type: "mutualTLS", Description: s.MTLS.Description}
	}
	return SecurityScheme{}
}

// withoutDeviceCode drops the deviceCode flow, which 0.3 lacks; the other
// flows have the same JSON in both versions (v1 adds pkceRequired, which a
// 0.3 reader ignores).
func withoutDeviceCode(flows json.RawMessage) json.RawMessage {
	if !bytes.Contains(flows, []byte(`"deviceCode"`)) {
		return flows
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(flows, &m) != nil {
		return flows
	}
	delete(m, "deviceCode")
	out, err := json.Marshal(m)
	if err != nil {
		return flows
	}
	return out
}

func (s *SecurityScheme) v1() (a2a.SecurityScheme, error) {
	switch s.Type {
	case "apiKey":
		return a2a.SecurityScheme{APIKey: &a2a.APIKeySecurityScheme{Description: s.Description, Location: s.In, Name: s.Name}}, nil
	case "http":
		return a2a.SecurityScheme{HTTPAuth: &a2a.HTTPAuthSecurityScheme{Description: s.Description, Scheme: s.Scheme, BearerFormat: s.BearerFormat}}, nil
	case "oauth2":
		return a2a.SecurityScheme{OAuth2: &a2a.OAuth2SecurityScheme{Description: s.Description, Flows: s.Flows, OAuth2MetadataURL: s.OAuth2MetadataURL}}, nil
	case "openIdConnect":
		return a2a.SecurityScheme{OpenIDConnect: &a2a.OpenIDConnectSecurityScheme{Description: s.Description, OpenIDConnectURL: s.OpenIDConnectURL}}, nil
	case "mutualTLS":
		return a2a.SecurityScheme{MTLS: &a2a.MutualTLSSecurityScheme{Description: s.Description}}, nil
	}
	return a2a.SecurityScheme{}, fmt.Errorf("unknown security scheme type %q", truncate(s.Type))
}

// V1 returns the v1 card of a 0.3 agent. The main url becomes the first
// supported interface (transport JSONRPC when preferredTransport is
// absent, the 0.3 default) and each other additional interface follows;
// every interface states the card's protocolVersion ("0.3.0" when absent),
// so a v1 client knows to speak 0.3 there. supportsAuthenticatedExtendedCard
// becomes capabilities.extendedAgentCard; stateTransitionHistory is dropped.
func (c *AgentCard) V1() (*a2a.AgentCard, error) {
	version := c.ProtocolVersion
	if version == "" {
		version = ProtocolVersion
	}
	transport := c.PreferredTransport
	if transport == "" {
		transport = a2a.BindingJSONRPC
	}
	out := &a2a.AgentCard{
		Name:               c.Name,
		Description:        c.Description,
		Version:            c.Version,
		DefaultInputModes:  c.DefaultInputModes,
		DefaultOutputModes: c.DefaultOutputModes,
		Capabilities: a2a.AgentCapabilities{
			Streaming:         c.Capabilities.Streaming,
			PushNotifications: c.Capabilities.PushNotifications,
		},
		SecurityRequirements: securityToV1(c.Security),
	}
	if c.URL != "" {
		out.SupportedInterfaces = append(out.SupportedInterfaces, a2a.AgentInterface{URL: c.URL, ProtocolBinding: transport, ProtocolVersion: version})
	}
	for _, ai := range c.AdditionalInterfaces {
		in := a2a.AgentInterface{URL: ai.URL, ProtocolBinding: ai.Transport, ProtocolVersion: version}
		if !slices.Contains(out.SupportedInterfaces, in) {
			out.SupportedInterfaces = append(out.SupportedInterfaces, in)
		}
	}
	if c.SupportsAuthenticatedExtendedCard {
		out.Capabilities.ExtendedAgentCard = a2a.Bool(true)
	}
	out.Capabilities.Extensions = slices.Clone(c.Capabilities.Extensions)
	if c.Provider != nil {
		out.Provider = &a2a.AgentProvider{Organization: c.Provider.Organization, URL: c.Provider.URL}
	}
	if c.DocumentationURL != "" {
		out.DocumentationURL = &c.DocumentationURL
	}
	if c.IconURL != "" {
		out.IconURL = &c.IconURL
	}
	if len(c.SecuritySchemes) > 0 {
		out.SecuritySchemes = make(map[string]a2a.SecurityScheme, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			v, err := s.v1()
			if err != nil {
				return nil, at("securitySchemes."+name, err)
			}
			out.SecuritySchemes[name] = v
		}
	}
	if c.Skills != nil {
		out.Skills = make([]a2a.AgentSkill, len(c.Skills))
		for i, s := range c.Skills {
			out.Skills[i] = a2a.AgentSkill{
				ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
				InputModes: s.InputModes, OutputModes: s.OutputModes, SecurityRequirements: securityToV1(s.Security),
			}
		}
	}
	for _, s := range c.Signatures {
		out.Signatures = append(out.Signatures, a2a.AgentCardSignature(s))
	}
	return out, nil
}

// ParseCard reads an agent card that may be either version: a document
// with a non-empty supportedInterfaces is a v1 card (a hybrid card too,
// which a v1 reader should prefer) and is read with a2a.Unmarshal;
// anything else is read as a 0.3 card and converted with V1.
func ParseCard(data []byte) (*a2a.AgentCard, error) {
	var probe struct {
		SupportedInterfaces []json.RawMessage `json:"supportedInterfaces"`
	}
	if err := Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("a2av03: agent card: %w", err)
	}
	if len(probe.SupportedInterfaces) > 0 {
		var c a2a.AgentCard
		if err := a2a.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("a2av03: agent card: %w", err)
		}
		return &c, nil
	}
	var c AgentCard
	if err := Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("a2av03: agent card: %w", err)
	}
	v1, err := c.V1()
	if err != nil {
		return nil, fmt.Errorf("a2av03: agent card: %w", err)
	}
	return v1, nil
}

// HybridCard writes one card both versions read: the v1 card's JSON with
// the 0.3 card's members added where v1 has no member of that name, at
// every depth (top-level url, preferredTransport, additionalInterfaces,
// protocolVersion, security and supportsAuthenticatedExtendedCard; type,
// in, name, … beside each v1 security scheme's member; security in each
// skill). The two member sets do not collide, so each reader finds its
// own and ignores the other's.
//
// The v1 signatures are kept but no longer match: a signature covers the
// whole card, so a signed hybrid card must be signed as served, after this
// call.
func HybridCard(c *a2a.AgentCard) ([]byte, error) {
	v03, err := CardFromV1(c)
	if err != nil {
		return nil, err
	}
	a, err := genericJSON(c)
	if err != nil {
		return nil, err
	}
	b, err := genericJSON(v03)
	if err != nil {
		return nil, err
	}
	return json.Marshal(merge(a, b))
}

// genericJSON is v's JSON as maps and slices, numbers kept as written.
func genericJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// merge adds b's members to a where a has none of that name, into nested
// objects and into arrays of equal length element by element; where both
// have a value that is not an object, a's wins.
func merge(a, b any) any {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return a
		}
		for k, v := range bv {
			if old, ok := av[k]; ok {
				av[k] = merge(old, v)
			} else {
				av[k] = v
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return a
		}
		for i := range av {
			av[i] = merge(av[i], bv[i])
		}
	}
	return a
}
