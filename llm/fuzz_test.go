package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// referenceEvents is the EventSource algorithm written plainly: split
// the whole input into lines, then read fields. It is what EventReader
// must agree with, however the input is cut into reads.
func referenceEvents(in []byte) []Event {
	s := string(in)
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break // an unterminated last line is never dispatched
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var out []Event
	var data, name string
	has := false
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				out = append(out, Event{Name: name, Data: []byte(strings.TrimSuffix(data, "\n"))})
			}
			data, name, has = "", "", false
		case l[0] == ':':
		default:
			field, value, _ := strings.Cut(l, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				data += value + "\n"
				has = true
			case "event":
				name = value
			}
		}
	}
	return out
}

func decodeAll(r io.Reader, max int) ([]Event, error) {
	d := NewEventReader(r, max)
	var out []Event
	for {
		ev, err := d.Next()
		if err != nil {
			return out, err
		}
		ev.Data = bytes.Clone(ev.Data)
		out = append(out, ev)
	}
}

func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: error\ndata: x\r\n\r\n",
		"data:a\rdata:b\r\r",
		": comment\n\ndata\n\nid: 1\nretry: 5\ndata: two\ndata: lines\n\n",
		"data: partial",
		"\r\n\r\n\n\r",
	} {
		f.Add([]byte(s))
	}
	const max = 512
	eq := cmp.Comparer(func(a, b Event) bool { return a.Name == b.Name && bytes.Equal(a.Data, b.Data) })
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := decodeAll(bytes.NewReader(in), max)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
		// Cutting the input into one-byte reads changes nothing, a CR
		// and LF split between reads included.
		bytewise, err2 := decodeAll(iotest.OneByteReader(bytes.NewReader(in)), max)
		if !cmp.Equal(whole, bytewise, eq) || errors.Is(err, ErrEventTooLarge) != errors.Is(err2, ErrEventTooLarge) {
			t.Fatalf("one-byte reads differ: %q/%v vs %q/%v", whole, err, bytewise, err2)
		}
		for _, ev := range whole {
			if len(ev.Data) > max {
				t.Fatalf("event of %d bytes passed the %d bound", len(ev.Data), max)
			}
		}
		if errors.Is(err, ErrEventTooLarge) {
			return
		}
		if ref := referenceEvents(in); !cmp.Equal(ref, whole, eq) && !(len(ref) == 0 && len(whole) == 0) {
			t.Fatalf("decoder %q, reference %q", whole, ref)
		}
	})
}

func FuzzParseError(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"m","type":"t","param":"p","code":"c"}}`,
		`{"error":{"message":"m","code":429}}`,
		`{"error":"text"}`,
		`{"error":null}`,
		`<html>`,
		``,
		`{"error":{"message":{"nested":true},"type":["x"]}}`,
	} {
		f.Add(502, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := ParseError(status, body)
		if e == nil || e.Status != status {
			t.Fatalf("ParseError(%d) = %+v", status, e)
		}
		if e.Message == "" && e.Type == "" && e.Code == "" {
			t.Fatal("an error with nothing to say")
		}
		if len(e.Message) > maxErrorMessage+len("…") || len(e.Code) > maxErrorField+len("…") ||
			len(e.Type) > maxErrorField+len("…") || len(e.Param) > maxErrorField+len("…") {
			t.Fatalf("unbounded field: %d %d %d %d", len(e.Message), len(e.Code), len(e.Type), len(e.Param))
		}
		if utf8.ValidString(string(body)) && !utf8.ValidString(e.Message) {
			t.Fatalf("clipping broke a rune: %q", e.Message)
		}
		// What WriteError writes reads back the same.
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back := ParseError(status, b)
		if back.Type != e.Type || back.Code != e.Code || back.Param != e.Param {
			t.Fatalf("round trip %+v -> %+v", e, back)
		}
	})
}

// FuzzRequestRoundTrip checks that a request that decodes encodes, and
// decodes again to the same value, members it does not name included.
func FuzzRequestRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi","x_extra":{"a":[1]}}],"stream":true,"stop":["\n"],"logit_bias":{"1":2}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{"data":"x"}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}],"tool_choice":"auto"}`,
		`{"MODEL":"m","Model":"n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var r ChatCompletionRequest
		if json.Unmarshal(in, &r) != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
		var back ChatCompletionRequest
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("an encoded request does not decode: %v\n%s", err, b)
		}
		b2, err := json.Marshal(back)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
