package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Unmarshal decodes A2A JSON into v the way ProtoJSON readers do, with
// field names matched exactly: a key fills a field only when it is the
// field's lowerCamelCase name or the proto's snake_case name (contextId or
// context_id). A key that differs from a field name only by case ("ID",
// "Metadata", "METHOD") fills nothing and is ignored like any unknown key,
// where encoding/json alone would fill the field with it. This holds for the
// fields of this package's types; keys inside free-form values (metadata,
// data parts, extension params, signature headers) and the names in maps
// keyed by the user (securitySchemes, scopes) are left untouched.
//
// A key repeated in one object, at any depth and inside free-form values
// too, makes the document ambiguous and is refused with a
// [*DuplicateKeyError]; a snake_case and a lowerCamelCase spelling of one
// field (contextId and context_id) count as the same key.
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
	norm, err := normalizeKeys(data)
	if err != nil {
		var dup *DuplicateKeyError
		if errors.As(err, &dup) {
			return err
		}
		// Let the decoder report the syntax error, decoding into a scratch
		// value so v is left as it was; should it accept what the key walk
		// did not, the document is still refused.
		var scratch any
		if jerr := json.Unmarshal(data, &scratch); jerr != nil {
			return jerr
		}
		return err
	}
	return json.Unmarshal(norm, v)
}

// DuplicateKeyError reports a key that appears more than once in one JSON
// object. encoding/json would keep the last value, other readers the first:
// a document that two readers understand differently is refused.
type DuplicateKeyError struct {
	// Key is the repeated key, as read (snake_case schema keys in their
	// lowerCamelCase form).
	Key string
	// Path locates the object holding it: "" for the top level, else
	// members and indexes such as message.parts[0].metadata.
	Path string
}

func (e *DuplicateKeyError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("duplicate key %s", quoteKey(e.Key))
	}
	return fmt.Sprintf("duplicate key %s in %s", quoteKey(e.Key), e.Path)
}

// quoteKey quotes a key for an error message, cut to a length a reader can
// take in.
func quoteKey(k string) string {
	const limit = 64
	if len(k) > limit {
		k = strings.ToValidUTF8(k[:limit], "") + "..."
	}
	return strconv.Quote(k)
}

// opaqueKeys hold values whose own keys belong to the user.
var opaqueKeys = []string{"metadata", "data", "params", "header", "scopes"}

// mapKeys hold maps whose keys are user-chosen names but whose values are
// schema objects.
var mapKeys = []string{"securitySchemes", "schemes"}

