package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// The request types keep the members they do not name, so that a gateway
// that decodes a request, changes its model and encodes it again passes a
// provider's own parameters through untouched.

// knownNames caches, per struct type, the lower-cased JSON names of its
// fields: encoding/json matches names to fields case-insensitively, so a
// member it read into a field must not be kept as unknown too.
var knownNames sync.Map // reflect.Type -> map[string]bool

func jsonNames(t reflect.Type) map[string]bool {
	if m, ok := knownNames.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		m[strings.ToLower(name)] = true
	}
	knownNames.Store(t, m)
	return m
}

// marshalExtra encodes v, a struct, and appends the members of extra whose
// names none of its fields has, in name order.
func marshalExtra(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	known := jsonNames(reflect.TypeOf(v))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !known[strings.ToLower(k)] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	var out bytes.Buffer
	out.Grow(len(b) + 32*len(keys))
	out.Write(b[:len(b)-1]) // without the closing brace
	empty := len(b) == 2
	for _, k := range keys {
		raw := extra[k]
		if !json.Valid(raw) {
			return nil, fmt.Errorf("llm: extra member %q is not valid JSON", k)
		}
		if !empty {
			out.WriteByte(',')
		}
		empty = false
		name, _ := json.Marshal(k)
		out.Write(name)
		out.WriteByte(':')
		if err := json.Compact(&out, raw); err != nil {
			return nil, err
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// unmarshalExtra decodes b into v, a pointer to a struct, and the members
// none of its fields takes into *extra (nil when there are none).
func unmarshalExtra(b []byte, v any, extra *map[string]json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	*extra = nil
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := jsonNames(reflect.TypeOf(v).Elem())
	for k, raw := range all {
		if known[strings.ToLower(k)] {
			continue
		}
		if *extra == nil {
			*extra = map[string]json.RawMessage{}
		}
		(*extra)[k] = raw
	}
	return nil
}
