package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Action is what a gated write submits to the judge: the write's action
// type and context, the reads buffered before it as evidence, the agent's
// stated reasoning, and the session it belongs to.
type Action struct {
	// ActionID identifies the work item. The SDK mints one when the write
	// has no action-id builder; a resumed session requires the caller's own.
	ActionID   string `json:"action_id"`
	ActionType string `json:"action_type"`

	TenantID  string `json:"tenant_id"`
	TeamID    string `json:"team_id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`

	// ContextType is set from Context when encoding and selects the
	// context's Go type when decoding.
	ContextType string     `json:"context_type"`
	Context     Context    `json:"context"`
	Evidence    []Evidence `json:"evidence"`
	// Reasoning is the agent's own account of why it writes; the judge
	// checks it against the evidence rather than trusting it.
	Reasoning string `json:"reasoning,omitempty"`
	// Resume marks a write in a resumed session: the gate answers with the
	// standing verdict for this action id or one of the resume refusals.
	Resume bool `json:"resume,omitempty"`
	// Floor is the least severe verdict the caller accepts: hold asks that
	// a person decide even when the rules would pass the write (the tool
	// gateway's write-class calls). It can raise a verdict, never lower
	// one; empty means pass.
	Floor Outcome `json:"floor,omitempty"`
}

// Evidence is one buffered read: the read tool's call and what it returned,
// with its provenance in the trajectory.
type Evidence struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	// Error is the read's error text when it failed; a failed read is
	// evidence too.
	Error      string     `json:"error,omitempty"`
	Provenance Provenance `json:"provenance"`
}

// Provenance says where a piece of evidence came from, so the judge and the
// operator can tell an observed tool result from text the agent supplied.
type Provenance struct {
	// Sequence is the read's position among the session's tool calls,
	// starting at 1.
	Sequence   int       `json:"seq"`
	CallID     string    `json:"call_id,omitempty"`
	ObservedAt time.Time `json:"observed_at"`
	// Truncated is set when the result was cut to the evidence size limit;
	// OriginalBytes is then its size before cutting.
	Truncated     bool `json:"truncated,omitempty"`
	OriginalBytes int  `json:"original_bytes,omitempty"`
}

// Validate checks an action before it is submitted (SDK side) or judged
// (service side).
func (a *Action) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"action_id", a.ActionID}, {"action_type", a.ActionType}, {"tenant_id", a.TenantID},
		{"team_id", a.TeamID}, {"agent_id", a.AgentID}, {"session_id", a.SessionID},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		}
	}
	if a.Context == nil {
		errs = append(errs, errors.New("context: required"))
	} else {
		if a.ContextType != "" && a.ContextType != a.Context.ContextType() {
			errs = append(errs, fmt.Errorf("context_type: %q does not match a %s context", a.ContextType, a.Context.ContextType()))
		}
		if err := a.Context.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("context: %w", err))
		}
	}
	for i, e := range a.Evidence {
		if e.Tool == "" {
			errs = append(errs, fmt.Errorf("evidence[%d].tool: required", i))
		}
		if e.Provenance.Sequence < 1 {
			errs = append(errs, fmt.Errorf("evidence[%d].provenance.seq: must be at least 1", i))
		}
		if e.Provenance.ObservedAt.IsZero() {
			errs = append(errs, fmt.Errorf("evidence[%d].provenance.observed_at: required", i))
		}
		if e.Provenance.OriginalBytes < 0 {
			errs = append(errs, fmt.Errorf("evidence[%d].provenance.original_bytes: must not be negative", i))
		}
	}
	if a.Floor != "" && !a.Floor.Valid() {
		errs = append(errs, fmt.Errorf("floor: %q is not pass, hold or kill", a.Floor))
	}
	return errors.Join(errs...)
}

