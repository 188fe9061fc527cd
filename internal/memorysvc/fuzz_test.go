package memorysvc

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"novaos.dev/novaos/memory"
)

// FuzzDecodeArgs feeds tool arguments to the decoder every tool uses: it
// never panics, accepts only JSON objects, and whatever it accepts has
// no key the schema does not name.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{"scope":"run","content":"a b c"}`,
		`{"scope":"agent","content":"x","metadata":{"tags":["t"],"custom":{"Any":"key"}}}`,
		`{"Scope":"run"}`, `{"metadata":{"Tags":[]}}`, `[]`, `null`, `"x"`, `{"ttl_seconds":"5"}`,
	} {
		f.Add([]byte(s))
	}
	schema, err := jsonschema.For[memory.WriteRequest](schemaOpts)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v memory.WriteRequest
		if e := decodeArgs(json.RawMessage(data), schema, &v); e != nil {
			if e.Status != 422 || e.Field == "" {
				t.Fatalf("refusal %+v lacks its status or field", e)
			}
			return
		}
		var generic map[string]any
		if err := json.Unmarshal(data, &generic); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object", data)
		}
		for k := range generic {
			if _, ok := schema.Properties[k]; !ok {
				t.Fatalf("accepted unknown key %q", k)
			}
		}
	})
}
