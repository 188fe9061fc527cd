package llmgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// parseRequest never panics, and what it accepts has a model, an
// estimate within bounds, and an upstream body that is one JSON object
// naming the provider's model and, for a stream, asking for its usage.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":false,"x":1},"max_tokens":10,"n":2}`,
		`{"model":"m","input":["a","b"]}`,
		`{"model":"m","messages":[],"max_completion_tokens":1e3}`,
		`{"model":"m","model":"n"}`, `[]`, `{`, `{"model":null,"messages":null}`,
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
	})
}

// The SSE reader never panics, never returns an event larger than its
// bound, and reads back what a writer of data lines wrote.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "data: a\ndata: b\n\n: comment\nevent: x\ndata: c\r\n\r\n", "data:[DONE]\n\n", "data", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		rd := newSSEReader(strings.NewReader(stream), 64)
		for range len(stream) + 1 {
			ev, err := rd.next()
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errEventTooLarge) || strings.Contains(err.Error(), "carriage") {
					return
				}
				t.Fatalf("error %v", err)
			}
			if len(ev) > 64 {
				t.Fatalf("an event of %d bytes past the bound", len(ev))
			}
		}
		t.Fatal("more events than bytes")
	})
}

// What the gateway writes, the reader reads back.
func TestSSERoundTrip(t *testing.T) {
	events := []string{`{"a":1}`, "line one\nline two", "[DONE]"}
	var b strings.Builder
	for _, e := range events {
		for _, l := range strings.Split(e, "\n") {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
	}
	rd := newSSEReader(strings.NewReader(b.String()), 1<<10)
	for _, want := range events {
		got, err := rd.next()
		if err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if _, err := rd.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last event: %v, want EOF", err)
	}
}
