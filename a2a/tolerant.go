package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Unmarshal decodes A2A JSON into v the way ProtoJSON readers do: field names
// may be lowerCamelCase or the proto's snake_case, unknown fields are
// ignored. Keys inside free-form values (metadata, data parts, extension
// params, signature headers) and the names in maps keyed by the user
// (securitySchemes, scopes) are left untouched. When a snake_case and a
// lowerCamelCase spelling of one field both appear, the later one wins, as
// for any duplicate key.
//
// Only object keys are rewritten, in place in a copy of data; every value is
// passed on byte for byte, so numbers keep their precision and data parts
// their exact text.
//
// Tasks, messages, stream frames and the SendMessage request and response
// take a hand-written fast path with the same result (see decode.go); the
// strings it decodes share one copy of data, so holding any of them keeps
// that copy alive. data itself is never retained.
func Unmarshal(data []byte, v any) error {
	if fastUnmarshal(data, v) {
		return nil
	}
	return unmarshalGeneral(data, v)
}

// unmarshalGeneral is Unmarshal without the fast path: it defines the
// result, which the fast path only reproduces sooner.
func unmarshalGeneral(data []byte, v any) error {
	if !snakeKeys(data) {
		return json.Unmarshal(data, v)
	}
	norm, err := camelizeKeys(data)
	if err != nil {
		return json.Unmarshal(data, v) // let the decoder report the syntax error
	}
	return json.Unmarshal(norm, v)
}

// opaqueKeys hold values whose own keys belong to the user.
var opaqueKeys = []string{"metadata", "data", "params", "header", "scopes"}

// mapKeys hold maps whose keys are user-chosen names but whose values are
// schema objects.
var mapKeys = []string{"securitySchemes", "schemes"}

// childMode classifies the value of field name. The comparison ignores case
// because encoding/json matches field names that way ("Metadata" fills
// Metadata too).
func childMode(name string) keyMode {
	for _, k := range opaqueKeys {
		if strings.EqualFold(k, name) {
			return modeOpaque
		}
	}
	for _, k := range mapKeys {
		if strings.EqualFold(k, name) {
			return modeNames
		}
	}
	return modeSchema
}

type keyMode int

const (
	modeSchema keyMode = iota // keys are field names: rewrite them
	modeOpaque                // user data: copy verbatim
	modeNames                 // keys are user names, values are schema objects
)

// maxNesting matches encoding/json's own nesting limit.
const maxNesting = 10000

var errSyntax = errors.New("a2a: malformed JSON")

// keyRewriter copies its input, replacing snake_case object keys with their
// lowerCamelCase form. out stays nil until the first replacement.
type keyRewriter struct {
	in   []byte
	pos  int
	out  []byte
	last int // in[last:pos] is not yet copied to out
}

func camelizeKeys(data []byte) ([]byte, error) {
	r := &keyRewriter{in: data}
	if err := r.value(modeSchema, 0); err != nil {
		return nil, err
	}
	if r.out == nil {
		return data, nil
	}
	return append(r.out, data[r.last:]...), nil
}

func (r *keyRewriter) skipSpace() {
	for r.pos < len(r.in) {
		switch r.in[r.pos] {
		case ' ', '\t', '\r', '\n':
			r.pos++
		default:
			return
		}
	}
}

func (r *keyRewriter) value(mode keyMode, depth int) error {
	if depth > maxNesting {
		return errSyntax
	}
	r.skipSpace()
	if r.pos >= len(r.in) {
		return errSyntax
	}
	switch r.in[r.pos] {
	case '{':
		return r.object(mode, depth)
	case '[':
		r.pos++
		r.skipSpace()
		if r.pos < len(r.in) && r.in[r.pos] == ']' {
			r.pos++
			return nil
		}
		for {
			if err := r.value(mode, depth+1); err != nil {
				return err
			}
			r.skipSpace()
			if r.pos >= len(r.in) {
				return errSyntax
			}
			switch r.in[r.pos] {
			case ',':
				r.pos++
			case ']':
				r.pos++
				return nil
			default:
				return errSyntax
			}
		}
	case '"':
		_, err := r.str()
		return err
	default:
		start := r.pos
		for r.pos < len(r.in) {
			switch r.in[r.pos] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				if r.pos == start {
					return errSyntax
				}
				return nil
			}
			r.pos++
		}
		if r.pos == start {
			return errSyntax
		}
		return nil
	}
}

// str skips a string token and reports whether it holds an escape.
func (r *keyRewriter) str() (escaped bool, err error) {
	r.pos++ // opening quote
	for r.pos < len(r.in) {
		switch r.in[r.pos] {
		case '\\':
			escaped = true
			r.pos += 2
			continue
		case '"':
			r.pos++
			return escaped, nil
		}
		r.pos++
	}
	return false, errSyntax
}

func (r *keyRewriter) object(mode keyMode, depth int) error {
	r.pos++ // {
	r.skipSpace()
	if r.pos < len(r.in) && r.in[r.pos] == '}' {
		r.pos++
		return nil
	}
	for {
		r.skipSpace()
		if r.pos >= len(r.in) || r.in[r.pos] != '"' {
			return errSyntax
		}
		start := r.pos
		escaped, err := r.str()
		if err != nil {
			return err
		}
		child := modeOpaque
		switch mode {
		case modeSchema:
			name := string(r.in[start+1 : r.pos-1])
			if escaped {
				if err := json.Unmarshal(r.in[start:r.pos], &name); err != nil {
					return errSyntax
				}
			}
			if strings.IndexByte(name, '_') >= 0 {
				if camel := snakeToCamel(name); camel != name {
					r.replace(start, camel)
					name = camel
				}
			}
			child = childMode(name)
		case modeNames:
			child = modeSchema
		}
		r.skipSpace()
		if r.pos >= len(r.in) || r.in[r.pos] != ':' {
			return errSyntax
		}
		r.pos++
		if err := r.value(child, depth+1); err != nil {
			return err
		}
		r.skipSpace()
		if r.pos >= len(r.in) {
			return errSyntax
		}
		switch r.in[r.pos] {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// replace substitutes the key token in[start:pos] with name.
func (r *keyRewriter) replace(start int, name string) {
	if r.out == nil {
		r.out = make([]byte, 0, len(r.in)+16)
	}
	r.out = append(r.out, r.in[r.last:start]...)
	r.out = appendString(r.out, name)
	r.last = r.pos
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

// snakeKeys reports whether any object key in data may hold an underscore
// (or an escape that could spell one). Values are not looked at: enum names
// such as TASK_STATE_COMPLETED are everywhere in A2A JSON, and sending every
// such document down the rewriting path would double the cost of a decode.
// Malformed input answers true so the caller's slow path reports the error.
func snakeKeys(data []byte) bool {
	if bytes.IndexByte(data, '_') < 0 && !bytes.Contains(data, []byte(`\u005`)) {
		return false
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		suspicious := false
		for i++; i < len(data) && data[i] != '"'; i++ {
			switch data[i] {
			case '_':
				suspicious = true
			case '\\':
				suspicious = true
				i++
			}
		}
		if i >= len(data) {
			return true
		}
		if !suspicious {
			continue
		}
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == ':' {
			return true
		}
	}
	return false
}
