package toolcall

import (
	"strconv"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/extmeta"
)

// URI identifies the extension: the metadata key and the card declaration.
const URI = "https://proto-labs.ai/a2a/ext/tool-call-v1"

// Description is the card declaration's description.
const Description = "Tool-call progress (started, completed, failed) in the metadata of status-update messages."

// Declaration returns the extension as an agent card declares it.
func Declaration() a2a.AgentExtension {
	return a2a.AgentExtension{URI: URI, Description: Description}
}

// Phase is where a tool call is in its life.
type Phase string

// The three phases.
const (
	PhaseStarted   Phase = "started"
	PhaseCompleted Phase = "completed"
	PhaseFailed    Phase = "failed"
)

// Payload is the tool-call-v1 payload. Args and Result are free-form JSON
// values, omitted when nil; Error is omitted when empty.
type Payload struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
	Phase      Phase  `json:"phase"`
	Args       any    `json:"args,omitempty"`
	Result     any    `json:"result,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Validate checks that the id and name are set and the phase is known.
func (p Payload) Validate() error {
	switch {
	case p.ToolCallID == "":
		return extmeta.Invalid(URI, "toolCallId", "must not be empty")
	case p.Name == "":
		return extmeta.Invalid(URI, "name", "must not be empty")
	}
	switch p.Phase {
	case PhaseStarted, PhaseCompleted, PhaseFailed:
		return nil
	}
	return extmeta.Invalid(URI, "phase", strconv.Quote(string(p.Phase))+" is not one of started, completed, failed")
}

// Metadata returns the fragment {URI: p}. It does not validate p: call
// Validate first (the agent SDK does).
func Metadata(p Payload) map[string]any { return extmeta.Fragment(URI, p) }

// Parse reads the tool-call-v1 payload from a metadata map: ok is false
// when md has none, and err (matching extmeta.ErrInvalid) reports one that
// is malformed.
func Parse(md map[string]any) (p Payload, ok bool, err error) {
	return extmeta.Parse(md, URI, read)
}

func read(r *extmeta.Reader) Payload {
	var p Payload
	p.ToolCallID = r.String("toolCallId", true)
	p.Name = r.String("name", true)
	p.Phase = Phase(r.String("phase", true))
	p.Args, _ = r.Value("args")
	p.Result, _ = r.Value("result")
	p.Error = r.String("error", false)
	return p
}
