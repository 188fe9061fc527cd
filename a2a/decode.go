package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoder in this file is the read-side twin of the Append encoders: a
// hand-written parser for the hot types (Task, Message, StreamResponse,
// SendMessageResponse, SendMessageRequest) that Unmarshal tries first.
//
// It is a fast path, not a second definition of the format. It accepts a
// document only when it can decode it exactly as encoding/json (after the
// snake_case rewrite) would, and declines everything else: a schema key
// that is not an exact field name (snake_case, other case, escaped), a
// duplicate key, a null where a schema value belongs, a lone surrogate,
// invalid UTF-8, nesting deeper than fastMaxDepth, anything malformed.
// A declined document goes to the general path, which also writes every
// error message, so the two paths differ only in speed; FuzzFastDecode
// checks that.
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
	d := fastDecoder{b: data}
	var err error
	switch v := v.(type) {
	case *Task:
		if !zero(v) {
			return false
		}
		var t Task
		if err = d.root(func() error { return d.task(&t) }); err == nil {
			*v = t
		}
	case *Message:
		if !zero(v) {
			return false
		}
		var m Message
		if err = d.root(func() error { return d.message(&m) }); err == nil {
			*v = m
		}
	case *StreamResponse:
		if *v != (StreamResponse{}) {
			return false
		}
		var r StreamResponse
		if err = d.root(func() error { return d.streamResponse(&r) }); err == nil {
			*v = r
		}
	case *SendMessageResponse:
		if *v != (SendMessageResponse{}) {
			return false
		}
		var r SendMessageResponse
		if err = d.root(func() error { return d.sendMessageResponse(&r) }); err == nil {
			*v = r
		}
	case *SendMessageRequest:
		if !zero(v) {
			return false
		}
		var r SendMessageRequest
		if err = d.root(func() error { return d.sendMessageRequest(&r) }); err == nil {
			*v = r
		}
	default:
		return false
	}
	return err == nil
}

func zero[T any](v *T) bool { return reflect.ValueOf(v).Elem().IsZero() }

type fastDecoder struct {
	b     []byte
	s     string // one copy of b, made at the first string decoded
	i     int
	depth int
	// own makes each string its own copy instead of a part of s, for
	// callers that decode a few short strings out of a large input.
	own bool
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

// fields is a set of an object's keys already seen, by field number.
type fields uint32

func (f *fields) see(n int) error {
	bit := fields(1) << n
	if *f&bit != 0 {
		return errDecline // duplicate: encoding/json would merge
	}
	*f |= bit
	return nil
}

// object calls member for each key of an object in turn; member decodes
// the value. Keys are returned raw and must not hold escapes.
func (d *fastDecoder) object(member func(key []byte) error) error {
	if !d.consume('{') {
		return errDecline
	}
	d.depth++
	if d.depth > fastMaxDepth {
		return errDecline
	}
	if d.consume('}') {
		d.depth--
		return nil
	}
	for {
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
		if err := member(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return nil
		default:
			return errDecline
		}
	}
}

// array calls elem for each element of an array; it reports whether the
// array was empty through n.
func (d *fastDecoder) array(elem func() error) (n int, err error) {
	if !d.consume('[') {
		return 0, errDecline
	}
	d.depth++
	if d.depth > fastMaxDepth {
		return 0, errDecline
	}
	if d.consume(']') {
		d.depth--
		return 0, nil
	}
	for {
		if err := elem(); err != nil {
			return n, err
		}
		n++
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			return n, nil
		default:
			return n, errDecline
		}
	}
}

