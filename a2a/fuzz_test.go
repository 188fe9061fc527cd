package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"novaos.dev/novaos/internal/schematest"
)

// Seed corpora live in testdata/fuzz/<target>/; the f.Add calls below keep
// a few hand-written seeds next to the code they exercise.

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t","history_length":2}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{},"method":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ListTasks","params":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rpcErr := DecodeRequest(body)
		if req == nil {
			t.Fatal("nil request")
		}
		if !validEchoID(req.ID) {
			t.Fatalf("id %q cannot be echoed", req.ID)
		}
		resp := AppendResult(nil, req.ID, []byte("null"))
		if rpcErr != nil {
			switch rpcErr.Code {
			case CodeParseError:
				if json.Valid(body) {
					t.Fatalf("parse error for valid JSON %q", body)
				}
			case CodeInvalidRequest, CodeInvalidParams:
				if !json.Valid(body) {
					t.Fatalf("code %d for invalid JSON %q", rpcErr.Code, body)
				}
			default:
				t.Fatalf("unexpected code %d", rpcErr.Code)
			}
			resp = AppendErrorResponse(nil, req.ID, rpcErr)
		} else {
			if req.Method == "" {
				t.Fatal("accepted an empty method")
			}
			if p := bytes.TrimSpace(req.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
				t.Fatalf("accepted params %q", p)
			}
			// Params of any accepted request decode or fail with -32602,
			// never panic.
			var params SendMessageRequest
			if e := DecodeParams(req.Params, &params); e != nil && e.Code != CodeInvalidParams {
				t.Fatalf("DecodeParams code %d", e.Code)
			}
		}
		if !json.Valid(resp) {
			t.Fatalf("response is not JSON: %q", resp)
		}
	})
}

// validEchoID reports whether id is null, a JSON string or a JSON number.
func validEchoID(id json.RawMessage) bool {
	if !json.Valid(id) {
		return false
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(id))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return false
	}
	switch v.(type) {
	case nil, string, json.Number:
		return true
	}
	return false
}

