package cardsig

import (
	"bytes"
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jcs"
)

// Canonicalize returns the bytes a card signature covers: the card without
// its signatures, with empty values stripped, as RFC 8785 (JCS) JSON.
//
// Empty strings, empty lists, empty objects and nulls are removed at every
// depth (an object or list that becomes empty is removed in turn), the way
// @a2a-js/sdk's canonicalizeAgentCard does; false and 0 stay. Non-optional
// booleans that are false never reach the JSON because the model omits
// them (AgentExtension.Required, the OAuth flow's pkceRequired), while the
// optional capability booleans keep an explicit false. OAuth flows are read
// as the A2A schema defines them: the first flow set, with its own fields.
func Canonicalize(card *a2a.AgentCard) ([]byte, error) {
	c := *card
	c.Signatures = nil
	if len(c.SecuritySchemes) > 0 {
		c.SecuritySchemes = make(map[string]a2a.SecurityScheme, len(card.SecuritySchemes))
		for name, s := range card.SecuritySchemes {
			if s.OAuth2 != nil && len(s.OAuth2.Flows) > 0 {
				o := *s.OAuth2
				flows, err := normalizeFlows(o.Flows)
				if err != nil {
					return nil, fmt.Errorf("cardsig: security scheme %q: %w", name, err)
				}
				o.Flows = flows
				s.OAuth2 = &o
			}
			c.SecuritySchemes[name] = s
		}
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("cardsig: encode card: %w", err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("cardsig: decode card: %w", err)
	}
	tree = stripEmpty(tree)
	if tree == nil {
		return []byte("{}"), nil
	}
	if data, err = json.Marshal(tree); err != nil {
		return nil, fmt.Errorf("cardsig: encode card: %w", err)
	}
	out, err := jcs.Canonicalize(data, cardDepth)
	if err != nil {
		return nil, fmt.Errorf("cardsig: canonicalize card: %w", err)
	}
	return out, nil
}

// cardDepth admits any card encoding/json decodes: its own nesting limit
// is 10000.
var cardDepth = &jcs.Options{MaxDepth: 10000}

// CanonicalizeJSON parses a card's JSON with [a2a.Unmarshal] (field names
// in lowerCamelCase or snake_case, unknown fields ignored) and returns its
// canonical bytes.
func CanonicalizeJSON(data []byte) ([]byte, error) {
	var card a2a.AgentCard
	if err := a2a.Unmarshal(data, &card); err != nil {
		return nil, fmt.Errorf("cardsig: parse card: %w", err)
	}
	return Canonicalize(&card)
}

// oauthFlow holds every field an A2A OAuth flow may have; which ones a flow
// keeps depends on its kind (see flowKinds).
type oauthFlow struct {
	AuthorizationURL       string            `json:"authorizationUrl,omitempty"`
	DeviceAuthorizationURL string            `json:"deviceAuthorizationUrl,omitempty"`
	TokenURL               string            `json:"tokenUrl,omitempty"`
	RefreshURL             string            `json:"refreshUrl,omitempty"`
	Scopes                 map[string]string `json:"scopes,omitempty"`
	PKCERequired           bool              `json:"pkceRequired,omitempty"`
}

// flowKinds are the OAuthFlows oneof members in the order a reader picks
// the first one set, with the fields each keeps.
var flowKinds = []struct {
	name string
	keep func(f oauthFlow) oauthFlow
}{
	{"authorizationCode", func(f oauthFlow) oauthFlow {
		f.DeviceAuthorizationURL = ""
		return f
	}},
	{"clientCredentials", func(f oauthFlow) oauthFlow {
		return oauthFlow{TokenURL: f.TokenURL, RefreshURL: f.RefreshURL, Scopes: f.Scopes}
	}},
	{"implicit", func(f oauthFlow) oauthFlow {
		return oauthFlow{AuthorizationURL: f.AuthorizationURL, RefreshURL: f.RefreshURL, Scopes: f.Scopes}
	}},
	{"password", func(f oauthFlow) oauthFlow {
		return oauthFlow{TokenURL: f.TokenURL, RefreshURL: f.RefreshURL, Scopes: f.Scopes}
	}},
	{"deviceCode", func(f oauthFlow) oauthFlow {
		return oauthFlow{DeviceAuthorizationURL: f.DeviceAuthorizationURL, TokenURL: f.TokenURL, RefreshURL: f.RefreshURL, Scopes: f.Scopes}
	}},
}

// normalizeFlows reduces an OAuthFlows object to its schema: the first
// flow set, with that flow's fields only.
func normalizeFlows(raw json.RawMessage) (json.RawMessage, error) {
	var flows map[string]json.RawMessage
	if err := a2a.Unmarshal(raw, &flows); err != nil {
		return nil, fmt.Errorf("oauth flows: %w", err)
	}
	for _, k := range flowKinds {
		v, ok := flows[k.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		var f oauthFlow
		if err := a2a.Unmarshal(v, &f); err != nil {
			return nil, fmt.Errorf("oauth flow %s: %w", k.name, err)
		}
		out, err := json.Marshal(map[string]oauthFlow{k.name: k.keep(f)})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, nil
}

// stripEmpty removes "", null, and lists and objects that are (or become)
// empty. It returns nil for a value that is removed.
func stripEmpty(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
		return v
	case []any:
		out := v[:0]
		for _, e := range v {
			if e = stripEmpty(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		for k, e := range v {
			if e = stripEmpty(e); e == nil {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		if len(v) == 0 {
			return nil
		}
		return v
	}
	return v
}