// childMode classifies the value of field name, matched exactly: a
// case variant such as "Metadata" is neutralized before it could reach
// encoding/json, so its value is never read.
func childMode(name []byte) keyMode {
	for _, k := range opaqueKeys {
		if string(name) == k {
			return modeOpaque
		}
	}
	for _, k := range mapKeys {
		if string(name) == k {
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
// lowerCamelCase form and keys that only differ from a field name by case
// with "", a name no field has; it refuses duplicate keys. out stays nil
// until the first replacement.
type keyRewriter struct {
	in   []byte
	pos  int
	out  []byte
	last int // in[last:pos] is not yet copied to out
	keys keyStack
	// path is where the walk is, kept only by the second walk over a
	// document found to repeat a key, to say where.
	path      []pathElem
	trackPath bool
}

// pathElem is one step of a path: a member's key, or an index when key is
// nil.
type pathElem struct {
	key []byte
	idx int
}

func normalizeKeys(data []byte) ([]byte, error) {
	r, err := walkKeys(data, modeSchema)
	if err != nil {
		return nil, err
	}
	if r.out == nil {
		return data, nil
	}
	return append(r.out, data[r.last:]...), nil
}

// walkKeys walks data's keys in mode; a walk that meets a repeated key is
// done again keeping the path, which only the error needs.
func walkKeys(data []byte, mode keyMode) (*keyRewriter, error) {
	r := &keyRewriter{in: data}
	err := r.value(mode, 0)
	if _, ok := err.(*DuplicateKeyError); ok {
		r = &keyRewriter{in: data, trackPath: true}
		err = r.value(mode, 0)
	}
	return r, err
}

// CheckKeys refuses a JSON document that repeats a key within one object,
// at any depth, with a *DuplicateKeyError saying where; malformed JSON gets
// encoding/json's syntax error. It is for A2A JSON read without
// Unmarshal's key rewriting (the v0.3 wire in a2av03), which encoding/json
// would read last-wins while another reader keeps the first value. Keys
// are compared exactly, after unescaping. The cost is linear in len(data).
func CheckKeys(data []byte) error {
	if !json.Valid(data) {
		var scratch any
		return json.Unmarshal(data, &scratch)
	}
	_, err := walkKeys(data, modeOpaque)
	return err
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
		if r.trackPath {
			r.path = append(r.path, pathElem{})
		}
		for i := 0; ; i++ {
			if r.trackPath {
				r.path[len(r.path)-1].idx = i
			}
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
				if r.trackPath {
					r.path = r.path[:len(r.path)-1]
				}
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

// keyName returns the text of the key token in[start:pos] as encoding/json
// reads it: escapes resolved, invalid UTF-8 replaced.
func (r *keyRewriter) keyName(start int, escaped bool) ([]byte, error) {
	raw := r.in[start+1 : r.pos-1]
	if !escaped && utf8.Valid(raw) {
		return raw, nil
	}
	var name string
	if err := json.Unmarshal(r.in[start:r.pos], &name); err != nil {
		return nil, errSyntax
	}
	return []byte(name), nil
}

func (r *keyRewriter) object(mode keyMode, depth int) error {
	r.pos++ // {
	r.skipSpace()
	if r.pos < len(r.in) && r.in[r.pos] == '}' {
		r.pos++
		return nil
	}
	keys := r.keys.open()
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
		name, err := r.keyName(start, escaped)
		if err != nil {
			return err
		}
		child := modeOpaque
		switch mode {
		case modeSchema:
			renamed := false
			if bytes.IndexByte(name, '_') >= 0 {
				if camel := snakeToCamel(string(name)); camel != string(name) {
					name, renamed = []byte(camel), true
				}
			}
			switch {
			case !isFieldName(name) && foldsToFieldName(name):
				// encoding/json would fill the field it folds to.
				r.replace(start, "")
			case renamed:
				r.replace(start, string(name))
				child = childMode(name)
			default:
				child = childMode(name)
			}
		case modeNames:
			child = modeSchema
		}
		if r.keys.add(&keys, name) {
			return &DuplicateKeyError{Key: string(name), Path: r.where()}
		}
		r.skipSpace()
		if r.pos >= len(r.in) || r.in[r.pos] != ':' {
			return errSyntax
		}
		r.pos++
		if r.trackPath {
			r.path = append(r.path, pathElem{key: name})
		}
		if err := r.value(child, depth+1); err != nil {
			return err
		}
		if r.trackPath {
			r.path = r.path[:len(r.path)-1]
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
			r.keys.close(keys)
			return nil
		default:
			return errSyntax
		}
	}
}

// where renders the current path for an error message.
func (r *keyRewriter) where() string {
	var b strings.Builder
	for _, e := range r.path {
		if e.key == nil {
			fmt.Fprintf(&b, "[%d]", e.idx)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if plainKey(e.key) {
			b.Write(e.key)
		} else {
			b.WriteString(quoteKey(string(e.key)))
		}
	}
	return b.String()
}

// plainKey reports whether k can stand unquoted in a path.
func plainKey(k []byte) bool {
	if len(k) == 0 || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
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

// keyStack holds the keys of the objects being read, innermost last, to
// find a repeated one. An object is scanned linearly while it is small and
// moves to a map once it is not, so every object costs time linear in its
// size.
type keyStack struct {
	keys [][]byte
	// compared counts the comparisons made, a map lookup counting one, so
	// that tests can bound the cost without a clock.
	compared int
}

// smallObject is the number of keys an object may have before its keys
// move to a map.
const smallObject = 16

// objectKeys is one open object's share of a keyStack.
type objectKeys struct {
	start int
	big   map[string]struct{}
}

func (s *keyStack) open() objectKeys { return objectKeys{start: len(s.keys)} }

func (s *keyStack) close(o objectKeys) { s.keys = s.keys[:o.start] }

// add records key in o and reports whether o already had it.
func (s *keyStack) add(o *objectKeys, key []byte) bool {
	if o.big != nil {
		s.compared++
		if _, dup := o.big[string(key)]; dup {
			return true
		}
		o.big[string(key)] = struct{}{}
		return false
	}
	for _, k := range s.keys[o.start:] {
		s.compared++
		if string(k) == string(key) {
			return true
		}
	}
	if s.keys == nil {
		s.keys = make([][]byte, 0, smallObject/2)
	}
	s.keys = append(s.keys, key)
	if len(s.keys)-o.start > smallObject {
		o.big = make(map[string]struct{}, 2*smallObject)
		for _, k := range s.keys[o.start:] {
			o.big[string(k)] = struct{}{}
		}
		s.keys = s.keys[:o.start]
	}
	return false
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