// unknown skips the value of a key that is not one of names, the struct's
// field names. A key encoding/json would match to a field regardless of
// case, or that the general path would rewrite from snake_case, declines.
func (d *fastDecoder) unknown(key []byte, names ...string) error {
	for _, c := range key {
		if c >= utf8.RuneSelf || c == '_' {
			return errDecline
		}
	}
	for _, n := range names {
		if strings.EqualFold(n, string(key)) {
			return errDecline
		}
	}
	_, err := d.skip()
	return err
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
	_, err := d.array(func() error {
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
	case c == '{':
		err = d.object(func([]byte) error { _, err := d.skip(); return err })
	case c == '[':
		_, err = d.array(func() error { _, err := d.skip(); return err })
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
		_, err := d.array(func() error {
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
// here, and a repeated key keeps its last value, as in encoding/json.
func (d *fastDecoder) anyObject() (map[string]any, error) {
	if !d.consume('{') {
		return nil, errDecline
	}
	d.depth++
	if d.depth > fastMaxDepth {
		return nil, errDecline
	}
	m := map[string]any{}
	if d.consume('}') {
		d.depth--
		return m, nil
	}
	for {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if !d.consume(':') {
			return nil, errDecline
		}
		v, err := d.anyValue()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return m, nil
		default:
			return nil, errDecline
		}
	}
}

// metadata decodes a metadata map; null declines (it would set nil, but
// it is rare enough not to be worth a special case).
func (d *fastDecoder) metadata() (map[string]any, error) {
	if d.peek() != '{' {
		return nil, errDecline
	}
	return d.anyObject()
}

// viaJSON decodes the next value into v with the general path: the types
// that are rare on the hot path keep a single definition.
func (d *fastDecoder) viaJSON(v any) error {
	raw, err := d.skip()
	if err != nil {
		return err
	}
	if Unmarshal(raw, v) != nil {
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

func (d *fastDecoder) part(p *Part) error {
	var seen fields
	var content int
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "text":
			if err = seen.see(0); err == nil {
				p.Kind, content = PartText, content+1
				p.Text, err = d.str()
			}
		case "raw":
			if err = seen.see(1); err == nil {
				p.Kind, content = PartRaw, content+1
				var s string
				if s, err = d.str(); err == nil {
					if p.Raw, err = decodeBase64(s); err != nil {
						err = errDecline
					}
				}
			}
		case "url":
			if err = seen.see(2); err == nil {
				p.Kind, content = PartURL, content+1
				p.URL, err = d.str()
			}
		case "data":
			if err = seen.see(3); err == nil {
				p.Kind, content = PartData, content+1
				var raw []byte
				if raw, err = d.skip(); err == nil {
					p.Data = append(json.RawMessage(nil), raw...)
				}
			}
		case "filename":
			if err = seen.see(4); err == nil {
				p.Filename, err = d.str()
			}
		case "mediaType":
			if err = seen.see(5); err == nil {
				p.MediaType, err = d.str()
			}
		case "metadata":
			if err = seen.see(6); err == nil {
				p.Metadata, err = d.metadata()
			}
		default:
			err = d.unknown(key, "text", "raw", "url", "data", "filename", "mediaType", "metadata")
		}
		return err
	})
	if err == nil && content != 1 {
		return errDecline
	}
	return err
}

func (d *fastDecoder) parts() ([]Part, error) {
	out := []Part{}
	_, err := d.array(func() error {
		out = append(out, Part{})
		return d.part(&out[len(out)-1])
	})
	return out, err
}

func (d *fastDecoder) message(m *Message) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "messageId":
			if err = seen.see(0); err == nil {
				m.MessageID, err = d.str()
			}
		case "contextId":
			if err = seen.see(1); err == nil {
				m.ContextID, err = d.str()
			}
		case "taskId":
			if err = seen.see(2); err == nil {
				m.TaskID, err = d.str()
			}
		case "role":
			if err = seen.see(3); err == nil {
				err = d.role(&m.Role)
			}
		case "parts":
			if err = seen.see(4); err == nil {
				m.Parts, err = d.parts()
			}
		case "metadata":
			if err = seen.see(5); err == nil {
				m.Metadata, err = d.metadata()
			}
		case "extensions":
			if err = seen.see(6); err == nil {
				m.Extensions, err = d.strings()
			}
		case "referenceTaskIds":
			if err = seen.see(7); err == nil {
				m.ReferenceTaskIDs, err = d.strings()
			}
		default:
			err = d.unknown(key, "messageId", "contextId", "taskId", "role", "parts", "metadata", "extensions", "referenceTaskIds")
		}
		return err
	})
}

