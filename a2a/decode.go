package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/bits"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoder in this file is the read-side twin of the Append encoders: a
// hand-written parser for the hot types (Task, Message, StreamResponse,
// SendMessageResponse, SendMessageRequest) that Unmarshal tries first.
//
// It is a fast path, not a second definition of the format. It accepts a
// document only when it can decode it exactly as encoding/json (after the
// snake_case rewrite and the neutralizing of case variants) would, and
// declines everything else: a snake_case or escaped key, a duplicate key
// anywhere (the general path names it in its error), a null where a schema
// value belongs, a lone surrogate, invalid UTF-8, nesting deeper than
// fastMaxDepth, anything malformed. A key that is not a field of the
// object's type is skipped, as the general path ignores it whether or not
// it folds to a field name; the value skipped must hold no snake_case key,
// because the general path compares such keys in their lowerCamelCase
// form. A declined document goes to the general path, which also writes
// every error message, so the two paths differ only in speed;
// FuzzFastDecode checks that.
//
// Decoded strings are substrings of one copy of the input, made once per
// call: a decoded Task costs one allocation for all its strings rather
// than one per string, at the price of keeping that copy alive as long as
// any of its strings is.

// errDecline makes the fast path give a document to the general path.
var errDecline = errors.New("a2a: fast decoder declined")

// fastMaxDepth bounds the fast path's recursion; deeper documents are
// legal and take the general path.
const fastMaxDepth = 256

// fastUnmarshal decodes data into v when v is one of the hot types and
// holds its zero value (encoding/json merges into a non-zero value, which
// the fast path does not imitate). It reports whether it did.
func fastUnmarshal(data []byte, v any) bool {
	switch v := v.(type) {
	case *Task:
		return fastInto(data, v, taskFields)
	case *Message:
		return fastInto(data, v, messageFields)
	case *StreamResponse:
		return fastInto(data, v, streamResponseFields)
	case *SendMessageResponse:
		return fastInto(data, v, sendMessageResponseFields)
	case *SendMessageRequest:
		return fastInto(data, v, sendMessageRequestFields)
	}
	return false
}

func fastInto[T any](data []byte, v *T, fields []fieldDecoder[T]) bool {
	if !reflect.ValueOf(v).Elem().IsZero() {
		return false
	}
	d := &fastDecoder{b: data}
	if d.root(func() error { return decodeObject(d, v, fields) }) != nil {
		var zero T
		*v = zero // for the general path, which would merge into a partial value
		return false
	}
	return true
}

type fastDecoder struct {
	b     []byte
	s     string // one copy of b, made at the first string decoded
	i     int
	depth int
	// own makes each string its own copy instead of a part of s, for
	// callers that decode a few short strings out of a large input.
	own bool
	// lax skips values without looking for duplicate keys in them: the
	// JSON-RPC envelopes leave their params and result to a later decode
	// that checks them.
	lax bool
	// noSnake declines a snake_case key in the value being skipped.
	noSnake bool
	keys    keyStack
}

// root decodes one value that must fill the whole input.
func (d *fastDecoder) root(value func() error) error {
	if err := value(); err != nil {
		return err
	}
	d.ws()
	if d.i != len(d.b) {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (d *fastDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *fastDecoder) consume(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

// seq walks a container from open to close, calling item for each
// comma-separated item.
func (d *fastDecoder) seq(open, close byte, item func() error) error {
	if !d.consume(open) {
		return errDecline
	}
	d.depth++
	if d.depth > fastMaxDepth {
		return errDecline
	}
	if d.consume(close) {
		d.depth--
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case close:
			d.i++
			d.depth--
			return nil
		default:
			return errDecline
		}
	}
}

// array calls elem for each element of an array.
func (d *fastDecoder) array(elem func() error) error { return d.seq('[', ']', elem) }

// object calls member for each key of an object in turn; member decodes
// the value. Keys are returned raw and must not hold escapes.
func (d *fastDecoder) object(member func(key []byte) error) error {
	return d.seq('{', '}', func() error {
		if d.peek() != '"' {
			return errDecline
		}
		d.i++
		start := d.i
		for d.i < len(d.b) && d.b[d.i] != '"' && d.b[d.i] != '\\' && d.b[d.i] >= 0x20 {
			d.i++
		}
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return errDecline
		}
		key := d.b[start:d.i]
		d.i++
		if !d.consume(':') {
			return errDecline
		}
		return member(key)
	})
}

// str decodes a JSON string; null declines.
func (d *fastDecoder) str() (string, error) {
	if d.peek() != '"' {
		return "", errDecline
	}
	if d.s == "" && !d.own {
		d.s = string(d.b)
	}
	d.i++
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			var s string
			if d.own {
				s = string(d.b[start:d.i])
			} else {
				s = d.s[start:d.i]
			}
			d.i++
			if !ascii && !utf8.ValidString(s) {
				return "", errDecline // encoding/json would substitute U+FFFD
			}
			return s, nil
		case c == '\\':
			return d.escapedStr(start)
		case c < 0x20:
			return "", errDecline
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", errDecline
}

// escapedStr finishes a string that holds an escape; d.i is at the first
// backslash and start just after the opening quote.
func (d *fastDecoder) escapedStr(start int) (string, error) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", errDecline
			}
			return string(out), nil
		case c < 0x20:
			return "", errDecline
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", errDecline
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", errDecline
			}
			if utf16.IsSurrogate(r) {
				if d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return "", errDecline // lone surrogate
				}
				d.i += 2
				r2, ok := d.hex4()
				if !ok {
					return "", errDecline
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", errDecline
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errDecline
		}
	}
	return "", errDecline
}

