package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// encoding/json matches keys regardless of case and keeps the last of two
// equal keys; Unmarshal matches exactly and refuses a repeated key.

func TestUnmarshalMatchesKeysExactly(t *testing.T) {
	tests := []struct {
		name string
		in   string
		into func() any
		want any
	}{
		{"other case is ignored", `{"messageId":"m","MessageId":"x","ROLE":"ROLE_AGENT"}`, func() any { return new(Message) }, &Message{MessageID: "m"}},
		{"other case alone fills nothing", `{"MESSAGEID":"x","Parts":[{"text":"a"}]}`, func() any { return new(Message) }, &Message{}},
		{"unicode fold is ignored", `{"id":"t","status":{"ſtate":"TASK_STATE_COMPLETED"}}`, func() any { return new(Task) }, &Task{ID: "t"}},
		{"Kelvin sign is ignored", `{"messageId":"m","role":"ROLE_USER","parts":[],"metadata":{},"\u212Aey":1}`, func() any { return new(Message) }, &Message{MessageID: "m", Role: RoleUser, Parts: []Part{}, Metadata: map[string]any{}}},
		{"case variant of an opaque member", `{"messageId":"m","Metadata":{"a":1}}`, func() any { return new(Message) }, &Message{MessageID: "m"}},
		{"snake_case alias kept", `{"id":"t","context_id":"c"}`, func() any { return new(Task) }, &Task{ID: "t", ContextID: "c"}},
		{"snake_case in other case ignored", `{"id":"t","CONTEXT_ID":"c","Context_Id":"d"}`, func() any { return new(Task) }, &Task{ID: "t"}},
		{"general-path type", `{"id":"t","ID":"u","HistoryLength":3}`, func() any { return new(GetTaskRequest) }, &GetTaskRequest{ID: "t"}},
		{"part member in other case", `{"messageId":"m","parts":[{"text":"a","MediaType":"x/y"}]}`, func() any { return new(Message) }, &Message{MessageID: "m", Parts: []Part{TextPart("a")}}},
		{"error object", `{"code":-32001,"Code":1,"MESSAGE":"x","message":"y"}`, func() any { return new(Error) }, &Error{Code: -32001, Message: "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.into()
			if err := Unmarshal([]byte(tc.in), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			checkFastMatchesGeneral(t, []byte(tc.in))
		})
	}
}

func TestUnmarshalRefusesDuplicateKeys(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"messageId":"m","metadata":{`)
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	many.WriteString(`"k7":0}}`)
	tests := []struct {
		name, in  string
		into      func() any
		key, path string
	}{
		{"schema member", `{"id":"a","id":"b"}`, func() any { return new(Task) }, "id", ""},
		{"camel and snake spelling", `{"id":"t","contextId":"c","context_id":"d"}`, func() any { return new(Task) }, "contextId", ""},
		{"snake spellings", `{"id":"t","context_id":"c","context_id":"d"}`, func() any { return new(Task) }, "contextId", ""},
		{"unknown member", `{"id":"t","x":1,"x":2}`, func() any { return new(Task) }, "x", ""},
		{"part metadata", `{"messageId":"m","parts":[{"text":"x"},{"text":"y","metadata":{"k":1,"k":2}}]}`, func() any { return new(Message) }, "k", "parts[1].metadata"},
		{"inside a data part", `{"messageId":"m","parts":[{"data":{"a":{"b":1,"b":2}}}]}`, func() any { return new(Message) }, "b", "parts[0].data.a"},
		{"escaped spelling", `{"metadata":{"a":1,"\u0061":2}}`, func() any { return new(Message) }, "a", "metadata"},
		{"inside an unknown member", `{"messageId":"m","kind":{"a":1,"a":2}}`, func() any { return new(Message) }, "a", "kind"},
		{"in an array in metadata", `{"metadata":{"l":[{},{"z":1,"z":1}]}}`, func() any { return new(Task) }, "z", "metadata.l[1]"},
		{"request metadata", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},"metadata":{"a":{"b":{"c":1,"c":1}}}}`, func() any { return new(SendMessageRequest) }, "c", "metadata.a.b"},
		{"configuration", `{"message":{"messageId":"m"},"configuration":{"historyLength":1,"history_length":2}}`, func() any { return new(SendMessageRequest) }, "historyLength", "configuration"},
		{"general-path type", `{"id":"t","tenant":"a","tenant":"b"}`, func() any { return new(GetTaskRequest) }, "tenant", ""},
		{"large object", many.String(), func() any { return new(Message) }, "k7", "metadata"},
		{"user-named map", `{"securitySchemes":{"s":{},"s":{}}}`, func() any { return new(AgentCard) }, "s", "securitySchemes"},
		{"odd key in the path", `{"metadata":{"a b":{"c":1,"c":2}}}`, func() any { return new(Task) }, "c", `metadata."a b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Unmarshal([]byte(tc.in), tc.into())
			dup, ok := errors.AsType[*DuplicateKeyError](err)
			if !ok {
				t.Fatalf("err = %v, want a *DuplicateKeyError", err)
			}
			if dup.Key != tc.key || dup.Path != tc.path {
				t.Fatalf("duplicate %q at %q, want %q at %q", dup.Key, dup.Path, tc.key, tc.path)
			}
			if e := DecodeParams([]byte(tc.in), tc.into()); e == nil || e.Code != CodeInvalidParams || !strings.Contains(e.Message, quoteKey(tc.key)) {
				t.Fatalf("DecodeParams = %v, want -32602 naming %q", e, tc.key)
			}
		})
	}
}

// TestUnmarshalDuplicateCheckIsLinear: a big object's keys are checked
// through a map, not by comparing every pair: on both paths, the keys
// compared stay within a constant per key read (comparing every pair would
// cost n²/2 for an object of n keys). Counting comparisons, not time, keeps
// the test deaf to a busy machine.
func TestUnmarshalDuplicateCheckIsLinear(t *testing.T) {
	const n = 10_000
	var b bytes.Buffer
	b.WriteString(`{"messageId":"m",`)
	object := func(key, prefix string) {
		fmt.Fprintf(&b, `%q:{`, key)
		for i := range n {
			fmt.Fprintf(&b, `"%s%d":0,`, prefix, i)
		}
		b.WriteString(`"end":0}`)
	}
	for i := range n { // members that are not fields: the fast path's own check
		fmt.Fprintf(&b, `"x%d":0,`, i)
	}
	object("skipped", "s") // an unknown member's value, which the fast path skips
	b.WriteString(`,`)
	object("metadata", "k")
	b.WriteString(`,"parts":[{`)
	object("data", "d")
	b.WriteString(`}]}`)
	data := b.Bytes()
	const keys = 4*n + 6 // every key in data

	for _, path := range []struct {
		name     string
		compared func(t *testing.T) int
	}{
		{"fast", func(t *testing.T) int {
			d := &fastDecoder{b: data}
			var m Message
			if err := d.root(func() error { return decodeObject(d, &m, messageFields) }); err != nil {
				t.Fatalf("the fast path declined: %v", err)
			}
			return d.keys.compared
		}},
		{"general", func(t *testing.T) int {
			r, err := walkKeys(data, modeSchema)
			if err != nil {
				t.Fatal(err)
			}
			return r.keys.compared
		}},
	} {
		t.Run(path.name, func(t *testing.T) {
			got := path.compared(t)
			if limit := (smallObject + 1) * keys; got > limit {
				t.Errorf("%d key comparisons for %d keys, want at most %d", got, keys, limit)
			}
			// The count must see the check at all: each of the n
			// members that are not fields is compared with something.
			if got < n {
				t.Errorf("%d key comparisons for %d keys: the count misses the check", got, keys)
			}
		})
	}
	// Both paths accept the document, and both checks are the ones Unmarshal uses.
	for _, fn := range []func([]byte, any) error{Unmarshal, unmarshalGeneral} {
		var m Message
		if err := fn(data, &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Metadata) != n+1 {
			t.Fatalf("metadata has %d keys, want %d", len(m.Metadata), n+1)
		}
	}
}

func TestDecodeRequestStrictEnvelope(t *testing.T) {
	tests := []struct {
		name         string
		body         string
		wantCode     int
		wantMsg      string // part of the error message
		wantID       string
		wantMethod   string
		notification bool
	}{
		{name: "repeated method", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"SendMessage"}`, wantCode: CodeInvalidRequest, wantMsg: `duplicate key "method"`, wantID: "1"},
		{name: "repeated id not echoed", body: `{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}`, wantCode: CodeInvalidRequest, wantMsg: `duplicate key "id"`, wantID: "null"},
		{name: "repeated params", body: `{"jsonrpc":"2.0","id":"a","params":{},"method":"GetTask","params":{"id":"x"}}`, wantCode: CodeInvalidRequest, wantMsg: `duplicate key "params"`, wantID: `"a"`},
		{name: "repeated unknown member", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","x":1,"x":2}`, wantCode: CodeInvalidRequest, wantMsg: `duplicate key "x"`, wantID: "1"},
		{name: "escaped repeat", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","\u006dethod":"SendMessage"}`, wantCode: CodeInvalidRequest, wantMsg: `duplicate key "method"`, wantID: "1"},
		{name: "METHOD does not override method", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","METHOD":"SendMessage"}`, wantID: "1", wantMethod: "GetTask"},
		{name: "METHOD is not the method", body: `{"jsonrpc":"2.0","id":1,"METHOD":"GetTask"}`, wantCode: CodeInvalidRequest, wantMsg: "method must be", wantID: "1"},
		{name: "ID is not the id", body: `{"jsonrpc":"2.0","ID":1,"method":"GetTask"}`, wantID: "null", wantMethod: "GetTask", notification: true},
		{name: "no id is a notification", body: `{"jsonrpc":"2.0","method":"GetTask"}`, wantID: "null", wantMethod: "GetTask", notification: true},
		{name: "null id is a request", body: `{"jsonrpc":"2.0","id":null,"method":"GetTask"}`, wantID: "null", wantMethod: "GetTask"},
		{name: "a repeat in params is for DecodeParams", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}`, wantID: "1", wantMethod: "GetTask"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, e := DecodeRequest([]byte(tc.body))
			if string(req.ID) != tc.wantID {
				t.Errorf("id = %s, want %s", req.ID, tc.wantID)
			}
			if tc.wantCode != 0 {
				if e == nil || e.Code != tc.wantCode || !strings.Contains(e.Message, tc.wantMsg) {
					t.Fatalf("error = %v, want %d containing %q", e, tc.wantCode, tc.wantMsg)
				}
				return
			}
			if e != nil {
				t.Fatalf("error = %v", e)
			}
			if req.Method != tc.wantMethod || req.Notification != tc.notification {
				t.Fatalf("method %q notification %v, want %q %v", req.Method, req.Notification, tc.wantMethod, tc.notification)
			}
		})
	}
}

func TestDecodeResultStrict(t *testing.T) {
	var task Task
	if _, err := DecodeResult([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"a"},"result":{"id":"b"}}`), &task); err == nil {
		t.Fatal("a repeated result was accepted")
	}
	rpcErr, err := DecodeResult([]byte(`{"jsonrpc":"2.0","id":1,"ERROR":{"code":1},"error":{"code":-32001,"Code":5,"message":"gone"}}`), &task)
	if err != nil || rpcErr == nil || rpcErr.Code != -32001 || rpcErr.Message != "gone" {
		t.Fatalf("rpcErr %v, err %v: want -32001 gone", rpcErr, err)
	}
}

