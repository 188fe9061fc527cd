package a2a

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The general decoding path matches keys exactly although encoding/json
// does not: before a document reaches encoding/json, every key that folds
// to a field name of this package without being one is renamed to "" (see
// keyRewriter). The names are collected once, by reflection, from the
// package's wire types.

// wireRoots are the types whose fields, and their fields' types, make up
// the names this package decodes. Types with their own UnmarshalJSON are
// represented by the mirror they decode through.
var wireRoots = []any{
	Task{}, Message{}, partWire{}, taskStatusWire{}, StreamResponse{},
	SendMessageRequest{}, SendMessageResponse{}, GetTaskRequest{}, ListTasksRequest{},
	ListTasksResponse{}, CancelTaskRequest{}, SubscribeToTaskRequest{},
	GetTaskPushNotificationConfigRequest{}, ListTaskPushNotificationConfigsRequest{},
	ListTaskPushNotificationConfigsResponse{}, GetExtendedAgentCardRequest{},
	AgentCard{}, errorWire{}, errorInfo{}, requestWire{}, Response{},
}

// mirrors maps a type with its own UnmarshalJSON to the struct it decodes
// through.
var mirrors = map[reflect.Type]reflect.Type{
	reflect.TypeFor[Part]():       reflect.TypeFor[partWire](),
	reflect.TypeFor[TaskStatus](): reflect.TypeFor[taskStatusWire](),
	reflect.TypeFor[Error]():      reflect.TypeFor[errorWire](),
}

type fieldNameSet struct {
	exact  map[string]struct{}
	folded map[string]struct{}
}

var fieldNames = sync.OnceValue(func() *fieldNameSet {
	s := &fieldNameSet{exact: map[string]struct{}{}, folded: map[string]struct{}{}}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if m, ok := mirrors[t]; ok {
			t = m
		}
		if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[json.RawMessage]() {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			name, ok := JSONFieldName(f)
			if !ok {
				continue
			}
			s.exact[name] = struct{}{}
			s.folded[foldName(name)] = struct{}{}
			walk(f.Type)
		}
	}
	for _, r := range wireRoots {
		walk(reflect.TypeOf(r))
	}
	return s
})

// JSONFieldName is the member name encoding/json reads and writes f under:
// its json tag's name, else the field's own; ok is false for a field
// encoding/json leaves out (unexported, or tagged "-"). Decoders that match
// members exactly (package a2av03's too) share this rule with it.
func JSONFieldName(f reflect.StructField) (name string, ok bool) {
	if !f.IsExported() {
		return "", false
	}
	tag, tagged := f.Tag.Lookup("json")
	if tag == "-" {
		return "", false
	}
	if n, _, _ := strings.Cut(tag, ","); tagged && n != "" {
		return n, true
	}
	return f.Name, true
}

// isFieldName reports whether name is exactly the JSON name of a field.
func isFieldName(name []byte) bool {
	_, ok := fieldNames().exact[string(name)]
	return ok
}

// foldsToFieldName reports whether encoding/json would match name to a
// field of this package's types, ignoring case.
func foldsToFieldName(name []byte) bool {
	_, ok := fieldNames().folded[foldName(string(name))]
	return ok
}

// foldName folds a name the way encoding/json compares field names (its
// foldName: ASCII letters to upper case, any other rune to the smallest
// rune of its case-folding orbit), so that "ſtate" and "STATE" fold as
// "state" does.
func foldName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b = utf8.AppendRune(b, r)
		i += n
	}
	return string(b)
}
