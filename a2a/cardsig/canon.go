package cardsig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
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
	return appendJCS(make([]byte, 0, len(data)), tree), nil
}

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

// appendJCS appends v, a tree decoded by encoding/json, as RFC 8785 JSON.
func appendJCS(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case float64:
		return appendNumber(b, v)
	case string:
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJCS(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendJCS(b, v[k])
		}
		return append(b, '}')
	}
	// encoding/json decodes into the types above only.
	panic(fmt.Sprintf("cardsig: unexpected %T in decoded JSON", v))
}

// appendNumber writes f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3): the shortest round-tripping digits, plain notation
// from 1e-6 up to 1e21, exponent notation outside it.
func appendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // also -0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	n := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	// Go writes e-07 and e+07; ECMAScript writes e-7 and e+7.
	if i := bytes.IndexByte(b[n:], 'e'); i >= 0 {
		i += n + 2
		if i < len(b)-1 && b[i] == '0' {
			b = append(b[:i], b[i+1:]...)
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string escaping only what RFC 8785
// requires: the quote, the backslash and control characters, with the
// short forms where JSON has them. s is valid UTF-8 (encoding/json
// produced it).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// sorts object keys. UTF-8 byte order agrees except when a character
// above U+FFFF meets one in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmpUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// cmpUnits compares the first UTF-16 code units of two different runes.
func cmpUnits(a, b rune) int {
	ua, ub := a, b
	if a > 0xffff {
		ua, _ = utf16.EncodeRune(a)
	}
	if b > 0xffff {
		ub, _ = utf16.EncodeRune(b)
	}
	if ua != ub {
		return int(ua) - int(ub)
	}
	// Same high surrogate: the rest of the code point decides, and it
	// orders as the code point does.
	return int(a) - int(b)
}
