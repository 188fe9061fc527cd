package a2av03

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"novaos.dev/novaos/a2a"
)

// Unmarshal decodes 0.3 JSON into v, a pointer to one of this package's
// types. It is as strict as a2a.Unmarshal where two readers could
// disagree: a key repeated in any object, free-form metadata and data
// included, is refused with an *a2a.DuplicateKeyError, and a key fills a
// field only when it is the field's exact JSON name ("KIND" or "Kind" is
// an unknown key, where encoding/json alone would read it as "kind").
// Unknown keys are ignored. A kind that contradicts the object's type ("kind":
// "task" where a message belongs) is an error; a missing kind is accepted
// where the type is known from the position, and required where it is
// not (an Event, a Part).
//
// Unlike a2a.Unmarshal it takes no snake_case spellings: 0.3's JSON-RPC
// binding is defined by a JSON schema in lowerCamelCase, not by ProtoJSON.
// The cost is linear in len(data) times the depth of the typed schema
// (at most seven levels: a task's history message's part's file).
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("a2av03: Unmarshal needs a non-nil pointer, got %T", v)
	}
	// CheckKeys refuses repeated keys at every depth and reports malformed
	// JSON with encoding/json's own error.
	if err := a2a.CheckKeys(data); err != nil {
		return err
	}
	return decodeValue(data, rv.Elem())
}

// DecodeParams reads a 0.3 request's params into v with [Unmarshal]; a
// failure is an invalid-params error (-32602) naming the problem. Absent
// or null params read as {}.
func DecodeParams(params json.RawMessage, v any) *a2a.Error {
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		params = json.RawMessage("{}")
	}
	if err := Unmarshal(params, v); err != nil {
		return a2a.NewError(a2a.CodeInvalidParams, "invalid params: %s", describe(err))
	}
	return nil
}

// describe words a decoding error for a caller: the field and the type
// wanted, never the value sent (it may be long or a secret).
func describe(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "malformed JSON"
	case errors.As(err, &typ):
		var path *pathError
		where := typ.Field
		if errors.As(err, &path) {
			where = path.path
		}
		if where == "" {
			return fmt.Sprintf("want %s", typ.Type)
		}
		return fmt.Sprintf("%s: want %s", where, typ.Type)
	}
	return err.Error()
}

// pathError locates an error in the document: members and indexes such as
// message.parts[0].file.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// at prefixes err's path with step ("name" or "[i]").
func at(step string, err error) error {
	if pe, ok := err.(*pathError); ok {
		if strings.HasPrefix(pe.path, "[") {
			return &pathError{step + pe.path, pe.err}
		}
		return &pathError{step + "." + pe.path, pe.err}
	}
	return &pathError{step, err}
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// decodeValue fills v from data. Structs are decoded member by member
// with exact key matching; slices and maps of structs element by element;
// everything else (strings, numbers, free-form values, types with their
// own UnmarshalJSON) by encoding/json.
func decodeValue(data []byte, v reflect.Value) error {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if isNull(data) {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return decodeValue(data, v.Elem())
	}
	if t != rawMessageType && reflect.PointerTo(t).Implements(unmarshalerType) {
		return json.Unmarshal(data, v.Addr().Interface())
	}
	switch {
	case t.Kind() == reflect.Struct:
		return decodeStruct(data, v)
	case t.Kind() == reflect.Slice && holdsStruct(t.Elem()):
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return shape(err, "an array")
		}
		if items == nil {
			v.SetZero()
			return nil
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i)); err != nil {
				return at(fmt.Sprintf("[%d]", i), err)
			}
		}
		v.Set(s)
		return nil
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && holdsStruct(t.Elem()):
		var members map[string]json.RawMessage
		if err := json.Unmarshal(data, &members); err != nil {
			return shape(err, "an object")
		}
		if members == nil {
			v.SetZero()
			return nil
		}
		m := reflect.MakeMapWithSize(t, len(members))
		for k, raw := range members {
			e := reflect.New(t.Elem()).Elem()
			if err := decodeValue(raw, e); err != nil {
				return at(k, err)
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
		}
		v.Set(m)
		return nil
	}
	return json.Unmarshal(data, v.Addr().Interface())
}

// shape words a value of the wrong JSON type by what was wanted, not by
// the Go type it was read into.
func shape(err error, want string) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("want %s, got %s", want, typ.Value)
	}
	return err
}

func holdsStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != rawMessageType
}

func isNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }

// kinds holds the kind every object of a kinded type must carry, if any.
var kinds = map[reflect.Type]string{
	reflect.TypeFor[Message]():                 KindMessage,
	reflect.TypeFor[Task]():                    KindTask,
	reflect.TypeFor[TaskStatusUpdateEvent]():   KindStatusUpdate,
	reflect.TypeFor[TaskArtifactUpdateEvent](): KindArtifactUpdate,
}

func decodeStruct(data []byte, v reflect.Value) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return shape(err, "an object")
	}
	if members == nil { // null: the zero value, as encoding/json leaves it
		return nil
	}
	for _, f := range fieldsOf(v.Type()) {
		raw, ok := members[f.name]
		if !ok {
			continue
		}
		if err := decodeValue(raw, v.Field(f.index)); err != nil {
			return at(f.name, err)
		}
	}
	if want, ok := kinds[v.Type()]; ok {
		if got := v.FieldByName("Kind").String(); got != "" && got != want {
			return fmt.Errorf("kind %q where %q belongs", truncate(got), want)
		}
	}
	return nil
}

type field struct {
	name  string
	index int
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists the JSON names of t's exported fields, in order.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		if name, ok := a2a.JSONFieldName(t.Field(i)); ok {
			fs = append(fs, field{name: name, index: i})
		}
	}
	fieldCache.Store(t, fs)
	return fs
}

// truncate cuts a peer's string for an error message.
func truncate(s string) string {
	const limit = 32
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}
