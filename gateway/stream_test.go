package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/a2a"
)

func TestParseSSE(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name      string
		eventType string
		data      string
		want      StreamEvent
		terminal  bool
		failure   bool
	}{
		{
			name:      "delta is a chunk",
			eventType: "message",
			data:      `{"type":"message.delta","payload":{"content":"Hel"},"run_id":"r1","sequence":3,"timestamp":1733371200123}`,
			want:      StreamEvent{Type: "chunk", WireType: "message.delta", Content: "Hel", Timestamp: "1733371200123", Payload: raw(`{"content":"Hel"}`), RunID: "r1", Sequence: 3},
		},
		{
			name:      "empty event name is message",
			eventType: "",
			data:      `{"type":"message.delta","payload":{"content":"x"},"run_id":"r1","sequence":1}`,
			want:      StreamEvent{Type: "chunk", WireType: "message.delta", Content: "x", Payload: raw(`{"content":"x"}`), RunID: "r1", Sequence: 1},
		},
		{
			name:      "final message",
			eventType: "message",
			data:      `{"type":"message.final","payload":{"content":"Hello","parts":[{"text":"Hello"}]},"run_id":"r1","sequence":4,"timestamp":5}`,
			want:      StreamEvent{Type: "message.final", WireType: "message.final", Content: "Hello", Timestamp: "5", Payload: raw(`{"content":"Hello","parts":[{"text":"Hello"}]}`), RunID: "r1", Sequence: 4},
		},
		{
			name:      "done",
			eventType: "message",
			data:      `{"type":"done","payload":{"status":"COMPLETED"},"run_id":"r1","sequence":9,"timestamp":7}`,
			want:      StreamEvent{Type: "done", WireType: "done", Timestamp: "7", Payload: raw(`{"status":"COMPLETED"}`), RunID: "r1", Sequence: 9},
			terminal:  true,
		},
		{
			name:      "done without payload",
			eventType: "message",
			data:      `{"type":"done","run_id":"r1","sequence":9}`,
			want:      StreamEvent{Type: "done", WireType: "done", RunID: "r1", Sequence: 9},
			terminal:  true,
		},
		{
			name:      "done naming a failure is a failure",
			eventType: "message",
			data:      `{"type":"done","payload":{"status":"FAILED"},"run_id":"r1","sequence":9}`,
			want:      StreamEvent{Type: "done", WireType: "done", Payload: raw(`{"status":"FAILED"}`), RunID: "r1", Sequence: 9},
			terminal:  true, failure: true,
		},
		{
			name:      "done naming a cancellation is a failure",
			eventType: "message",
			data:      `{"type":"done","payload":{"status":"CANCELLED"},"run_id":"r1","sequence":9}`,
			want:      StreamEvent{Type: "done", WireType: "done", Payload: raw(`{"status":"CANCELLED"}`), RunID: "r1", Sequence: 9},
			terminal:  true, failure: true,
		},
		{
			name:      "error",
			eventType: "message",
			data:      `{"type":"error","payload":{"status":"FAILED","reason":"agent crashed","content":"agent crashed"},"run_id":"r1","sequence":8}`,
			want:      StreamEvent{Type: "error", WireType: "error", Content: "agent crashed", Payload: raw(`{"status":"FAILED","reason":"agent crashed","content":"agent crashed"}`), RunID: "r1", Sequence: 8},
			terminal:  true, failure: true,
		},
		{
			name:      "error with an object error",
			eventType: "message",
			data:      `{"type":"error","payload":{"error":{"code":-32603,"message":"boom"}},"run_id":"r1","sequence":8}`,
			want:      StreamEvent{Type: "error", WireType: "error", Content: "boom", Payload: raw(`{"error":{"code":-32603,"message":"boom"}}`), RunID: "r1", Sequence: 8},
			terminal:  true, failure: true,
		},
		{
			name:      "status RUNNING",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"RUNNING"},"run_id":"r1","sequence":2}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusRunning, Payload: raw(`{"status":"RUNNING"}`), RunID: "r1", Sequence: 2},
		},
		{
			name:      "status COMPLETED ends the run",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"COMPLETED"},"run_id":"r1","sequence":5}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusCompleted, Payload: raw(`{"status":"COMPLETED"}`), RunID: "r1", Sequence: 5},
			terminal:  true,
		},
		{
			name:      "status FAILED without an error event (KB-15)",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"FAILED","reason":"output failed validation"},"run_id":"r1","sequence":5}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusFailed, Content: "output failed validation", Payload: raw(`{"status":"FAILED","reason":"output failed validation"}`), RunID: "r1", Sequence: 5},
			terminal:  true, failure: true,
		},
		{
			name:      "status CANCELLED",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"CANCELLED","reason":"cancelled by the user"},"run_id":"r1","sequence":5}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusCancelled, Content: "cancelled by the user", Payload: raw(`{"status":"CANCELLED","reason":"cancelled by the user"}`), RunID: "r1", Sequence: 5},
			terminal:  true, failure: true,
		},
		{
			name:      "status WAITING_USER is a pause",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"WAITING_USER","reason":"input required"},"run_id":"r1","sequence":5}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusWaitingUser, Content: "input required", Payload: raw(`{"status":"WAITING_USER","reason":"input required"}`), RunID: "r1", Sequence: 5},
		},
		{
			name:      "an unrecognised status ends nothing",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":"completed"},"run_id":"r1","sequence":5}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: "completed", Payload: raw(`{"status":"completed"}`), RunID: "r1", Sequence: 5},
		},
		{
			name:      "an agent's progress",
			eventType: "message",
			data:      `{"type":"status","payload":{"message":"Searching the web"},"run_id":"r1","sequence":3}`,
			want:      StreamEvent{Type: "status", WireType: "status", Content: "Searching the web", Payload: raw(`{"message":"Searching the web"}`), RunID: "r1", Sequence: 3},
		},
		{
			name:      "a status that is not a string",
			eventType: "message",
			data:      `{"type":"status","payload":{"status":3,"message":"m"},"run_id":"r1","sequence":3}`,
			want:      StreamEvent{Type: "status", WireType: "status", Content: "m", Payload: raw(`{"status":3,"message":"m"}`), RunID: "r1", Sequence: 3},
		},
		{
			name:      "hitl",
			eventType: "message",
			data:      `{"type":"hitl","payload":{"hitl":{"question":"Which city?"}},"run_id":"r1","sequence":4}`,
			want:      StreamEvent{Type: "hitl", WireType: "hitl", Payload: raw(`{"hitl":{"question":"Which city?"}}`), RunID: "r1", Sequence: 4},
		},
		{
			name:      "a type added later passes through",
			eventType: "message",
			data:      `{"type":"tool.progress","payload":{"text":"50%"},"run_id":"r1","sequence":4}`,
			want:      StreamEvent{Type: "tool.progress", WireType: "tool.progress", Content: "50%", Payload: raw(`{"text":"50%"}`), RunID: "r1", Sequence: 4},
		},
		{
			name:      "content order: content before text",
			eventType: "message",
			data:      `{"type":"x","payload":{"text":"t","content":"c","delta":"d"},"run_id":"r1","sequence":1}`,
			want:      StreamEvent{Type: "x", WireType: "x", Content: "c", Payload: raw(`{"text":"t","content":"c","delta":"d"}`), RunID: "r1", Sequence: 1},
		},
		{
			name:      "content order: an empty content is skipped",
			eventType: "message",
			data:      `{"type":"x","payload":{"content":"","delta":"d"},"run_id":"r1","sequence":1}`,
			want:      StreamEvent{Type: "x", WireType: "x", Content: "d", Payload: raw(`{"content":"","delta":"d"}`), RunID: "r1", Sequence: 1},
		},
		{
			name:      "a payload that is a string",
			eventType: "message",
			data:      `{"type":"message.delta","payload":"plain","run_id":"r1","sequence":1}`,
			want:      StreamEvent{Type: "chunk", WireType: "message.delta", Content: "plain", Payload: raw(`"plain"`), RunID: "r1", Sequence: 1},
		},
		{
			name:      "a timestamp that is a string",
			eventType: "message",
			data:      `{"type":"done","timestamp":"1733371200123","run_id":"r1","sequence":1}`,
			want:      StreamEvent{Type: "done", WireType: "done", Timestamp: "1733371200123", RunID: "r1", Sequence: 1},
			terminal:  true,
		},
		{
			name:      "legacy chunk, plain text",
			eventType: "chunk",
			data:      "Hello, world",
			want:      StreamEvent{Type: "chunk", WireType: "chunk", Content: "Hello, world"},
		},
		{
			name:      "legacy chunk, JSON",
			eventType: "chunk",
			data:      `{"content":"Hi","timestamp":12}`,
			want:      StreamEvent{Type: "chunk", WireType: "chunk", Content: "Hi", Timestamp: "12", Payload: raw(`{"content":"Hi","timestamp":12}`)},
		},
		{
			name:      "legacy done, empty data",
			eventType: "done",
			data:      "",
			want:      StreamEvent{Type: "done", WireType: "done"},
			terminal:  true,
		},
		{
			name:      "legacy error, plain text",
			eventType: "error",
			data:      "the agent is unreachable",
			want:      StreamEvent{Type: "error", WireType: "error", Content: "the agent is unreachable"},
			terminal:  true, failure: true,
		},
		{
			name:      "legacy error, JSON",
			eventType: "error",
			data:      `{"error":"quota exceeded"}`,
			want:      StreamEvent{Type: "error", WireType: "error", Content: "quota exceeded", Payload: raw(`{"error":"quota exceeded"}`)},
			terminal:  true, failure: true,
		},
		{
			name:      "legacy status",
			eventType: "status",
			data:      `{"status":"FAILED"}`,
			want:      StreamEvent{Type: "status", WireType: "status", Status: StatusFailed, Payload: raw(`{"status":"FAILED"}`)},
			terminal:  true, failure: true,
		},
		{
			name:      "legacy, data that only looks like JSON",
			eventType: "chunk",
			data:      `{not json`,
			want:      StreamEvent{Type: "chunk", WireType: "chunk", Content: `{not json`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSSE(tc.eventType, tc.data)
			if err != nil {
				t.Fatalf("ParseSSE: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseSSE (-want +got):\n%s", diff)
			}
			if got.IsTerminal() != tc.terminal {
				t.Errorf("IsTerminal = %v, want %v", got.IsTerminal(), tc.terminal)
			}
			if got.IsFailure() != tc.failure {
				t.Errorf("IsFailure = %v, want %v", got.IsFailure(), tc.failure)
			}
		})
	}
}

