package extmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every error about a malformed or
// out-of-range extension payload.
var ErrInvalid = errors.New("invalid extension payload")

// Error says which field of which extension's payload is wrong.
type Error struct {
	URI    string // the extension
	Field  string // dotted path inside the payload, "" for the payload itself
	Reason string
}

func (e *Error) Error() string {
	name := e.URI
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", name, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", name, e.Field, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Invalid returns an *Error for field of the extension uri's payload.
func Invalid(uri, field, reason string) error {
	return &Error{URI: uri, Field: field, Reason: reason}
}

// Fragment returns the one-key metadata fragment {uri: JSON of payload}.
// The value is a json.RawMessage. A payload that cannot be encoded (a
// channel or a NaN inside a free-form value) is stored as is, so the error
// surfaces when the enclosing object is encoded instead of being lost;
// validate payloads first to avoid that.
func Fragment(uri string, payload any) map[string]any {
	b, err := json.Marshal(payload)
	if err != nil {
		return map[string]any{uri: payload}
	}
	return map[string]any{uri: json.RawMessage(b)}
}

// Merge combines fragments (or whole metadata maps) into a new map; when two
// carry the same key the later one wins. It returns nil when there is
// nothing to merge, so an object with no extension data keeps no metadata.
func Merge(fragments ...map[string]any) map[string]any {
	n := 0
	for _, f := range fragments {
		n += len(f)
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]any, n)
	for _, f := range fragments {
		maps.Copy(out, f)
	}
	return out
}

// Validator is a payload that checks its own ranges and required fields.
type Validator interface{ Validate() error }

// Parse finds the payload of the extension uri in md. ok reports whether
// md has the key at all; err reports a present but malformed payload. The
// value may be a P or *P (in-process), a json.RawMessage or []byte, or the
// decoded JSON object a wire decoder produced; read turns the object into a
// P, and P's Validate has the last word.
func Parse[P Validator](md map[string]any, uri string, read func(*Reader) P) (p P, ok bool, err error) {
	v, ok := md[uri]
	if !ok {
		return p, false, nil
	}
	switch x := v.(type) {
	case P:
		if err := x.Validate(); err != nil {
			return p, true, err
		}
		return x, true, nil
	case *P:
		if x == nil {
			return p, true, Invalid(uri, "", "payload is null")
		}
		if err := (*x).Validate(); err != nil {
			return p, true, err
		}
		return *x, true, nil
	}
	obj, err := object(uri, v)
	if err != nil {
		return p, true, err
	}
	r := Reader{uri: uri, obj: obj}
	got := read(&r)
	if r.err != nil {
		return p, true, r.err
	}
	if err := got.Validate(); err != nil {
		return p, true, err
	}
	return got, true, nil
}

// object turns a metadata value into a JSON object.
func object(uri string, v any) (map[string]any, error) {
	var raw []byte
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case nil:
		return nil, Invalid(uri, "", "payload is null, want an object")
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, Invalid(uri, "", fmt.Sprintf("payload of type %T does not encode as JSON", v))
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, Invalid(uri, "", "payload is not valid JSON")
	}
	if dec.More() {
		return nil, Invalid(uri, "", "payload has data after its JSON value")
	}
	obj, ok := out.(map[string]any)
	if !ok {
		return nil, Invalid(uri, "", "payload is "+kind(out)+", want an object")
	}
	return obj, nil
}

// Reader reads the fields of one payload object. The first problem is kept
// (Err) and later reads return zero values, so a decoder reads every field
// and checks once.
type Reader struct {
	uri    string
	prefix string
	obj    map[string]any
	err    error
}

// Err returns the first problem found, nil when there was none.
func (r *Reader) Err() error { return r.err }

// Fail records a problem with field (relative to this reader's object)
// unless one was recorded already.
func (r *Reader) Fail(field, reason string) {
	if r.err == nil {
		r.err = Invalid(r.uri, r.path(field), reason)
	}
}