// messagePtr decodes a message into a fresh pointer; null declines.
func (d *fastDecoder) messagePtr() (*Message, error) {
	m := new(Message)
	return m, d.message(m)
}

func (d *fastDecoder) status(s *TaskStatus) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "state":
			if err = seen.see(0); err == nil {
				err = d.state(&s.State)
			}
		case "message":
			if err = seen.see(1); err == nil {
				s.Message, err = d.messagePtr()
			}
		case "timestamp":
			if err = seen.see(2); err == nil {
				var ts string
				if ts, err = d.str(); err == nil && ts != "" {
					if s.Timestamp, err = ParseTimestamp(ts); err != nil {
						err = errDecline
					}
				}
			}
		default:
			err = d.unknown(key, "state", "message", "timestamp")
		}
		return err
	})
}

func (d *fastDecoder) artifact(a *Artifact) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "artifactId":
			if err = seen.see(0); err == nil {
				a.ArtifactID, err = d.str()
			}
		case "name":
			if err = seen.see(1); err == nil {
				a.Name, err = d.str()
			}
		case "description":
			if err = seen.see(2); err == nil {
				a.Description, err = d.str()
			}
		case "parts":
			if err = seen.see(3); err == nil {
				a.Parts, err = d.parts()
			}
		case "metadata":
			if err = seen.see(4); err == nil {
				a.Metadata, err = d.metadata()
			}
		case "extensions":
			if err = seen.see(5); err == nil {
				a.Extensions, err = d.strings()
			}
		default:
			err = d.unknown(key, "artifactId", "name", "description", "parts", "metadata", "extensions")
		}
		return err
	})
}

func (d *fastDecoder) task(t *Task) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "id":
			if err = seen.see(0); err == nil {
				t.ID, err = d.str()
			}
		case "contextId":
			if err = seen.see(1); err == nil {
				t.ContextID, err = d.str()
			}
		case "status":
			if err = seen.see(2); err == nil {
				err = d.status(&t.Status)
			}
		case "artifacts":
			if err = seen.see(3); err == nil {
				t.Artifacts = []Artifact{}
				_, err = d.array(func() error {
					t.Artifacts = append(t.Artifacts, Artifact{})
					return d.artifact(&t.Artifacts[len(t.Artifacts)-1])
				})
			}
		case "history":
			if err = seen.see(4); err == nil {
				t.History = []Message{}
				_, err = d.array(func() error {
					t.History = append(t.History, Message{})
					return d.message(&t.History[len(t.History)-1])
				})
			}
		case "metadata":
			if err = seen.see(5); err == nil {
				t.Metadata, err = d.metadata()
			}
		default:
			err = d.unknown(key, "id", "contextId", "status", "artifacts", "history", "metadata")
		}
		return err
	})
}

func (d *fastDecoder) statusUpdate(e *TaskStatusUpdateEvent) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "taskId":
			if err = seen.see(0); err == nil {
				e.TaskID, err = d.str()
			}
		case "contextId":
			if err = seen.see(1); err == nil {
				e.ContextID, err = d.str()
			}
		case "status":
			if err = seen.see(2); err == nil {
				err = d.status(&e.Status)
			}
		case "metadata":
			if err = seen.see(3); err == nil {
				e.Metadata, err = d.metadata()
			}
		default:
			err = d.unknown(key, "taskId", "contextId", "status", "metadata")
		}
		return err
	})
}

func (d *fastDecoder) artifactUpdate(e *TaskArtifactUpdateEvent) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "taskId":
			if err = seen.see(0); err == nil {
				e.TaskID, err = d.str()
			}
		case "contextId":
			if err = seen.see(1); err == nil {
				e.ContextID, err = d.str()
			}
		case "artifact":
			if err = seen.see(2); err == nil {
				err = d.artifact(&e.Artifact)
			}
		case "append":
			if err = seen.see(3); err == nil {
				e.Append, err = d.boolean()
			}
		case "lastChunk":
			if err = seen.see(4); err == nil {
				e.LastChunk, err = d.boolean()
			}
		case "metadata":
			if err = seen.see(5); err == nil {
				e.Metadata, err = d.metadata()
			}
		default:
			err = d.unknown(key, "taskId", "contextId", "artifact", "append", "lastChunk", "metadata")
		}
		return err
	})
}

