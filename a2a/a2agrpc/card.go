package a2agrpc

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apb"
)

// AgentCardToPB converts an agent card (the result of
// GetExtendedAgentCard). The OAuth flows, raw JSON in the wire model, are
// read as the proto's OAuthFlows: members it does not define are dropped,
// and a value of the wrong type is an error.
func AgentCardToPB(c *a2a.AgentCard) (*a2apb.AgentCard, error) {
	if c == nil {
		c = &a2a.AgentCard{}
	}
	out := &a2apb.AgentCard{
		Name:               validString(c.Name),
		Description:        validString(c.Description),
		Version:            validString(c.Version),
		DocumentationUrl:   validStringPtr(c.DocumentationURL),
		DefaultInputModes:  validStrings(c.DefaultInputModes),
		DefaultOutputModes: validStrings(c.DefaultOutputModes),
		IconUrl:            validStringPtr(c.IconURL),
	}
	for _, i := range c.SupportedInterfaces {
		out.SupportedInterfaces = append(out.SupportedInterfaces, &a2apb.AgentInterface{
			Url: validString(i.URL), ProtocolBinding: validString(i.ProtocolBinding),
			Tenant: validString(i.Tenant), ProtocolVersion: validString(i.ProtocolVersion),
		})
	}
	if p := c.Provider; p != nil {
		out.Provider = &a2apb.AgentProvider{Url: validString(p.URL), Organization: validString(p.Organization)}
	}
	caps := &a2apb.AgentCapabilities{
		Streaming:         c.Capabilities.Streaming,
		PushNotifications: c.Capabilities.PushNotifications,
		ExtendedAgentCard: c.Capabilities.ExtendedAgentCard,
	}
	for i, e := range c.Capabilities.Extensions {
		params, err := structToPB(e.Params)
		if err != nil {
			return nil, wrap(at("capabilities", atIndex("extensions", i, at("params", err))))
		}
		caps.Extensions = append(caps.Extensions, &a2apb.AgentExtension{
			Uri: validString(e.URI), Description: validString(e.Description), Required: e.Required, Params: params,
		})
	}
	out.Capabilities = caps
	if len(c.SecuritySchemes) > 0 {
		out.SecuritySchemes = make(map[string]*a2apb.SecurityScheme, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			ps, err := securitySchemeToPB(&s)
			if err != nil {
				return nil, wrap(at("securitySchemes", at(jsonQuote(name), err)))
			}
			out.SecuritySchemes[validString(name)] = ps
		}
	}
	out.SecurityRequirements = requirementsToPB(c.SecurityRequirements)
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, &a2apb.AgentSkill{
			Id: validString(s.ID), Name: validString(s.Name), Description: validString(s.Description),
			Tags: validStrings(s.Tags), Examples: validStrings(s.Examples),
			InputModes: validStrings(s.InputModes), OutputModes: validStrings(s.OutputModes),
			SecurityRequirements: requirementsToPB(s.SecurityRequirements),
		})
	}
	for i, s := range c.Signatures {
		header, err := structToPB(s.Header)
		if err != nil {
			return nil, wrap(atIndex("signatures", i, at("header", err)))
		}
		out.Signatures = append(out.Signatures, &a2apb.AgentCardSignature{
			Protected: validString(s.Protected), Signature: validString(s.Signature), Header: header,
		})
	}
	return out, nil
}