// hasDuplicateKey is a reference check, independent of the decoder: some
// object in data repeats a key, compared as encoding/json reads keys.
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			if top.keys[s] {
				return true
			}
			top.keys[s] = true
			top.key = false
			continue
		}
		if top != nil && top.obj {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].key = true
			}
		}
	}
}

// FuzzStrictKeys: a document that repeats a key anywhere is never decoded,
// by either path, and a request envelope repeating a member is -32600.
func FuzzStrictKeys(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"messageId":"m","parts":[{"data":{"a":[{"b":1,"b":2}]}}]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"M","method":"N"}`))
	f.Add([]byte(`{"id":"t","Id":"u","iD":"v"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dup := hasDuplicateKey(data)
		for _, target := range fastTargets {
			err := Unmarshal(data, target.zero())
			if dup && err == nil {
				t.Fatalf("%s: decoded %q, which repeats a key", target.name, data)
			}
			if _, ok := errors.AsType[*DuplicateKeyError](err); ok && !json.Valid(data) {
				// A duplicate may be found before the syntax error:
				// either answer is a refusal.
				continue
			}
		}
		var task GetTaskRequest
		if err := Unmarshal(data, &task); dup && err == nil {
			t.Fatalf("GetTaskRequest: decoded %q, which repeats a key", data)
		}
		checkFastMatchesGeneral(t, data)
		if !dup || !json.Valid(data) {
			return
		}
		if vals, err := topMembers(data, "x"); err == nil && len(vals) == 1 {
			// The repeat is below the top level: the envelope leaves it
			// to DecodeParams.
			return
		}
		if _, e := DecodeRequest(data); bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && (e == nil || e.Code != CodeInvalidRequest) {
			t.Fatalf("envelope %q repeats a member: got %v, want -32600", data, e)
		}
	})
}