func (d *fastDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

func (d *fastDecoder) boolean() (bool, error) {
	d.ws()
	switch {
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		return true, nil
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		return false, nil
	}
	return false, errDecline
}

// strings decodes an array of strings; [] is an empty, non-nil slice, as
// encoding/json makes it.
func (d *fastDecoder) strings() ([]string, error) {
	out := []string{}
	err := d.array(func() error {
		s, err := d.str()
		out = append(out, s)
		return err
	})
	return out, err
}

// skip checks and passes over one value, returning its text.
func (d *fastDecoder) skip() ([]byte, error) {
	d.ws()
	start := d.i
	if d.i >= len(d.b) {
		return nil, errDecline
	}
	var err error
	switch c := d.b[d.i]; {
	case c == '{' && d.lax:
		err = d.object(func([]byte) error { _, err := d.skip(); return err })
	case c == '{':
		keys := d.keys.open()
		err = d.object(func(key []byte) error {
			if d.noSnake && bytes.IndexByte(key, '_') >= 0 || !utf8.Valid(key) || d.keys.add(&keys, key) {
				return errDecline
			}
			_, err := d.skip()
			return err
		})
		d.keys.close(keys)
	case c == '[':
		err = d.array(func() error { _, err := d.skip(); return err })
	case c == '"':
		err = d.skipStr()
	case c == 't' || c == 'f':
		_, err = d.boolean()
	case c == 'n':
		err = d.null()
	default:
		_, err = d.number()
	}
	if err != nil {
		return nil, err
	}
	return d.b[start:d.i], nil
}

func (d *fastDecoder) null() error {
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return nil
	}
	return errDecline
}

// skipStr passes over a string, checking its escapes.
func (d *fastDecoder) skipStr() error {
	d.i++
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return nil
		case c < 0x20:
			return errDecline
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return errDecline
			}
			d.i++
			switch d.b[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				d.i++
				if _, ok := d.hex4(); !ok {
					return errDecline
				}
			default:
				return errDecline
			}
		default:
			d.i++
		}
	}
	return errDecline
}

// number passes over a number in JSON's strict grammar and returns its
// text.
func (d *fastDecoder) number() (string, error) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return "", errDecline
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return "", errDecline
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return "", errDecline
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return string(b[start:i]), nil
}

// anyValue decodes a free-form value the way encoding/json fills an
// interface: objects become map[string]any, arrays []any, numbers float64.
func (d *fastDecoder) anyValue() (any, error) {
	switch d.peek() {
	case '{':
		return d.anyObject()
	case '[':
		out := []any{}
		err := d.array(func() error {
			v, err := d.anyValue()
			out = append(out, v)
			return err
		})
		return out, err
	case '"':
		return d.str()
	case 't', 'f':
		return d.boolean()
	case 'n':
		return nil, d.null()
	case 0:
		return nil, errDecline
	}
	n, err := d.number()
	if err != nil {
		return nil, err
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return nil, errDecline // out of range: encoding/json reports it
	}
	return f, nil
}

// anyObject decodes an object of free-form values; keys may hold escapes
// here, and a repeated key declines.
func (d *fastDecoder) anyObject() (map[string]any, error) {
	m := map[string]any{}
	err := d.seq('{', '}', func() error {
		k, err := d.str()
		if err != nil {
			return err
		}
		if _, dup := m[k]; dup || !d.consume(':') {
			return errDecline
		}
		v, err := d.anyValue()
		m[k] = v
		return err
	})
	return m, err
}