type actionWire struct {
	ActionID    string          `json:"action_id"`
	ActionType  string          `json:"action_type"`
	TenantID    string          `json:"tenant_id"`
	TeamID      string          `json:"team_id"`
	AgentID     string          `json:"agent_id"`
	SessionID   string          `json:"session_id"`
	ContextType string          `json:"context_type"`
	Context     json.RawMessage `json:"context"`
	Evidence    []Evidence      `json:"evidence"`
	Reasoning   string          `json:"reasoning,omitempty"`
	Resume      bool            `json:"resume,omitempty"`
	Floor       Outcome         `json:"floor,omitempty"`
}

// MarshalJSON fills context_type from the context and writes evidence as
// [] rather than null when there is none.
func (a Action) MarshalJSON() ([]byte, error) {
	w := actionWire{
		ActionID: a.ActionID, ActionType: a.ActionType, TenantID: a.TenantID, TeamID: a.TeamID,
		AgentID: a.AgentID, SessionID: a.SessionID, ContextType: a.ContextType,
		Evidence: a.Evidence, Reasoning: a.Reasoning, Resume: a.Resume, Floor: a.Floor,
	}
	if w.Evidence == nil {
		w.Evidence = []Evidence{}
	}
	if a.Context != nil {
		if w.ContextType == "" {
			w.ContextType = a.Context.ContextType()
		}
		b, err := json.Marshal(a.Context)
		if err != nil {
			return nil, err
		}
		w.Context = b
	} else {
		w.Context = json.RawMessage("null")
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes the context into the Go type its context_type
// names, refusing unknown fields at the top level and in evidence.
func (a *Action) UnmarshalJSON(data []byte) error {
	out, _, err := decodeAction(data)
	if err != nil {
		return err
	}
	*a = out
	return nil
}

// decodeAction decodes an action's members once, and returns its context
// as written beside it.
func decodeAction(data []byte) (Action, json.RawMessage, error) {
	var w actionWire
	if err := unmarshalKnown(data, &w, "action"); err != nil {
		return Action{}, nil, err
	}
	out := Action{
		ActionID: w.ActionID, ActionType: w.ActionType, TenantID: w.TenantID, TeamID: w.TeamID,
		AgentID: w.AgentID, SessionID: w.SessionID, ContextType: w.ContextType,
		Evidence: w.Evidence, Reasoning: w.Reasoning, Resume: w.Resume, Floor: w.Floor,
	}
	if len(w.Context) > 0 && string(w.Context) != "null" {
		c, err := decodeContext(w.ContextType, w.Context)
		if err != nil {
			return Action{}, nil, fmt.Errorf("gate: action: %w", err)
		}
		out.Context = c
	}
	return out, w.Context, nil
}

// DecodeActionUnvalidated decodes a submitted action as strictly as
// DecodeAction and leaves Validate to the caller: the gate fills in what
// the caller's token and session establish (an omitted agent_id or
// team_id) before it validates.
func DecodeActionUnvalidated(data []byte) (Action, error) {
	var a Action
	if err := decodeStrict(data, &a); err != nil {
		return Action{}, fmt.Errorf("gate: decode action: %w", err)
	}
	return a, nil
}

// DecodeSubmitted decodes a submitted action as strictly as
// DecodeActionUnvalidated, reading the document once past the structure
// check, and returns its context as it was sent: what the gate
// fingerprints (FingerprintJSON).
func DecodeSubmitted(data []byte) (Action, json.RawMessage, error) {
	if err := checkDocument(data); err != nil {
		return Action{}, nil, fmt.Errorf("gate: decode action: %w", err)
	}
	a, raw, err := decodeAction(data)
	if err != nil {
		return Action{}, nil, fmt.Errorf("gate: decode action: %w", err)
	}
	return a, raw, nil
}

// DecodeAction decodes and validates a submitted action strictly:
// duplicate member names anywhere (evidence included), unknown fields
// outside a generic context's extras, and trailing data are refused.
func DecodeAction(data []byte) (Action, error) {
	var a Action
	if err := decodeStrict(data, &a); err != nil {
		return Action{}, fmt.Errorf("gate: decode action: %w", err)
	}
	if err := a.Validate(); err != nil {
		return Action{}, fmt.Errorf("gate: decode action: %w", err)
	}
	return a, nil
}