func TestParseSSEMalformed(t *testing.T) {
	tests := []struct {
		name, data string
	}{
		{"not JSON", `hello`},
		{"an array", `[1,2]`},
		{"no type", `{"payload":{},"run_id":"r1","sequence":1}`},
		{"an empty type", `{"type":"","run_id":"r1","sequence":1}`},
		{"a type that is a number", `{"type":5,"run_id":"r1","sequence":1}`},
		{"a sequence that is a string", `{"type":"done","run_id":"r1","sequence":"1"}`},
		{"a fractional timestamp", `{"type":"done","run_id":"r1","sequence":1,"timestamp":1.5}`},
		{"a timestamp that is an object", `{"type":"done","run_id":"r1","sequence":1,"timestamp":{}}`},
		{"empty", ``},
		{"trailing garbage", `{"type":"done"} x`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSSE("message", tc.data)
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("ParseSSE(%q) = %v, want ErrMalformedEvent", tc.data, err)
			}
		})
	}
}

// The error of a malformed frame names what is wrong, never what the frame
// carried: frames may hold what an agent was given.
func TestParseSSEErrorQuotesNothing(t *testing.T) {
	_, err := ParseSSE("message", `{"type":"done","sequence":"sk-live-SECRET"}`)
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("err = %v, want an error without the frame's values", err)
	}
}