// AgentCardFromPB converts an agent card.
func AgentCardFromPB(c *a2apb.AgentCard) (*a2a.AgentCard, error) {
	out := &a2a.AgentCard{
		Name:               c.GetName(),
		Description:        c.GetDescription(),
		Version:            c.GetVersion(),
		DocumentationURL:   c.DocumentationUrl,
		DefaultInputModes:  emptyToNil(c.GetDefaultInputModes()),
		DefaultOutputModes: emptyToNil(c.GetDefaultOutputModes()),
		IconURL:            c.IconUrl,
	}
	for _, i := range c.GetSupportedInterfaces() {
		out.SupportedInterfaces = append(out.SupportedInterfaces, a2a.AgentInterface{
			URL: i.GetUrl(), ProtocolBinding: i.GetProtocolBinding(), Tenant: i.GetTenant(), ProtocolVersion: i.GetProtocolVersion(),
		})
	}
	if p := c.GetProvider(); p != nil {
		out.Provider = &a2a.AgentProvider{URL: p.GetUrl(), Organization: p.GetOrganization()}
	}
	caps := c.GetCapabilities()
	if caps != nil {
		out.Capabilities = a2a.AgentCapabilities{
			Streaming:         caps.Streaming,
			PushNotifications: caps.PushNotifications,
			ExtendedAgentCard: caps.ExtendedAgentCard,
		}
	}
	for i, e := range caps.GetExtensions() {
		params, err := structFromPB(e.GetParams())
		if err != nil {
			return nil, wrap(at("capabilities", atIndex("extensions", i, at("params", err))))
		}
		out.Capabilities.Extensions = append(out.Capabilities.Extensions, a2a.AgentExtension{
			URI: e.GetUri(), Description: e.GetDescription(), Required: e.GetRequired(), Params: params,
		})
	}
	if len(c.GetSecuritySchemes()) > 0 {
		out.SecuritySchemes = make(map[string]a2a.SecurityScheme, len(c.GetSecuritySchemes()))
		for name, s := range c.GetSecuritySchemes() {
			as, err := securitySchemeFromPB(s)
			if err != nil {
				return nil, wrap(at("securitySchemes", at(jsonQuote(name), err)))
			}
			out.SecuritySchemes[name] = as
		}
	}
	out.SecurityRequirements = requirementsFromPB(c.GetSecurityRequirements())
	for _, s := range c.GetSkills() {
		out.Skills = append(out.Skills, a2a.AgentSkill{
			ID: s.GetId(), Name: s.GetName(), Description: s.GetDescription(),
			Tags: emptyToNil(s.GetTags()), Examples: emptyToNil(s.GetExamples()),
			InputModes: emptyToNil(s.GetInputModes()), OutputModes: emptyToNil(s.GetOutputModes()),
			SecurityRequirements: requirementsFromPB(s.GetSecurityRequirements()),
		})
	}
	for i, s := range c.GetSignatures() {
		header, err := structFromPB(s.GetHeader())
		if err != nil {
			return nil, wrap(atIndex("signatures", i, at("header", err)))
		}
		out.Signatures = append(out.Signatures, a2a.AgentCardSignature{
			Protected: s.GetProtected(), Signature: s.GetSignature(), Header: header,
		})
	}
	return out, nil
}

func validStringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := validString(*s)
	return &v
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func requirementsToPB(rs []a2a.SecurityRequirement) []*a2apb.SecurityRequirement {
	var out []*a2apb.SecurityRequirement
	for _, r := range rs {
		pr := &a2apb.SecurityRequirement{}
		if len(r.Schemes) > 0 {
			pr.Schemes = make(map[string]*a2apb.StringList, len(r.Schemes))
			for name, l := range r.Schemes {
				pr.Schemes[validString(name)] = &a2apb.StringList{List: validStrings(l.List)}
			}
		}
		out = append(out, pr)
	}
	return out
}

func requirementsFromPB(rs []*a2apb.SecurityRequirement) []a2a.SecurityRequirement {
	var out []a2a.SecurityRequirement
	for _, r := range rs {
		var ar a2a.SecurityRequirement
		if len(r.GetSchemes()) > 0 {
			ar.Schemes = make(map[string]a2a.StringList, len(r.GetSchemes()))
			for name, l := range r.GetSchemes() {
				ar.Schemes[name] = a2a.StringList{List: emptyToNil(l.GetList())}
			}
		}
		out = append(out, ar)
	}
	return out
}

