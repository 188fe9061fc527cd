package a2a

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Unmarshal decodes A2A JSON into v the way ProtoJSON readers do: field names
// may be lowerCamelCase or the proto's snake_case, unknown fields are
// ignored. Keys inside free-form values (metadata, data parts, extension
// params, signature headers) and the names in maps keyed by the user
// (securitySchemes, scopes) are left untouched.
func Unmarshal(data []byte, v any) error {
	if bytes.IndexByte(data, '_') < 0 {
		return json.Unmarshal(data, v)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return json.Unmarshal(data, v) // report the decoder's own error
	}
	if !camelize(tree) {
		return json.Unmarshal(data, v)
	}
	norm, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return json.Unmarshal(norm, v)
}

// opaqueKeys hold values whose own keys belong to the user.
var opaqueKeys = map[string]bool{"metadata": true, "data": true, "params": true, "header": true}

// mapKeys hold maps whose keys are user-chosen names but whose values are
// schema objects.
var mapKeys = map[string]bool{"securitySchemes": true, "schemes": true}

// camelize rewrites snake_case keys in place; it reports whether anything
// changed.
func camelize(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			nk := k
			if strings.IndexByte(k, '_') >= 0 {
				nk = snakeToCamel(k)
			}
			if nk != k {
				if _, clash := t[nk]; !clash {
					delete(t, k)
					t[nk] = val
					changed = true
				}
			}
			switch {
			case opaqueKeys[nk]:
			case mapKeys[nk]:
				if m, ok := val.(map[string]any); ok {
					for _, inner := range m {
						changed = camelize(inner) || changed
					}
				}
			case nk == "scopes":
			default:
				changed = camelize(val) || changed
			}
		}
	case []any:
		for _, e := range t {
			changed = camelize(e) || changed
		}
	}
	return changed
}

func snakeToCamel(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = b.Len() > 0
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteByte(c)
	}
	return b.String()
}
