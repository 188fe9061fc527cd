package a2a

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The append-style encoders below write exactly the bytes encoding/json
// produces for these types (same field order, omitempty rules, HTML-safe
// string escaping, sorted map keys, float formatting), without reflection.
// Servers write every task and stream frame through them; encoding/json
// remains the reference the tests compare against.
//
// Task, Message and StreamResponse deliberately have no MarshalJSON that
// delegates here: encoding/json re-scans and compacts whatever a MarshalJSON
// method returns, and measured that way json.Marshal(task) got about twice
// as slow, not faster. Hot paths call the Append functions directly and hand
// the bytes to the transport.

// AppendTask appends the JSON encoding of t to b. A nil t encodes as null.
func AppendTask(b []byte, t *Task) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return appendTask(growFor(b, t), t)
}

// growFor makes room in b for most of t's JSON at once: a task holding a
// large text would otherwise cost the appends about three times its
// encoding, each part's text growing the buffer again.
func growFor(b []byte, t *Task) []byte {
	n := 256
	parts := func(ps []Part) {
		for i := range ps {
			n += 64 + len(ps[i].Text) + len(ps[i].URL) + len(ps[i].Data) + base64.StdEncoding.EncodedLen(len(ps[i].Raw))
		}
	}
	if t.Status.Message != nil {
		parts(t.Status.Message.Parts)
	}
	for i := range t.History {
		parts(t.History[i].Parts)
	}
	for i := range t.Artifacts {
		parts(t.Artifacts[i].Parts)
	}
	// Small tasks gain nothing: their buffers come from pools sized for them.
	if n < 64<<10 || cap(b)-len(b) >= n {
		return b
	}
	return slices.Grow(b, n)
}

// AppendMessage appends the JSON encoding of m to b. A nil m encodes as null.
func AppendMessage(b []byte, m *Message) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	return appendMessage(b, m)
}