func (d *fastDecoder) taskPtr() (*Task, error) {
	t := new(Task)
	return t, d.task(t)
}

func (d *fastDecoder) streamResponse(r *StreamResponse) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "task":
			if err = seen.see(0); err == nil {
				r.Task, err = d.taskPtr()
			}
		case "message":
			if err = seen.see(1); err == nil {
				r.Message, err = d.messagePtr()
			}
		case "statusUpdate":
			if err = seen.see(2); err == nil {
				r.StatusUpdate = new(TaskStatusUpdateEvent)
				err = d.statusUpdate(r.StatusUpdate)
			}
		case "artifactUpdate":
			if err = seen.see(3); err == nil {
				r.ArtifactUpdate = new(TaskArtifactUpdateEvent)
				err = d.artifactUpdate(r.ArtifactUpdate)
			}
		default:
			err = d.unknown(key, "task", "message", "statusUpdate", "artifactUpdate")
		}
		return err
	})
}

func (d *fastDecoder) sendMessageResponse(r *SendMessageResponse) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "task":
			if err = seen.see(0); err == nil {
				r.Task, err = d.taskPtr()
			}
		case "message":
			if err = seen.see(1); err == nil {
				r.Message, err = d.messagePtr()
			}
		default:
			err = d.unknown(key, "task", "message")
		}
		return err
	})
}

func (d *fastDecoder) sendMessageRequest(r *SendMessageRequest) error {
	var seen fields
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "tenant":
			if err = seen.see(0); err == nil {
				r.Tenant, err = d.str()
			}
		case "message":
			if err = seen.see(1); err == nil {
				r.Message, err = d.messagePtr()
			}
		case "configuration":
			if err = seen.see(2); err == nil {
				if d.peek() != '{' {
					return errDecline
				}
				r.Configuration = new(SendMessageConfiguration)
				err = d.viaJSON(r.Configuration)
			}
		case "metadata":
			if err = seen.see(3); err == nil {
				r.Metadata, err = d.metadata()
			}
		default:
			err = d.unknown(key, "tenant", "message", "configuration", "metadata")
		}
		return err
	})
}

// splitResponse finds the result and error members of a JSON-RPC response
// without decoding them; ok is false when the envelope needs the general
// path.
func splitResponse(body []byte) (result, errObj []byte, ok bool) {
	d := fastDecoder{b: body}
	var seen fields
	err := d.root(func() error {
		return d.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "result":
				if err = seen.see(0); err == nil {
					result, err = d.skip()
				}
			case "error":
				if err = seen.see(1); err == nil {
					errObj, err = d.skip()
				}
			case "jsonrpc", "id":
				_, err = d.skip()
			default:
				err = d.unknown(key, "result", "error")
			}
			return err
		})
	})
	return result, errObj, err == nil
}

// splitRequest reads a JSON-RPC request envelope, leaving params undecoded:
// Params is part of body, ID a copy; ok is false when the envelope needs
// the general path.
func splitRequest(body []byte) (w requestWire, ok bool) {
	d := fastDecoder{b: body, own: true}
	var seen fields
	err := d.root(func() error {
		return d.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "jsonrpc":
				if err = seen.see(0); err == nil {
					var v string
					v, err = d.str()
					w.JSONRPC = &v
				}
			case "id":
				if err = seen.see(1); err == nil {
					var raw []byte
					raw, err = d.skip()
					w.ID = append(json.RawMessage(nil), raw...)
				}
			case "method":
				if err = seen.see(2); err == nil {
					var v string
					v, err = d.str()
					w.Method = &v
				}
			case "params":
				if err = seen.see(3); err == nil {
					w.Params, err = d.skip()
				}
			default:
				err = d.unknown(key, "jsonrpc", "id", "method", "params")
			}
			return err
		})
	})
	return w, err == nil
}