func TestStatusVocabulary(t *testing.T) {
	for _, s := range []Status{StatusQueued, StatusRunning, StatusWaitingUser, StatusCompleted, StatusFailed, StatusCancelled, "", "DONE", "failed"} {
		ev := StreamEvent{Type: EventStatus, Status: s}
		if got, want := ev.IsTerminal(), s == StatusCompleted || s == StatusFailed || s == StatusCancelled; got != want {
			t.Errorf("status %q: IsTerminal = %v, want %v", s, got, want)
		}
		if got, want := ev.IsFailure(), s == StatusFailed || s == StatusCancelled; got != want {
			t.Errorf("status %q: IsFailure = %v, want %v", s, got, want)
		}
		// Only a status event's status counts.
		other := StreamEvent{Type: EventChunk, Status: s}
		if other.IsTerminal() || other.IsFailure() {
			t.Errorf("chunk with status %q: IsTerminal %v IsFailure %v, want false", s, other.IsTerminal(), other.IsFailure())
		}
	}
}

// frame renders an event as the gateway sends it.
func frame(ev Event) []byte {
	body, err := json.Marshal(ev.Frame())
	if err != nil {
		panic(err)
	}
	return a2a.AppendEvent(nil, a2a.Event{ID: strconv.FormatInt(ev.Sequence, 10), Event: SSEEventName, Data: body})
}

