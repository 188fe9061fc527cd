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

// FuzzDoorDecode feeds request bodies to the direct door's shape test and
// decoder: neither panics; a body is taken for the door exactly when
// encoding/json reads it as one JSON object without a top-level jsonrpc
// member; the decoder refuses with 400 (a
// repeated member) or 422 naming a field, and what it accepts has only
// tool, payload and context, with object payload and context.
func FuzzDoorDecode(f *testing.F) {
	for _, s := range []string{
		`{"tool":"memory.write","payload":{"scope":"run","content":"a b c"},"context":{"request_id":"r-1"}}`,
		`{"tool":"memory.query","payload":null,"context":null}`,
		`{"tool":"memory.query","tool":"memory.write"}`,
		`{"Tool":"memory.query"}`, `{"tool":7}`, `{"tool":"memory.query","payload":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, `{"id":1,"jsonrpc":"2.0"}`,
		`[]`, `{}`, `{"tool":"x"} {}`, `{"tool":"\u006d"}`, `{"json\u0072pc":"2.0"}`, `{"a":"\"jsonrpc\"","b":["jsonrpc"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// encoding/json's reading is the reference: a door request is an
		// object without a jsonrpc member, whatever escapes spell it.
		var top map[string]json.RawMessage
		isObject := json.Unmarshal(data, &top) == nil && top != nil
		_, rpc := top["jsonrpc"]
		if got, want := isDoor(data), isObject && !rpc; got != want {
			t.Fatalf("isDoor(%q) = %v, want %v", data, got, want)
		}
		if !isObject || rpc {
			return
		}
		req, bad := decodeDoor(data)
		if bad != nil {
			if bad.Status != 400 && (bad.Status != 422 || bad.Field == "") {
				t.Fatalf("refusal %+v: want 400, or 422 with its field", bad)
			}
			return
		}
		for k := range top {
			if k != "tool" && k != "payload" && k != "context" {
				t.Fatalf("accepted member %q", k)
			}
		}
		for name, raw := range map[string]json.RawMessage{"payload": req.Payload, "context": req.Context} {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
				t.Fatalf("accepted %s %q, which is not an object", name, raw)
			}
		}
	})
}
