package llmgw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// parseRequest never panics, and what it accepts has a model, an
// estimate within bounds, and an upstream body that is one JSON object
// naming the provider's model, for a stream asking for its usage, and
// holding every other member of the caller's as it came.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":false,"x":1},"max_tokens":10,"n":2}`,
		`{"model":"m","input":["a","b"]}`,
		`{"model":"m","messages":[],"max_completion_tokens":1e3}`,
		`{"model":"m","model":"n"}`, `[]`, `{`, `{"model":null,"messages":null}`,
		`{ "stream" : true , "model":"m" ,"messages":[{"role":"user","content":null,"x":{"y":[1.0]}}] }`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		op := opEmbeddings
		if chat {
			op = opChat
		}
		req, e := parseRequest(op, []byte(body), 100)
		if e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		if req.model == "" || req.input < 1 || req.output < 0 || req.output > maxCompletionTokens*maxChoices {
			t.Fatalf("accepted %+v", req)
		}
		up, err := req.upstreamBody("upstream-model")
		if err != nil {
			t.Fatalf("upstream body: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(up, &m); err != nil || string(m["model"]) != `"upstream-model"` {
			t.Fatalf("upstream body %s (%v)", up, err)
		}
		if req.stream && !bytes.Contains(m["stream_options"], []byte(`"include_usage":true`)) {
			t.Fatalf("a stream's upstream body does not ask for usage: %s", up)
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			t.Fatal(err)
		}
		for k, v := range in {
			if k != "model" && (k != "stream_options" || !req.stream) && !bytes.Equal(v, m[k]) {
				t.Fatalf("member %q went upstream as %s, not %s", k, m[k], v)
			}
		}
	})
}

// The body a provider gets is the caller's, byte for byte, but for the
// model and the usage a stream asks for: members the llm package's types
// do not name, nested ones too, numbers, nulls, white space and order.
func TestUpstreamBodyIsTheCallers(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"chat", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"x-ext":1}]}], "temperature": 1.0, "model": "gpt-4o",
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"cache_control":{"type":"ephemeral"}}}]}`,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"x-ext":1}]}], "temperature": 1.0, "model": "up",
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"cache_control":{"type":"ephemeral"}}}]}`},
		{"stream asks for usage", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"up","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`},
		{"stream keeps its options", `{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":2},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"up","stream":true,"stream_options":{"include_usage":true,"x":2},"messages":[{"role":"user","content":"hi"}]}`},
		{"usage asked already", `{"model":"m","stream":true,"stream_options":{ "include_usage" : true },"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"up","stream":true,"stream_options":{ "include_usage" : true },"messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings", `{"input":[[1,2],[3]],"model":"e","dimensions":256,"x":[]}`, `{"input":[[1,2],[3]],"model":"up","dimensions":256,"x":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := opChat
			if tc.name == "embeddings" {
				op = opEmbeddings
			}
			req, e := parseRequest(op, []byte(tc.body), 100)
			if e != nil {
				t.Fatal(e)
			}
			got, err := req.upstreamBody("up")
			if err != nil || string(got) != tc.want {
				t.Errorf("upstream body\n%s (%v), want\n%s", got, err, tc.want)
			}
		})
	}
}