// checkStable decodes data tolerantly, encodes the value, decodes that and
// encodes again: both encodings must be the same bytes. It returns the
// first encoding, or nil when data does not decode.
func checkStable[T any](t *testing.T, data []byte, encode func(*T) ([]byte, error)) []byte {
	t.Helper()
	var v1 T
	if err := Unmarshal(data, &v1); err != nil {
		return nil
	}
	b1, err := encode(&v1)
	if err != nil {
		t.Fatalf("decoded value does not encode: %v\ninput: %q", err, data)
	}
	var v2 T
	if err := Unmarshal(b1, &v2); err != nil {
		t.Fatalf("own output does not decode: %v\noutput: %s", err, b1)
	}
	b2, err := encode(&v2)
	if err != nil {
		t.Fatalf("second encode: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("encoding not stable\ninput:  %q\nfirst:  %s\nsecond: %s", data, b1, b2)
	}
	return b1
}

func FuzzMessage(f *testing.F) {
	f.Add([]byte(`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}`))
	f.Add([]byte(`{"message_id":"m","role":"agent","parts":[{"data":{"a_b":1.50}},{"raw":"_w"}],"metadata":{"k":1e400}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := checkStable(t, data, func(m *Message) ([]byte, error) { return AppendMessage(nil, m) })
		if out == nil {
			return
		}
		var m Message
		_ = Unmarshal(data, &m)
		viaJSON, err := json.Marshal(&m)
		if err != nil || !bytes.Equal(viaJSON, out) {
			t.Fatalf("json.Marshal differs from AppendMessage (%v)\n%s\n%s", err, viaJSON, out)
		}
		if err := schematest.Check("Message", out); err != nil {
			t.Fatalf("output does not match the schema: %v\n%s", err, out)
		}
	})
}

func FuzzPart(f *testing.F) {
	f.Add([]byte(`{"text":"hi","mediaType":"text/plain"}`))
	f.Add([]byte(`{"raw":"aGk","filename":"a"}`))
	f.Add([]byte(`{"url":"https://x","media_type":"image/png"}`))
	f.Add([]byte(`{"data":{"x": [1, 2.0, "<&>"]},"metadata":{"k_k":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := checkStable(t, data, func(p *Part) ([]byte, error) { return json.Marshal(p) })
		if out == nil {
			return
		}
		if err := schematest.Check("Part", out); err != nil {
			t.Fatalf("output does not match the schema: %v\n%s", err, out)
		}
	})
}

func FuzzTask(f *testing.F) {
	f.Add([]byte(`{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T03:04:05.123456789+01:00"}}`))
	f.Add([]byte(`{"id":"t","status":{"state":"completed","message":{"message_id":"m","parts":[{"text":"x"}]}},"artifacts":[{"artifact_id":"a","parts":[{"raw":"AA=="}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := checkStable(t, data, func(task *Task) ([]byte, error) { return AppendTask(nil, task) })
		if out == nil {
			return
		}
		var task Task
		_ = Unmarshal(data, &task)
		viaJSON, err := json.Marshal(&task)
		if err != nil || !bytes.Equal(viaJSON, out) {
			t.Fatalf("json.Marshal differs from AppendTask (%v)\n%s\n%s", err, viaJSON, out)
		}
		if err := schematest.Check("Task", out); err != nil {
			t.Fatalf("output does not match the schema: %v\n%s", err, out)
		}
	})
}

func FuzzAgentCard(f *testing.F) {
	f.Add([]byte(`{"name":"a","supportedInterfaces":[{"url":"https://a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":false},"skills":[{"id":"s","name":"n","description":"d","tags":["t"]}]}`))
	f.Add([]byte(`{"security_schemes":{"k_1":{"oauth2_security_scheme":{"flows":{"client_credentials":{"token_url":"u","scopes":{"a_b":"c"}}}}}},"signatures":[{"protected":"p","signature":"s","header":{"k_i_d":1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// No schema check here: OAuth flows are kept as raw JSON and
		// written back as read, whatever their shape.
		checkStable(t, data, func(c *AgentCard) ([]byte, error) { return json.Marshal(c) })
	})
}

func FuzzEventReader(f *testing.F) {
	f.Add([]byte("id: 1\nevent: message\ndata: {\"a\":1}\n\n: keep-alive\n\n"), uint16(64))
	f.Add([]byte("data: a\r\ndata: b\rdata: c\n\n\xEF\xBB\xBFdata"), uint16(8))
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16) {
		max := int(limit)%4096 + 1
		er := NewEventReader(bytes.NewReader(stream), max)
		for range len(stream) + 1 {
			ev, err := er.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(ev.Data)+len(ev.Event) > max {
				t.Fatalf("event of %d bytes passed a limit of %d", len(ev.Data)+len(ev.Event), max)
			}
			// Whatever was read survives being written and read again.
			again, err := NewEventReader(bytes.NewReader(AppendEvent(nil, ev)), 0).Next()
			if err != nil {
				t.Fatalf("re-read: %v", err)
			}
			if again.ID != ev.ID || again.Event != ev.Event || !bytes.Equal(again.Data, ev.Data) {
				t.Fatalf("re-read %+v as %+v", ev, again)
			}
		}
		t.Fatal("reader returned more events than the stream has bytes")
	})
}

// FuzzCheckKeys holds CheckKeys to a slow reference built on the standard
// decoder's token stream: they agree on whether a document is valid JSON
// and whether any object repeats a key.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `[{"a":{"b":1}},{"a":{"b":1,"b":2}}]`, `{"\u0061":1,"a":2}`, `"x"`, `{"a":[1,2,{"c":null}]}`, `{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckKeys(data)
		valid := json.Valid(data)
		dup := valid && referenceHasDuplicate(t, data)
		_, isDup := errors.AsType[*DuplicateKeyError](err)
		switch {
		case !valid && err == nil:
			t.Fatalf("CheckKeys accepted invalid JSON %q", data)
		case valid && dup != isDup:
			t.Fatalf("CheckKeys(%q) = %v, reference duplicate = %v", data, err, dup)
		case valid && !dup && err != nil:
			t.Fatalf("CheckKeys(%q) = %v on a clean document", data, err)
		}
	})
}

func referenceHasDuplicate(t *testing.T, data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e700 is valid JSON but no float64
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("reference decoder failed on valid JSON %q: %v", data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.expect {
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
	}
}
