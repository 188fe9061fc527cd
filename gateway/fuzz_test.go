package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseSSE: no input panics; an error is always ErrMalformedEvent; a
// terminal event is one of the shapes IsTerminal documents, and a failure
// is always terminal.
func FuzzParseSSE(f *testing.F) {
	for _, s := range []struct{ typ, data string }{
		{"message", `{"type":"message.delta","payload":{"content":"Hel"},"run_id":"r1","sequence":3,"timestamp":1733371200123}`},
		{"message", `{"type":"status","payload":{"status":"FAILED","reason":"x"},"run_id":"r1","sequence":5}`},
		{"message", `{"type":"status","payload":{"status":"WAITING_USER"},"run_id":"r1","sequence":5}`},
		{"message", `{"type":"status","payload":{"message":"thinking"},"run_id":"r1","sequence":5}`},
		{"message", `{"type":"done","payload":{"status":"CANCELLED"},"run_id":"r1","sequence":9}`},
		{"message", `{"type":"error","payload":{"error":{"message":"boom"}}}`},
		{"message", `{"type":"hitl","payload":"q","timestamp":"17"}`},
		{"", `{"type":"x","payload":null,"timestamp":null}`},
		{"message", `{"type":"x","timestamp":1e3}`},
		{"chunk", "plain text"},
		{"error", `{"error":"quota"}`},
		{"status", `{"status":"COMPLETED"}`},
		{"done", ""},
		{"message", "{"},
	} {
		f.Add(s.typ, s.data)
	}
	f.Fuzz(func(t *testing.T, typ, data string) {
		ev, err := ParseSSE(typ, data)
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("error %v is not ErrMalformedEvent", err)
			}
			if typ != "" && typ != SSEEventName {
				t.Fatalf("the legacy form %q failed: %v", typ, err)
			}
			return
		}
		if ev.Type == "" && (typ == "" || typ == SSEEventName) {
			t.Fatal("an event without a type")
		}
		if (ev.Type == EventChunk) != (ev.WireType == EventMessageDelta || ev.WireType == EventChunk) {
			t.Fatalf("Type %q for wire type %q", ev.Type, ev.WireType)
		}
		if ev.Status != "" && ev.Type != EventStatus {
			t.Fatalf("Status %q on a %q event", ev.Status, ev.Type)
		}
		terminal := ev.Type == EventDone || ev.Type == EventError || (ev.Type == EventStatus && ev.Status.Terminal())
		if ev.IsTerminal() != terminal {
			t.Fatalf("IsTerminal = %v for %+v", ev.IsTerminal(), ev)
		}
		if ev.IsFailure() && !ev.IsTerminal() {
			t.Fatalf("a failure that is not terminal: %+v", ev)
		}
		if ev.Type == EventStatus && ev.Status == StatusWaitingUser && ev.IsTerminal() {
			t.Fatal("WAITING_USER ended the stream")
		}
	})
}

// FuzzFrameRoundTrip: what the gateway writes (Event.Frame) reads back
// as the same event.
func FuzzFrameRoundTrip(f *testing.F) {
	f.Add("message.delta", "Hel", "r1", int64(3), int64(1733371200123))
	f.Add("status", "FAILED", "r-2", int64(1), int64(0))
	f.Add("tool.call", "\u2028\x00", "", int64(1<<62), int64(-1))
	f.Fuzz(func(t *testing.T, typ, content, runID string, seq, ms int64) {
		if typ == "" || !utf8.ValidString(typ) || !utf8.ValidString(runID) || !utf8.ValidString(content) {
			return // JSON carries text: invalid UTF-8 is replaced on the way
		}
		payload, _ := json.Marshal(map[string]string{"content": content, "status": content})
		ev := Event{RunID: runID, Sequence: seq, Type: typ, Payload: payload, At: time.UnixMilli(ms)}
		var buf bytes.Buffer
		buf.Write(frame(ev))
		var got []StreamEvent
		_, _ = readEvents(&buf, runID, func(se StreamEvent) bool { got = append(got, se); return true })
		if len(got) != 1 {
			t.Fatalf("%d events read back", len(got))
		}
		se := got[0]
		if se.WireType != typ || se.RunID != runID || se.Sequence != seq || se.ID != strconv.FormatInt(seq, 10) ||
			se.Timestamp != strconv.FormatInt(ms, 10) || !bytes.Equal(se.Payload, payload) {
			t.Fatalf("read back %+v from %+v", se, ev)
		}
		if content != "" && se.Content != content {
			t.Fatalf("content %q, want %q", se.Content, content)
		}
	})
}

// FuzzReadEvents: any byte stream ends the loop without a panic, and at
// most one terminal event is handed over: the last.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte(string(frame(Event{RunID: "r1", Sequence: 1, Type: EventStatus, Payload: json.RawMessage(`{"status":"RUNNING"}`)})) +
		string(frame(Event{RunID: "r1", Sequence: 2, Type: EventDone, Payload: json.RawMessage(`{"status":"COMPLETED"}`)}))))
	f.Add([]byte(": keepalive\n\nid: 1\nevent: chunk\ndata: hi\n\nevent: done\ndata:\n\n"))
	f.Add([]byte("id: 1\r\nevent: message\r\ndata: {\"type\":\"error\"}\r\n\r\n"))
	f.Add([]byte("data: {\"type\":\"status\",\"payload\":{\"status\":\"FAILED\"}}\n\ndata: x\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var got []StreamEvent
		stopped, err := readEvents(bytes.NewReader(stream), "r1", func(ev StreamEvent) bool {
			got = append(got, ev)
			return true
		})
		if stopped {
			t.Fatal("stopped without the consumer asking")
		}
		for i, ev := range got {
			if ev.IsTerminal() && i != len(got)-1 {
				t.Fatalf("event %d of %d is terminal", i, len(got))
			}
			if ev.RunID != "" && ev.RunID != "r1" {
				t.Fatalf("an event of run %q", ev.RunID)
			}
		}
		ended := len(got) > 0 && got[len(got)-1].IsTerminal()
		if ended != (err == nil) {
			t.Fatalf("ended %v with error %v", ended, err)
		}
	})
}
