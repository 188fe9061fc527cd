package delivery

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"time"
)

// Event types. An agent skips (and acknowledges) a type it does not know.
const (
	EventInvocation            = "agent.invocation"
	EventFollowup              = "agent.followup"
	EventInteractionCreated    = "interaction.created"
	EventCommandInvoked        = "command.invoked"
	EventAutocompleteRequested = "command.autocomplete_requested"
	EventCancelRequested       = "run.cancel_requested"
	EventRunStateChanged       = "run.state_changed"
	EventAccessChanged         = "access.changed"
	EventConfigChanged         = "agent.config_changed"
)

// TokenBearing reports whether events of type t carry an invocation
// token; such an event delivered without one is invalid.
func TokenBearing(t string) bool {
	switch t {
	case EventInvocation, EventFollowup, EventInteractionCreated, EventCommandInvoked, EventAutocompleteRequested:
		return true
	}
	return false
}

// Ephemeral reports whether events of type t are answered at once and
// never stored, acknowledged or redelivered.
func Ephemeral(t string) bool { return t == EventAutocompleteRequested }

// Event is one event of an agent's stream as delivered: the stored event
// (ID, Seq, Type, Payload) and the delivery's own fields
// (InvocationToken, Redelivered, TraceContext). Seq numbers an agent's
// events from 1 without gaps; ID stays the same on every redelivery.
type Event struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`

	// InvocationToken is fresh for every delivery of a token-bearing event.
	InvocationToken string `json:"invocation_token,omitempty"`
	// Redelivered is set on a delivery after the first to a consumer.
	Redelivered  bool          `json:"redelivered,omitempty"`
	TraceContext *TraceContext `json:"trace_context,omitempty"`
}

// TraceContext is the W3C trace context the event was recorded in.
type TraceContext struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// String names the event without its token or payload.
func (e Event) String() string {
	s := "Event{" + e.Type + " seq=" + strconv.FormatInt(e.Seq, 10) + " id=" + e.ID
	if e.InvocationToken != "" {
		s += " token=…"
	}
	if e.Redelivered {
		s += " redelivered"
	}
	return s + "}"
}

// GoString is String: a token never reaches %#v.
func (e Event) GoString() string { return e.String() }

// LogValue logs the event's type, sequence and id.
func (e Event) LogValue() slog.Value {
	return slog.GroupValue(slog.String("type", e.Type), slog.Int64("seq", e.Seq), slog.String("id", e.ID))
}

// InvocationPayload is the payload of agent.invocation: a run to start.
// Exactly one triggering object is set, as TriggerKind says.
type InvocationPayload struct {
	TriggerKind   TriggerKind `json:"trigger_kind"`
	RunID         string      `json:"run_id"`
	ThreadID      string      `json:"thread_id"`
	MessageID     string      `json:"message_id,omitempty"`
	InteractionID string      `json:"interaction_id,omitempty"`
	CommandID     string      `json:"command_id,omitempty"`
}

// FollowupPayload is the payload of agent.followup: a person's message
// for a run that waits for input (or, running, may take it).
type FollowupPayload struct {
	RunID     string `json:"run_id"`
	ThreadID  string `json:"thread_id"`
	MessageID string `json:"message_id"`
}

// Interaction is a person's use of a component (a button, a form).
type Interaction struct {
	ID       string            `json:"id"`
	RunID    string            `json:"run_id,omitempty"`
	ThreadID string            `json:"thread_id"`
	CustomID string            `json:"custom_id"`
	Values   map[string]string `json:"values,omitempty"`
}

// InteractionCreatedPayload is the payload of interaction.created.
type InteractionCreatedPayload struct {
	Interaction Interaction `json:"interaction"`
}

// CommandInvokedPayload is the payload of command.invoked.
type CommandInvokedPayload struct {
	CommandID string            `json:"command_id"`
	Name      string            `json:"name"`
	RunID     string            `json:"run_id,omitempty"`
	ThreadID  string            `json:"thread_id,omitempty"`
	Options   map[string]string `json:"options,omitempty"`
}

// AutocompleteRequestedPayload is the payload of
// command.autocomplete_requested: answer Ref before ExpiresAt.
type AutocompleteRequestedPayload struct {
	Ref       string    `json:"ref"`
	CommandID string    `json:"command_id"`
	Option    string    `json:"option"`
	Value     string    `json:"value"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CancelRequestedPayload is the payload of run.cancel_requested.
type CancelRequestedPayload struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason,omitempty"`
}

// RunStateChangedPayload is the payload of run.state_changed.
type RunStateChangedPayload struct {
	RunID       string   `json:"run_id"`
	State       RunState `json:"state"`
	StateReason string   `json:"state_reason,omitempty"`
	Version     int64    `json:"version"`
}

// AccessChangedPayload is the payload of access.changed: reload the
// allow list of who may trigger the agent.
type AccessChangedPayload struct {
	PermissionVersion int64 `json:"permission_version"`
}

// ConfigChangedPayload is the payload of agent.config_changed.
type ConfigChangedPayload struct {
	Version int64 `json:"version"`
}

// EventPage is an answer of pollAgentEvents: the events after the
// consumer's cursor, and the agent's newest sequence.
type EventPage struct {
	Events  []Event `json:"events"`
	HeadSeq int64   `json:"head_seq"`
}

// ConsumerAck acknowledges every event up to and including Seq.
type ConsumerAck struct {
	Seq int64 `json:"seq"`
}

// ConsumerRewind sets a consumer's cursor back, as an operator replaying
// an agent's events: those after AckedSeq are delivered again, each with
// a fresh token (the adapter's inbox keeps a stored event from running
// twice).
type ConsumerRewind struct {
	AckedSeq int64 `json:"acked_seq"`
}

// ConsumerState is a consumer's cursor: AckedSeq is the highest
// acknowledged sequence; HeadSeq the agent's newest event.
type ConsumerState struct {
	Consumer  string    `json:"consumer"`
	AckedSeq  int64     `json:"acked_seq"`
	HeadSeq   int64     `json:"head_seq"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// AgentTriggerers lists who may trigger the agent (the allow list an
// agent may check token subjects against).
type AgentTriggerers struct {
	PermissionVersion int64    `json:"permission_version"`
	Subjects          []string `json:"subjects"`
}

// Discovery tells an agent where the platform's delivery parts are.
// URLs may be relative to the base URL the agent was given.
type Discovery struct {
	InstanceID string      `json:"instance_id"`
	JWKSURI    string      `json:"jwks_uri"`
	Gateway    GatewayInfo `json:"gateway"`
	// Issuer is the "iss" of the platform's invocation tokens.
	Issuer string `json:"issuer"`
}

// GatewayInfo is where the WebSocket gateway listens, and which protocol
// versions it speaks.
type GatewayInfo struct {
	URL              string   `json:"url"`
	ProtocolVersions []string `json:"protocol_versions"`
}