// metadata decodes a metadata map; null declines (it would set nil, but
// it is rare enough not to be worth a special case).
func (d *fastDecoder) metadata() (map[string]any, error) {
	if d.peek() != '{' {
		return nil, errDecline
	}
	return d.anyObject()
}

// viaGeneral decodes the next value into v with the general path: the types
// that are rare on the hot path keep a single definition.
func (d *fastDecoder) viaGeneral(v any) error {
	raw, err := d.skip()
	if err != nil {
		return err
	}
	if unmarshalGeneral(raw, v) != nil {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) role(r *Role) error {
	raw, err := d.skip()
	if err != nil {
		return err
	}
	switch string(raw) {
	case `"ROLE_USER"`:
		*r = RoleUser
	case `"ROLE_AGENT"`:
		*r = RoleAgent
	default:
		if r.UnmarshalJSON(raw) != nil {
			return errDecline
		}
	}
	return nil
}

func (d *fastDecoder) state(s *TaskState) error {
	raw, err := d.skip()
	if err != nil {
		return err
	}
	if name, ok := plainString(raw); ok {
		if v, ok := taskStateByName[string(name)]; ok {
			*s = v
			return nil
		}
	}
	if s.UnmarshalJSON(raw) != nil {
		return errDecline
	}
	return nil
}

// fieldDecoder decodes the value of one member of a T.
type fieldDecoder[T any] struct {
	name   string
	decode func(d *fastDecoder, v *T) error
}

// decodeFields decodes an object into v through its members' decoders and
// returns the set of members seen, by their index in fields (at most 32).
func decodeFields[T any](d *fastDecoder, v *T, fields []fieldDecoder[T]) (seen uint32, err error) {
	others := d.keys.open() // keys that are not fields
	err = d.object(func(key []byte) error {
		for i := range fields {
			if string(key) != fields[i].name {
				continue
			}
			bit := uint32(1) << i
			if seen&bit != 0 {
				return errDecline // duplicate: encoding/json would merge
			}
			seen |= bit
			return fields[i].decode(d, v)
		}
		// A key the general path would rewrite from snake_case may name
		// a field, and a key that is not ASCII folds by Unicode's rules:
		// both decline. Any other key fills no field, even one that
		// differs from a field name only by case, and is skipped.
		for _, c := range key {
			if c >= utf8.RuneSelf || c == '_' {
				return errDecline
			}
		}
		if d.keys.add(&others, key) {
			return errDecline
		}
		outer := d.noSnake
		d.noSnake = true
		_, err := d.skip()
		d.noSnake = outer
		return err
	})
	d.keys.close(others)
	return seen, err
}

func decodeObject[T any](d *fastDecoder, v *T, fields []fieldDecoder[T]) error {
	_, err := decodeFields(d, v, fields)
	return err
}

// newObject decodes an object into a fresh T; null declines.
func newObject[T any](d *fastDecoder, fields []fieldDecoder[T]) (*T, error) {
	v := new(T)
	return v, decodeObject(d, v, fields)
}

// objects decodes an array of objects; [] is an empty, non-nil slice.
func objects[T any](d *fastDecoder, fields []fieldDecoder[T]) ([]T, error) {
	out := []T{}
	err := d.array(func() error {
		var zero T
		out = append(out, zero)
		return decodeObject(d, &out[len(out)-1], fields)
	})
	return out, err
}

// partContent is the set of Part's content members in partFields.
const partContent = 1<<0 | 1<<1 | 1<<2 | 1<<3

var partFields = []fieldDecoder[Part]{
	{"text", func(d *fastDecoder, p *Part) (err error) { p.Kind = PartText; p.Text, err = d.str(); return }},
	{"raw", func(d *fastDecoder, p *Part) error {
		p.Kind = PartRaw
		s, err := d.str()
		if err != nil {
			return err
		}
		if p.Raw, err = decodeBase64(s); err != nil {
			return errDecline
		}
		return nil
	}},
	{"url", func(d *fastDecoder, p *Part) (err error) { p.Kind = PartURL; p.URL, err = d.str(); return }},
	{"data", func(d *fastDecoder, p *Part) error {
		p.Kind = PartData
		raw, err := d.skip()
		p.Data = append(json.RawMessage(nil), raw...)
		return err
	}},
	{"filename", func(d *fastDecoder, p *Part) (err error) { p.Filename, err = d.str(); return }},
	{"mediaType", func(d *fastDecoder, p *Part) (err error) { p.MediaType, err = d.str(); return }},
	{"metadata", func(d *fastDecoder, p *Part) (err error) { p.Metadata, err = d.metadata(); return }},
}

// parts decodes a list of parts, each with exactly one content member.
func (d *fastDecoder) parts() ([]Part, error) {
	out := []Part{}
	err := d.array(func() error {
		out = append(out, Part{})
		seen, err := decodeFields(d, &out[len(out)-1], partFields)
		if err == nil && bits.OnesCount32(seen&partContent) != 1 {
			return errDecline
		}
		return err
	})
	return out, err
}

var messageFields = []fieldDecoder[Message]{
	{"messageId", func(d *fastDecoder, m *Message) (err error) { m.MessageID, err = d.str(); return }},
	{"contextId", func(d *fastDecoder, m *Message) (err error) { m.ContextID, err = d.str(); return }},
	{"taskId", func(d *fastDecoder, m *Message) (err error) { m.TaskID, err = d.str(); return }},
	{"role", func(d *fastDecoder, m *Message) error { return d.role(&m.Role) }},
	{"parts", func(d *fastDecoder, m *Message) (err error) { m.Parts, err = d.parts(); return }},
	{"metadata", func(d *fastDecoder, m *Message) (err error) { m.Metadata, err = d.metadata(); return }},
	{"extensions", func(d *fastDecoder, m *Message) (err error) { m.Extensions, err = d.strings(); return }},
	{"referenceTaskIds", func(d *fastDecoder, m *Message) (err error) { m.ReferenceTaskIDs, err = d.strings(); return }},
}

var statusFields = []fieldDecoder[TaskStatus]{
	{"state", func(d *fastDecoder, s *TaskStatus) error { return d.state(&s.State) }},
	{"message", func(d *fastDecoder, s *TaskStatus) (err error) { s.Message, err = newObject(d, messageFields); return }},
	{"timestamp", func(d *fastDecoder, s *TaskStatus) error {
		ts, err := d.str()
		if err != nil || ts == "" {
			return err
		}
		if s.Timestamp, err = ParseTimestamp(ts); err != nil {
			return errDecline
		}
		return nil
	}},
}

var artifactFields = []fieldDecoder[Artifact]{
	{"artifactId", func(d *fastDecoder, a *Artifact) (err error) { a.ArtifactID, err = d.str(); return }},
	{"name", func(d *fastDecoder, a *Artifact) (err error) { a.Name, err = d.str(); return }},
	{"description", func(d *fastDecoder, a *Artifact) (err error) { a.Description, err = d.str(); return }},
	{"parts", func(d *fastDecoder, a *Artifact) (err error) { a.Parts, err = d.parts(); return }},
	{"metadata", func(d *fastDecoder, a *Artifact) (err error) { a.Metadata, err = d.metadata(); return }},
	{"extensions", func(d *fastDecoder, a *Artifact) (err error) { a.Extensions, err = d.strings(); return }},
}

var taskFields = []fieldDecoder[Task]{
	{"id", func(d *fastDecoder, t *Task) (err error) { t.ID, err = d.str(); return }},
	{"contextId", func(d *fastDecoder, t *Task) (err error) { t.ContextID, err = d.str(); return }},
	{"status", func(d *fastDecoder, t *Task) error { return decodeObject(d, &t.Status, statusFields) }},
	{"artifacts", func(d *fastDecoder, t *Task) (err error) { t.Artifacts, err = objects(d, artifactFields); return }},
	{"history", func(d *fastDecoder, t *Task) (err error) { t.History, err = objects(d, messageFields); return }},
	{"metadata", func(d *fastDecoder, t *Task) (err error) { t.Metadata, err = d.metadata(); return }},
}

var statusUpdateFields = []fieldDecoder[TaskStatusUpdateEvent]{
	{"taskId", func(d *fastDecoder, e *TaskStatusUpdateEvent) (err error) { e.TaskID, err = d.str(); return }},
	{"contextId", func(d *fastDecoder, e *TaskStatusUpdateEvent) (err error) { e.ContextID, err = d.str(); return }},
	{"status", func(d *fastDecoder, e *TaskStatusUpdateEvent) error { return decodeObject(d, &e.Status, statusFields) }},
	{"metadata", func(d *fastDecoder, e *TaskStatusUpdateEvent) (err error) { e.Metadata, err = d.metadata(); return }},
}

var artifactUpdateFields = []fieldDecoder[TaskArtifactUpdateEvent]{
	{"taskId", func(d *fastDecoder, e *TaskArtifactUpdateEvent) (err error) { e.TaskID, err = d.str(); return }},
	{"contextId", func(d *fastDecoder, e *TaskArtifactUpdateEvent) (err error) { e.ContextID, err = d.str(); return }},
	{"artifact", func(d *fastDecoder, e *TaskArtifactUpdateEvent) error {
		return decodeObject(d, &e.Artifact, artifactFields)
	}},
	{"append", func(d *fastDecoder, e *TaskArtifactUpdateEvent) (err error) { e.Append, err = d.boolean(); return }},
	{"lastChunk", func(d *fastDecoder, e *TaskArtifactUpdateEvent) (err error) { e.LastChunk, err = d.boolean(); return }},
	{"metadata", func(d *fastDecoder, e *TaskArtifactUpdateEvent) (err error) { e.Metadata, err = d.metadata(); return }},
}

var streamResponseFields = []fieldDecoder[StreamResponse]{
	{"task", func(d *fastDecoder, r *StreamResponse) (err error) { r.Task, err = newObject(d, taskFields); return }},
	{"message", func(d *fastDecoder, r *StreamResponse) (err error) {
		r.Message, err = newObject(d, messageFields)
		return
	}},
	{"statusUpdate", func(d *fastDecoder, r *StreamResponse) (err error) {
		r.StatusUpdate, err = newObject(d, statusUpdateFields)
		return
	}},
	{"artifactUpdate", func(d *fastDecoder, r *StreamResponse) (err error) {
		r.ArtifactUpdate, err = newObject(d, artifactUpdateFields)
		return
	}},
}

var sendMessageResponseFields = []fieldDecoder[SendMessageResponse]{
	{"task", func(d *fastDecoder, r *SendMessageResponse) (err error) {
		r.Task, err = newObject(d, taskFields)
		return
	}},
	{"message", func(d *fastDecoder, r *SendMessageResponse) (err error) {
		r.Message, err = newObject(d, messageFields)
		return
	}},
}

var sendMessageRequestFields = []fieldDecoder[SendMessageRequest]{
	{"tenant", func(d *fastDecoder, r *SendMessageRequest) (err error) { r.Tenant, err = d.str(); return }},
	{"message", func(d *fastDecoder, r *SendMessageRequest) (err error) {
		r.Message, err = newObject(d, messageFields)
		return
	}},
	{"configuration", func(d *fastDecoder, r *SendMessageRequest) error {
		if d.peek() != '{' {
			return errDecline
		}
		r.Configuration = new(SendMessageConfiguration)
		return d.viaGeneral(r.Configuration)
	}},
	{"metadata", func(d *fastDecoder, r *SendMessageRequest) (err error) { r.Metadata, err = d.metadata(); return }},
}

// responseParts are the members of a JSON-RPC response a client reads.
type responseParts struct{ result, errObj []byte }

func skipMember[T any](d *fastDecoder, _ *T) error {
	_, err := d.skip()
	return err
}

var responseFields = []fieldDecoder[responseParts]{
	{"result", func(d *fastDecoder, r *responseParts) (err error) { r.result, err = d.skip(); return }},
	{"error", func(d *fastDecoder, r *responseParts) (err error) { r.errObj, err = d.skip(); return }},
	{"jsonrpc", skipMember[responseParts]},
	{"id", skipMember[responseParts]},
}

// splitResponse finds the result and error members of a JSON-RPC response
// without decoding them; ok is false when the envelope needs the general
// path.
func splitResponse(body []byte) (result, errObj []byte, ok bool) {
	d := fastDecoder{b: body, lax: true}
	var r responseParts
	err := d.root(func() error { return decodeObject(&d, &r, responseFields) })
	return r.result, r.errObj, err == nil
}

var requestFields = []fieldDecoder[requestWire]{
	{"jsonrpc", func(d *fastDecoder, w *requestWire) error {
		v, err := d.str()
		w.JSONRPC = &v
		return err
	}},
	{"id", func(d *fastDecoder, w *requestWire) error {
		raw, err := d.skip()
		w.ID = append(json.RawMessage(nil), raw...)
		return err
	}},
	{"method", func(d *fastDecoder, w *requestWire) error {
		v, err := d.str()
		w.Method = &v
		return err
	}},
	{"params", func(d *fastDecoder, w *requestWire) (err error) { w.Params, err = d.skip(); return }},
}

// splitRequest reads a JSON-RPC request envelope, leaving params undecoded:
// Params is part of body, ID a copy; ok is false when the envelope needs
// the general path.
func splitRequest(body []byte) (w requestWire, ok bool) {
	d := fastDecoder{b: body, own: true, lax: true}
	err := d.root(func() error { return decodeObject(&d, &w, requestFields) })
	return w, err == nil
}
