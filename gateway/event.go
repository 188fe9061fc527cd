package gateway

import (
	"encoding/json"
	"time"
)

// Event types. Any other type an agent or a later gateway sends is passed
// through by name.
const (
	EventMessageDelta              = "message.delta" // a chunk of the agent's answer: {"content"}
	EventMessageFinal              = "message.final" // the turn's whole answer: {"content", "parts"}
	EventStatus                    = "status"        // {"status", "reason"} or an agent's progress {"message"}
	EventHITL                      = "hitl"          // a pause for a person's answer: {"hitl": …}
	EventDone                      = "done"          // the live stream of a completed run ends
	EventError                     = "error"         // the live stream of a failed or cancelled run ends
	EventOAuthRequired             = "connector.oauth_required"
	EventWriteConfirmationRequired = "tool.write_confirmation_required"
	EventToolCall                  = "tool.call"
	EventToolResult                = "tool.result"
	EventArtifact                  = "artifact" // an artifact the agent produced: the Artifact
)

// SSEEventName is the SSE "event:" field of every frame the gateway sends.
const SSEEventName = "message"

// Event is one event of a run. Sequence numbers a run's events from 1 in
// the order they were recorded, without gaps; the SSE id of an event is
// its sequence.
type Event struct {
	RunID    string          `json:"run_id"`
	Sequence int64           `json:"sequence"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
	At       time.Time       `json:"-"`
	// TraceID and SpanID are the W3C trace context the event was recorded
	// in (32 and 16 lower-case hex digits), empty when it was recorded
	// outside a trace.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// Frame is the JSON body of one SSE frame: the event with its time in
// milliseconds since the epoch.
type Frame struct {
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	RunID     string          `json:"run_id"`
	Sequence  int64           `json:"sequence"`
	Timestamp int64           `json:"timestamp"`
}

// Frame returns the event's SSE body.
func (e Event) Frame() Frame {
	return Frame{Type: e.Type, Payload: e.Payload, RunID: e.RunID, Sequence: e.Sequence, Timestamp: e.At.UnixMilli()}
}

// StatusPayload is the payload of a "status" event the gateway records
// for a lifecycle change.
type StatusPayload struct {
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// EndPayload is the payload of "done" and "error": the terminal status
// and why; Content repeats the reason for readers that show content.
type EndPayload struct {
	Status  Status `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Content string `json:"content,omitempty"`
}