// AppendStreamResponse appends the JSON encoding of r to b: an object with
// whichever members are set. A nil r encodes as null.
func AppendStreamResponse(b []byte, r *StreamResponse) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '{')
	comma := false
	if r.Task != nil {
		b = append(b, `"task":`...)
		if b, err = appendTask(b, r.Task); err != nil {
			return nil, err
		}
		comma = true
	}
	if r.Message != nil {
		b = appendKey(b, comma, "message")
		if b, err = appendMessage(b, r.Message); err != nil {
			return nil, err
		}
		comma = true
	}
	if r.StatusUpdate != nil {
		b = appendKey(b, comma, "statusUpdate")
		if b, err = appendStatusUpdate(b, r.StatusUpdate); err != nil {
			return nil, err
		}
		comma = true
	}
	if r.ArtifactUpdate != nil {
		b = appendKey(b, comma, "artifactUpdate")
		if b, err = appendArtifactUpdate(b, r.ArtifactUpdate); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendSendMessageResponse appends the JSON encoding of r to b. A nil r
// encodes as null.
func AppendSendMessageResponse(b []byte, r *SendMessageResponse) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '{')
	if r.Task != nil {
		b = append(b, `"task":`...)
		if b, err = appendTask(growFor(b, r.Task), r.Task); err != nil {
			return nil, err
		}
	}
	if r.Message != nil {
		b = appendKey(b, r.Task != nil, "message")
		if b, err = appendMessage(b, r.Message); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendSendMessageRequest appends the JSON encoding of r, the params of
// SendMessage, to b. A nil r encodes as null. The configuration, small and
// rarely set, goes through encoding/json.
func AppendSendMessageRequest(b []byte, r *SendMessageRequest) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '{')
	if r.Tenant != "" {
		b = append(b, `"tenant":`...)
		b = appendString(b, r.Tenant)
		b = append(b, ',')
	}
	b = append(b, `"message":`...)
	if b, err = AppendMessage(b, r.Message); err != nil {
		return nil, err
	}
	if r.Configuration != nil {
		b = append(b, `,"configuration":`...)
		if b, err = appendMarshal(b, r.Configuration); err != nil {
			return nil, err
		}
	}
	if len(r.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, r.Metadata, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendKey appends `,"key":` (without the comma for the first member). key
// must need no escaping.
func appendKey(b []byte, comma bool, key string) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendTask(b []byte, t *Task) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, t.ID)
	if t.ContextID != "" {
		b = append(b, `,"contextId":`...)
		b = appendString(b, t.ContextID)
	}
	b = append(b, `,"status":`...)
	if b, err = appendTaskStatus(b, &t.Status); err != nil {
		return nil, err
	}
	if len(t.Artifacts) > 0 {
		b = append(b, `,"artifacts":[`...)
		for i := range t.Artifacts {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendArtifact(b, &t.Artifacts[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(t.History) > 0 {
		b = append(b, `,"history":[`...)
		for i := range t.History {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMessage(b, &t.History[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(t.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, t.Metadata, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendTaskStatus(b []byte, s *TaskStatus) ([]byte, error) {
	b = append(b, `{"state":"`...)
	b = append(b, s.State.String()...)
	b = append(b, '"')
	if s.Message != nil {
		var err error
		b = append(b, `,"message":`...)
		if b, err = appendMessage(b, s.Message); err != nil {
			return nil, err
		}
	}
	// Written at millisecond precision; a time that rounds down to the zero
	// time is absent, so what is written reads back as the same value.
	if ts := s.Timestamp.UTC().Truncate(time.Millisecond); !ts.IsZero() {
		b = append(b, `,"timestamp":"`...)
		b = ts.AppendFormat(b, TimestampLayout)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

func appendMessage(b []byte, m *Message) ([]byte, error) {
	var err error
	b = append(b, `{"messageId":`...)
	b = appendString(b, m.MessageID)
	if m.ContextID != "" {
		b = append(b, `,"contextId":`...)
		b = appendString(b, m.ContextID)
	}
	if m.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = appendString(b, m.TaskID)
	}
	b = append(b, `,"role":"`...)
	b = append(b, m.Role.String()...)
	b = append(b, '"')
	if len(m.Parts) > 0 {
		b = append(b, `,"parts":`...)
		if b, err = appendParts(b, m.Parts); err != nil {
			return nil, err
		}
	}
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, m.Metadata, 0); err != nil {
			return nil, err
		}
	}
	if len(m.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendStrings(b, m.Extensions)
	}
	if len(m.ReferenceTaskIDs) > 0 {
		b = append(b, `,"referenceTaskIds":`...)
		b = appendStrings(b, m.ReferenceTaskIDs)
	}
	return append(b, '}'), nil
}

func appendArtifact(b []byte, a *Artifact) ([]byte, error) {
	var err error
	b = append(b, `{"artifactId":`...)
	b = appendString(b, a.ArtifactID)
	if a.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, a.Name)
	}
	if a.Description != "" {
		b = append(b, `,"description":`...)
		b = appendString(b, a.Description)
	}
	if len(a.Parts) > 0 {
		b = append(b, `,"parts":`...)
		if b, err = appendParts(b, a.Parts); err != nil {
			return nil, err
		}
	}
	if len(a.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, a.Metadata, 0); err != nil {
			return nil, err
		}
	}
	if len(a.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendStrings(b, a.Extensions)
	}
	return append(b, '}'), nil
}

func appendStatusUpdate(b []byte, e *TaskStatusUpdateEvent) ([]byte, error) {
	var err error
	b = append(b, `{"taskId":`...)
	b = appendString(b, e.TaskID)
	b = append(b, `,"contextId":`...)
	b = appendString(b, e.ContextID)
	b = append(b, `,"status":`...)
	if b, err = appendTaskStatus(b, &e.Status); err != nil {
		return nil, err
	}
	if len(e.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, e.Metadata, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendArtifactUpdate(b []byte, e *TaskArtifactUpdateEvent) ([]byte, error) {
	var err error
	b = append(b, `{"taskId":`...)
	b = appendString(b, e.TaskID)
	b = append(b, `,"contextId":`...)
	b = appendString(b, e.ContextID)
	b = append(b, `,"artifact":`...)
	if b, err = appendArtifact(b, &e.Artifact); err != nil {
		return nil, err
	}
	if e.Append {
		b = append(b, `,"append":true`...)
	}
	if e.LastChunk {
		b = append(b, `,"lastChunk":true`...)
	}
	if len(e.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, e.Metadata, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendParts(b []byte, parts []Part) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendPart(b, &parts[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendPart(b []byte, p *Part) ([]byte, error) {
	b = append(b, '{')
	switch p.Kind {
	case PartRaw:
		b = append(b, `"raw":"`...)
		b = base64.StdEncoding.AppendEncode(b, p.Raw)
		b = append(b, '"')
	case PartURL:
		b = append(b, `"url":`...)
		b = appendString(b, p.URL)
	case PartData:
		b = append(b, `"data":`...)
		if len(p.Data) == 0 {
			b = append(b, "null"...)
		} else {
			var err error
			if b, err = appendRawJSON(b, p.Data); err != nil {
				return nil, fmt.Errorf("a2a: data part: %w", err)
			}
		}
	default:
		b = append(b, `"text":`...)
		b = appendString(b, p.Text)
	}
	if p.Filename != "" {
		b = append(b, `,"filename":`...)
		b = appendString(b, p.Filename)
	}
	if p.MediaType != "" {
		b = append(b, `,"mediaType":`...)
		b = appendString(b, p.MediaType)
	}
	if len(p.Metadata) > 0 {
		var err error
		b = append(b, `,"metadata":`...)
		if b, err = appendMap(b, p.Metadata, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// errInvalidData is returned for a data part or raw metadata value that is
// not valid JSON.
var errInvalidData = errors.New("invalid JSON value")

// appendRawJSON appends a caller-supplied JSON value the way encoding/json
// writes a json.RawMessage: validated (so a bad payload fails the encode
// instead of corrupting the stream), compacted, with <, >, &, U+2028 and
// U+2029 escaped inside strings.
func appendRawJSON(b []byte, raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errInvalidData
	}
	start := 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				start = i + 1
			case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 2
				start = i + 1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			b = append(b, raw[start:i]...)
			start = i + 1
		}
	}
	return append(b, raw[start:]...), nil
}

// maxInlineDepth bounds the recursion of appendAny; deeper values (or
// cyclic maps) are handed to encoding/json, which writes the same bytes and
// reports cycles as errors instead of overflowing the stack.
const maxInlineDepth = 200

func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	if depth > maxInlineDepth {
		return appendMarshal(b, m)
	}
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if b, err = appendAny(b, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendAny writes the types encoding/json produces when it decodes into
// an interface (plus Go's other scalar types); anything else is delegated.
func appendAny(b []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		return appendFloat(b, v, 64)
	case float32:
		return appendFloat(b, float64(v), 32)
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case json.Number:
		return appendNumber(b, v)
	case json.RawMessage:
		if v == nil {
			return append(b, "null"...), nil
		}
		b, err := appendRawJSON(b, v)
		if err != nil {
			return nil, fmt.Errorf("a2a: metadata value: %w", err)
		}
		return b, nil
	case map[string]any:
		return appendMap(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth > maxInlineDepth {
			return appendMarshal(b, v)
		}
		b = append(b, '[')
		var err error
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendAny(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshal(b, v)
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// appendFloat formats like encoding/json: ES6 number-to-string, exponent
// form outside [1e-6, 1e21).
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("a2a: unsupported number %s", strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-07 → e-7
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func appendNumber(b []byte, n json.Number) ([]byte, error) {
	s := string(n)
	if s == "" {
		s = "0"
	}
	if !validNumber(s) {
		return nil, fmt.Errorf("a2a: invalid number literal %q", s)
	}
	return append(b, s...), nil
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i += 2
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i+1 < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if s[i] == '+' || s[i] == '-' {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks the bytes a JSON string may carry unescaped: printable
// ASCII except ", \, <, > and &. Bytes of multi-byte UTF-8 sequences are
// not marked; they take the validating path.
var htmlSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string with the same escaping rules as
// encoding/json: HTML-safe, short escapes for \b \f \n \r \t, invalid UTF-8
// replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if htmlSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
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
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