func (r *Reader) path(field string) string {
	switch {
	case r.prefix == "":
		return field
	case field == "":
		return r.prefix
	case field[0] == '[':
		return r.prefix + field
	}
	return r.prefix + "." + field
}

// Value returns the raw value of key and whether the key is present.
func (r *Reader) Value(key string) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	v, ok := r.obj[key]
	return v, ok
}

func (r *Reader) lookup(key string, required bool) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	v, ok := r.obj[key]
	if !ok {
		if required {
			r.Fail(key, "is required")
		}
		return nil, false
	}
	return v, true
}

// String reads a string field; a required one must be present.
func (r *Reader) String(key string, required bool) string {
	v, ok := r.lookup(key, required)
	if !ok {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		r.Fail(key, "is "+kind(v)+", want a string")
	}
	return s
}

// Int reads an integral number (1500, 1500.0 and 1.5e3 are all 1500).
func (r *Reader) Int(key string, required bool) (int64, bool) {
	v, ok := r.lookup(key, required)
	if !ok {
		return 0, false
	}
	n, good := toInt(v)
	if !good {
		r.Fail(key, "is "+kind(v)+", want an integer")
		return 0, false
	}
	return n, true
}

// OptInt reads an optional integer, nil when absent.
func (r *Reader) OptInt(key string) *int64 {
	if n, ok := r.Int(key, false); ok {
		return &n
	}
	return nil
}

// Float reads a finite number.
func (r *Reader) Float(key string, required bool) (float64, bool) {
	v, ok := r.lookup(key, required)
	if !ok {
		return 0, false
	}
	f, good := ToFloat(v)
	if !good {
		r.Fail(key, "is "+kind(v)+", want a number")
		return 0, false
	}
	return f, true
}

// OptFloat reads an optional number, nil when absent.
func (r *Reader) OptFloat(key string) *float64 {
	if f, ok := r.Float(key, false); ok {
		return &f
	}
	return nil
}

// OptBool reads an optional boolean, nil when absent.
func (r *Reader) OptBool(key string) *bool {
	v, ok := r.lookup(key, false)
	if !ok {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool {
		r.Fail(key, "is "+kind(v)+", want a boolean")
		return nil
	}
	return &b
}

// Object returns a reader over the object at key; a missing or non-object
// value is recorded as a problem of this reader (when required) and the
// returned reader reads nothing.
func (r *Reader) Object(key string, required bool) Reader {
	v, ok := r.lookup(key, required)
	sub := Reader{uri: r.uri, prefix: r.path(key), err: r.err}
	if !ok {
		return sub
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		r.Fail(key, "is "+kind(v)+", want an object")
		sub.err = r.err
		return sub
	}
	sub.obj = obj
	return sub
}

// Array reads an array field.
func (r *Reader) Array(key string, required bool) []any {
	v, ok := r.lookup(key, required)
	if !ok {
		return nil
	}
	a, isArr := v.([]any)
	if !isArr {
		r.Fail(key, "is "+kind(v)+", want an array")
	}
	return a
}

// Elem returns a reader over element i of the array read from key, which
// must be an object.
func (r *Reader) Elem(key string, i int, v any) Reader {
	field := key + "[" + strconv.Itoa(i) + "]"
	sub := Reader{uri: r.uri, prefix: r.path(field), err: r.err}
	if r.err != nil {
		return sub
	}
	obj, ok := v.(map[string]any)
	if !ok {
		r.Fail(field, "is "+kind(v)+", want an object")
		sub.err = r.err
		return sub
	}
	sub.obj = obj
	return sub
}

// Merge folds a sub-reader's problem into r.
func (r *Reader) Merge(sub *Reader) {
	if r.err == nil {
		r.err = sub.err
	}
}

// ToFloat converts a decoded JSON number (float64, json.Number or a Go
// numeric type) to a finite float64.
func ToFloat(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// maxExact is the largest integer a float64 holds exactly (2^53).
const maxExact = 1 << 53

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
	}
	f, ok := ToFloat(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > maxExact {
		return 0, false
	}
	return int64(f), true
}

// kind names a decoded JSON value's type for an error message.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := ToFloat(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
