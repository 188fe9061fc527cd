package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// Request is what the agent gets for a run (Type "run") or when the
// platform cancels one (Type "cancel", stdio only).
type Request struct {
	Type     string `json:"type"`
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id,omitempty"`
	// Event is the event type that started (agent.invocation) or resumed
	// (agent.followup, interaction.created) the run.
	Event     string `json:"event,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Subject is the person who triggered the run; BillingMode and
	// ToolClass what the platform granted.
	Subject     string               `json:"subject,omitempty"`
	BillingMode string               `json:"billing_mode,omitempty"`
	ToolClass   string               `json:"tool_class,omitempty"`
	Context     *delivery.RunContext `json:"context,omitempty"`
	// Prompt is Context rendered for a model: System (instructions and
	// the thread, untrusted parts inside marked data blocks) apart from
	// Trigger (the triggering message).
	Prompt *Prompt `json:"prompt,omitempty"`
	// Reason says why a run was cancelled.
	Reason string `json:"reason,omitempty"`
}

// Prompt is a run's context rendered for a model.
type Prompt struct {
	System  string `json:"system"`
	Trigger string `json:"trigger"`
}

// Reply is one answer line of the agent. RunID is required on stdio.
type Reply struct {
	RunID string `json:"run_id,omitempty"`
	// Type is status (Text is the status line), message (ContentMD goes
	// to the run's thread), await_input (StatusLine; the run waits for a
	// person), finish (State completed or failed, Summary, Reason) or
	// error (Message; the run fails as runtime_error).
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	ContentMD  string `json:"content_md,omitempty"`
	StatusLine string `json:"status_line,omitempty"`
	State      string `json:"state,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
}

// MaxLineBytes bounds one line either way.
const MaxLineBytes = 1 << 20

// decodeReply reads one reply line strictly enough to act on it.
func decodeReply(line []byte) (Reply, error) {
	var r Reply
	if !utf8.Valid(line) {
		return r, errors.New("bridge: a reply line is not UTF-8")
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("bridge: a reply line is not a JSON object: %w", err)
	}
	switch r.Type {
	case "status", "message", "await_input", "error":
	case "finish":
		if r.State != string(delivery.RunCompleted) && r.State != string(delivery.RunFailed) {
			return r, errors.New(`bridge: a finish line's state is "completed" or "failed"`)
		}
	default:
		return r, fmt.Errorf("bridge: unknown reply type %q", truncate(r.Type))
	}
	return r, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// request builds the run request the agent gets.
func request(run *adapter.Run, rc delivery.RunContext) Request {
	inv := run.Invocation
	rendered := adapter.RenderContext(rc, nil)
	return Request{Type: "run", RunID: run.ID, ThreadID: run.ThreadID, Event: inv.Type, MessageID: inv.MessageID,
		Subject: inv.Claims.Subject, BillingMode: string(inv.Claims.BillingMode), ToolClass: string(inv.Claims.ToolClass),
		Context: &rc, Prompt: &Prompt{System: rendered.System, Trigger: rendered.Trigger}}
}