func securitySchemeToPB(s *a2a.SecurityScheme) (*a2apb.SecurityScheme, error) {
	out := &a2apb.SecurityScheme{}
	n := 0
	if k := s.APIKey; k != nil {
		n++
		out.Scheme = &a2apb.SecurityScheme_ApiKeySecurityScheme{ApiKeySecurityScheme: &a2apb.APIKeySecurityScheme{
			Description: validString(k.Description), Location: validString(k.Location), Name: validString(k.Name),
		}}
	}
	if h := s.HTTPAuth; h != nil {
		n++
		out.Scheme = &a2apb.SecurityScheme_HttpAuthSecurityScheme{HttpAuthSecurityScheme: &a2apb.HTTPAuthSecurityScheme{
			Description: validString(h.Description), Scheme: validString(h.Scheme), BearerFormat: validString(h.BearerFormat),
		}}
	}
	if o := s.OAuth2; o != nil {
		n++
		flows, err := flowsToPB(o.Flows)
		if err != nil {
			return nil, at("oauth2SecurityScheme", at("flows", err))
		}
		out.Scheme = &a2apb.SecurityScheme_Oauth2SecurityScheme{Oauth2SecurityScheme: &a2apb.OAuth2SecurityScheme{
			Description: validString(o.Description), Flows: flows, Oauth2MetadataUrl: validString(o.OAuth2MetadataURL),
		}}
	}
	if o := s.OpenIDConnect; o != nil {
		n++
		out.Scheme = &a2apb.SecurityScheme_OpenIdConnectSecurityScheme{OpenIdConnectSecurityScheme: &a2apb.OpenIdConnectSecurityScheme{
			Description: validString(o.Description), OpenIdConnectUrl: validString(o.OpenIDConnectURL),
		}}
	}
	if m := s.MTLS; m != nil {
		n++
		out.Scheme = &a2apb.SecurityScheme_MtlsSecurityScheme{MtlsSecurityScheme: &a2apb.MutualTlsSecurityScheme{
			Description: validString(m.Description),
		}}
	}
	if n > 1 {
		return nil, ErrOneof
	}
	return out, nil
}

func securitySchemeFromPB(s *a2apb.SecurityScheme) (a2a.SecurityScheme, error) {
	var out a2a.SecurityScheme
	switch k := s.GetScheme().(type) {
	case *a2apb.SecurityScheme_ApiKeySecurityScheme:
		v := k.ApiKeySecurityScheme
		out.APIKey = &a2a.APIKeySecurityScheme{Description: v.GetDescription(), Location: v.GetLocation(), Name: v.GetName()}
	case *a2apb.SecurityScheme_HttpAuthSecurityScheme:
		v := k.HttpAuthSecurityScheme
		out.HTTPAuth = &a2a.HTTPAuthSecurityScheme{Description: v.GetDescription(), Scheme: v.GetScheme(), BearerFormat: v.GetBearerFormat()}
	case *a2apb.SecurityScheme_Oauth2SecurityScheme:
		v := k.Oauth2SecurityScheme
		flows, err := flowsFromPB(v.GetFlows())
		if err != nil {
			return out, at("oauth2SecurityScheme", at("flows", err))
		}
		out.OAuth2 = &a2a.OAuth2SecurityScheme{Description: v.GetDescription(), Flows: flows, OAuth2MetadataURL: v.GetOauth2MetadataUrl()}
	case *a2apb.SecurityScheme_OpenIdConnectSecurityScheme:
		v := k.OpenIdConnectSecurityScheme
		out.OpenIDConnect = &a2a.OpenIDConnectSecurityScheme{Description: v.GetDescription(), OpenIDConnectURL: v.GetOpenIdConnectUrl()}
	case *a2apb.SecurityScheme_MtlsSecurityScheme:
		out.MTLS = &a2a.MutualTLSSecurityScheme{Description: k.MtlsSecurityScheme.GetDescription()}
	}
	return out, nil
}

// flowsToPB reads the wire model's raw OAuth flows as ProtoJSON, the
// format they are written in.
func flowsToPB(raw json.RawMessage) (*a2apb.OAuthFlows, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	flows := &a2apb.OAuthFlows{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, flows); err != nil {
		return nil, err
	}
	return flows, nil
}

// flowsFromPB writes OAuth flows as ProtoJSON, compacted: protojson varies
// its spacing from build to build on purpose.
func flowsFromPB(f *a2apb.OAuthFlows) (json.RawMessage, error) {
	if f == nil {
		return nil, nil
	}
	b, err := protojson.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
