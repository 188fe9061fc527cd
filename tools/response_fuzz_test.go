package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzReadAnswer feeds the answer decoder arbitrary bodies as JSON and
// as event streams: it never panics, never reads past its limit, and
// whatever it returns is the response to the request, a result or an
// error, whose result decodes as a call result or fails cleanly.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"held","data":{"call_id":"c"}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		": c\n\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"result\":{}}\r\n\r\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":null}}",
		"event: ping\ndata: x\n\n", "data:\n\n", "", "[]", "{",
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	const limit = 4096
	f.Fuzz(func(t *testing.T, stream bool, body []byte) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream; charset=utf-8"
		}
		r := &countingReader{r: bytes.NewReader(body)}
		m, err := readAnswer(ct, r, 1, limit)
		if r.n > limit+4096 { // bufio reads ahead at most one buffer past the limit
			t.Fatalf("read %d bytes with a limit of %d", r.n, limit)
		}
		if err != nil {
			if m != nil {
				t.Fatal("a message and an error")
			}
			if errors.Is(err, ErrResponseTooLarge) && len(body) <= limit {
				t.Fatalf("%d bytes called too large", len(body))
			}
			return
		}
		if !m.answers(1) || (m.Result == nil) == (m.Error == nil) {
			t.Fatalf("returned %+v", m)
		}
		if m.Result != nil {
			if res, err := decodeCallResult(m.Result); err == nil {
				NewResponse(res) // must not panic either
			}
		}
	})
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzParseChallenge: the WWW-Authenticate parser ends on any input and
// yields only parameters that were in it.
func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{
		`Bearer error="insufficient_scope", scope="mcp:tools:x"`, `Bearer`, `Bearer a=b,c="d\"e"`, `Basic x`,
		`Bearer ="x"`, `Bearer a="`, "Bearer \t,,==", `Bearer a = "b"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m := parseChallenge(v)
		for k, val := range m {
			if k == "" || !strings.Contains(strings.ToLower(v), k) || len(val) > len(v) {
				t.Fatalf("%q gave %q=%q", v, k, val)
			}
		}
	})
}

// FuzzCallResult: a result of any shape reads as a CallResult or fails,
// and a Response's data is always valid JSON.
func FuzzCallResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"{\"a\":1}"}]}`, `{"content":[{"type":"text","text":5}]}`,
		`{"isError":true,"content":[{"type":"text","text":"{\"error\":{\"message\":\"m\"}}"}]}`,
		`{"structuredContent":{"x":[1,2]},"_meta":null}`, `{"content":null}`, `[]`, `{"content":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := decodeCallResult(raw)
		if err != nil {
			return
		}
		resp := NewResponse(res)
		if len(resp.Data) > 0 && !json.Valid(resp.Data) {
			t.Fatalf("data %q is not JSON", resp.Data)
		}
		if res.IsError == resp.Success {
			t.Fatalf("isError %v but success %v", res.IsError, resp.Success)
		}
	})
}