// TestFieldNamesFoldApart guards the exact matching: it neutralizes a key
// that folds to some field name of the package without being one, which is
// only right when no two field names fold alike (or one could stand for
// the other) and none holds an underscore (snake_case keys are rewritten
// before the lookup).
func TestFieldNamesFoldApart(t *testing.T) {
	names := fieldNames()
	if len(names.exact) < 50 {
		t.Fatalf("only %d field names collected", len(names.exact))
	}
	byFold := map[string]string{}
	for n := range names.exact {
		if strings.Contains(n, "_") {
			t.Errorf("field name %q holds an underscore", n)
		}
		if other, ok := byFold[foldName(n)]; ok {
			t.Errorf("field names %q and %q fold alike", n, other)
		}
		byFold[foldName(n)] = n
	}
	for _, n := range []string{"messageId", "referenceTaskIds", "returnImmediately", "securitySchemes", "code", "jsonrpc", "statusTimestampAfter", "oauth2MetadataUrl"} {
		if _, ok := names.exact[n]; !ok {
			t.Errorf("field name %q not collected", n)
		}
	}
}

func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name, in  string
		key, path string // "" key: no duplicate
		syntax    bool
	}{
		{name: "clean", in: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[{"a":1},{"a":2}]}}}`},
		{name: "top level", in: `{"method":"a","method":"b"}`, key: "method"},
		{name: "deep", in: `{"params":{"arguments":{"scope":"agent","scope":"user"}}}`, key: "scope", path: "params.arguments"},
		{name: "in an array", in: `[{"a":1},{"b":1,"b":2}]`, key: "b", path: "[1]"},
		{name: "escaped spelling", in: `{"id":1,"\u0069d":2}`, key: "id"},
		{name: "case variants are different keys", in: `{"Method":"a","method":"b"}`},
		{name: "snake and camel are different keys here", in: `{"context_id":"a","contextId":"b"}`},
		{name: "scalar", in: `3`},
		{name: "trailing garbage", in: `{"a":1} x`, syntax: true},
		{name: "truncated", in: `{"a":`, syntax: true},
		{name: "bad literal", in: `{"a":tru}`, syntax: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKeys([]byte(tc.in))
			dup, isDup := errors.AsType[*DuplicateKeyError](err)
			switch {
			case tc.syntax:
				if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
					t.Fatalf("err = %v, want a *json.SyntaxError", err)
				}
			case tc.key == "":
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
			case !isDup || dup.Key != tc.key || dup.Path != tc.path:
				t.Fatalf("err = %v, want duplicate %q at %q", err, tc.key, tc.path)
			}
		})
	}
}