func TestReadEvents(t *testing.T) {
	evs := []Event{
		{RunID: "r1", Sequence: 1, Type: EventStatus, Payload: json.RawMessage(`{"status":"RUNNING"}`)},
		{RunID: "r1", Sequence: 2, Type: EventMessageDelta, Payload: json.RawMessage(`{"content":"a"}`)},
		{RunID: "r1", Sequence: 3, Type: EventStatus, Payload: json.RawMessage(`{"status":"FAILED","reason":"late"}`)},
		{RunID: "r1", Sequence: 4, Type: EventError, Payload: json.RawMessage(`{"status":"FAILED","reason":"late"}`)},
	}
	var all []byte
	for _, ev := range evs {
		all = append(all, frame(ev)...)
	}
	t.Run("stops at the first terminal event", func(t *testing.T) {
		var got []string
		stopped, err := readEvents(strings.NewReader(string(all)), "r1", func(ev StreamEvent) bool {
			got = append(got, ev.ID+":"+ev.Type)
			return true
		})
		if err != nil || stopped {
			t.Fatalf("readEvents = %v, %v; want false, nil", stopped, err)
		}
		if diff := cmp.Diff([]string{"1:status", "2:chunk", "3:status"}, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("keepalives and comments are skipped", func(t *testing.T) {
		in := ": keepalive\n\n" + string(frame(evs[0])) + ": keepalive\n\n" + string(frame(evs[2]))
		n := 0
		_, err := readEvents(strings.NewReader(in), "r1", func(StreamEvent) bool { n++; return true })
		if err != nil || n != 2 {
			t.Fatalf("readEvents: %d events, %v; want 2, nil", n, err)
		}
	})
	t.Run("a clean end before the terminal event", func(t *testing.T) {
		_, err := readEvents(strings.NewReader(string(frame(evs[0]))), "r1", func(StreamEvent) bool { return true })
		if !errors.Is(err, ErrStreamEnded) || errors.Is(err, io.ErrUnexpectedEOF) || !IsRetryable(err) {
			t.Fatalf("err = %v, want a retryable ErrStreamEnded", err)
		}
	})
	t.Run("a cut inside a frame", func(t *testing.T) {
		f := frame(evs[1])
		in := string(frame(evs[0])) + string(f[:len(f)/2])
		n := 0
		_, err := readEvents(strings.NewReader(in), "r1", func(StreamEvent) bool { n++; return true })
		if !errors.Is(err, ErrStreamEnded) || !errors.Is(err, io.ErrUnexpectedEOF) || n != 1 {
			t.Fatalf("%d events, err = %v; want 1 and ErrStreamEnded with io.ErrUnexpectedEOF", n, err)
		}
	})
	t.Run("the consumer stops", func(t *testing.T) {
		n := 0
		stopped, err := readEvents(strings.NewReader(string(all)), "r1", func(StreamEvent) bool { n++; return false })
		if !stopped || err != nil || n != 1 {
			t.Fatalf("readEvents = %v, %v after %d events; want true, nil after 1", stopped, err, n)
		}
	})
	t.Run("a frame of another run", func(t *testing.T) {
		_, err := readEvents(strings.NewReader(string(all)), "r2", func(StreamEvent) bool { return true })
		if !errors.Is(err, ErrMalformedEvent) || IsRetryable(err) {
			t.Fatalf("err = %v, want a final ErrMalformedEvent", err)
		}
	})
	t.Run("a malformed frame", func(t *testing.T) {
		in := "id: 1\nevent: message\ndata: {oops\n\n"
		_, err := readEvents(strings.NewReader(in), "r1", func(StreamEvent) bool { return true })
		if !errors.Is(err, ErrMalformedEvent) || !strings.Contains(err.Error(), "frame id 1") {
			t.Fatalf("err = %v, want ErrMalformedEvent naming frame id 1", err)
		}
	})
	t.Run("the id persists to frames without one", func(t *testing.T) {
		body, _ := json.Marshal(evs[1].Frame())
		in := string(frame(evs[0])) + "event: message\ndata: " + string(body) + "\n\n"
		var ids []string
		_, _ = readEvents(strings.NewReader(in), "r1", func(ev StreamEvent) bool { ids = append(ids, ev.ID); return true })
		if diff := cmp.Diff([]string{"1", "1"}, ids); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
	})
}
