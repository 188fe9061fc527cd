package agent

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
)

// Result statuses. A skill speaks this vocabulary, not A2A task states; the
// agent translates.
const (
	StatusCompleted    = "COMPLETED"     // TASK_STATE_COMPLETED
	StatusFailed       = "FAILED"        // TASK_STATE_FAILED
	StatusWaitingUser  = "WAITING_USER"  // TASK_STATE_INPUT_REQUIRED
	StatusRejected     = "REJECTED"      // TASK_STATE_REJECTED
	StatusAuthRequired = "AUTH_REQUIRED" // TASK_STATE_AUTH_REQUIRED
)

// Markers of the data parts the agent adds to a result message, written
// as the NovaOS Python SDK's AgentBuilder writes them: in the part's own
// metadata under hitl.PartKey ("mediaType"), the part's mediaType field left
// empty.
const (
	// SkillMetadataMediaType tags the data part carrying Result.Metadata;
	// it is ordinary caller-visible data (the Python SDK's
	// NOVAOS_SKILL_METADATA_CONTENT_TYPE).
	SkillMetadataMediaType = hitl.SkillMetadataMediaType
	// PlatformMediaType tags the data part carrying platform fields, such
	// as the skill's error under SkillErrorKey; platforms read it for
	// themselves and do not show it as run data. It is the marker of all
	// NovaOS control data (the Python SDK's NOVAOS_METADATA_CONTENT_TYPE), so
	// package hitl reads HITL requests and pauses from the same kind of
	// part.
	PlatformMediaType = hitl.MetadataMediaType
	// SkillErrorKey is where the platform part carries a failed skill's
	// error text (the Python SDK's NOVAOS_SKILL_ERROR_KEY).
	SkillErrorKey = "skill_error"
)

// Result is what a skill returns: its output and how the task ends.
type Result struct {
	// Output becomes the result's content: a string is a text part, []byte
	// a raw part, an a2a.Part or []a2a.Part is used as is, json.RawMessage
	// and any other value a JSON data part. nil and "" add nothing.
	Output any
	// Status is one of the Status constants; "" means COMPLETED. The legacy
	// spellings QUEUED (SUBMITTED), RUNNING and IN_PROGRESS (WORKING) leave
	// the task open, ERROR means FAILED. Any other value fails the task
	// with a message naming it.
	Status string
	// Error explains a failure or rejection to the caller.
	Error string
	// Message, when set, is the text of the final status message: what the
	// agent says about reaching the state. By default that message carries
	// a copy of Output, so a caller reading either the status or the
	// artifact finds the result; a skill whose output is large sets Message
	// to keep the output in the artifact only.
	Message string
	// Metadata is returned to the caller as a data part tagged
	// SkillMetadataMediaType in its metadata.
	Metadata map[string]any
}

func (r *Result) isZero() bool {
	return r.Output == nil && r.Status == "" && r.Error == "" && r.Metadata == nil && r.Message == ""
}

// StatusState maps a Result status to the task state it ends in, following
// the vocabulary table: exact, upper-case spellings only. ok is false for a
// status outside the vocabulary.
func StatusState(status string) (state a2a.TaskState, ok bool) {
	switch status {
	case "", StatusCompleted:
		return a2a.TaskStateCompleted, true
	case StatusFailed, "ERROR":
		return a2a.TaskStateFailed, true
	case StatusWaitingUser:
		return a2a.TaskStateInputRequired, true
	case StatusRejected:
		return a2a.TaskStateRejected, true
	case StatusAuthRequired:
		return a2a.TaskStateAuthRequired, true
	case "QUEUED":
		return a2a.TaskStateSubmitted, true
	case "RUNNING", "IN_PROGRESS":
		return a2a.TaskStateWorking, true
	}
	return a2a.TaskStateUnspecified, false
}

// outputParts converts Result.Output to parts.
func outputParts(out any) ([]a2a.Part, error) {
	switch v := out.(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return nil, nil
		}
		return []a2a.Part{a2a.TextPart(v)}, nil
	case []byte:
		return []a2a.Part{a2a.RawPart(v, "", "application/octet-stream")}, nil
	case a2a.Part:
		return []a2a.Part{v}, nil
	case *a2a.Part:
		if v == nil {
			return nil, nil
		}
		return []a2a.Part{*v}, nil
	case []a2a.Part:
		return append([]a2a.Part(nil), v...), nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, fmt.Errorf("agent: output is not valid JSON")
		}
		return []a2a.Part{{Kind: a2a.PartData, Data: v, MediaType: "application/json"}}, nil
	}
	p, err := a2a.DataPart(out)
	if err != nil {
		return nil, fmt.Errorf("agent: output %T: %w", out, err)
	}
	return []a2a.Part{p}, nil
}

// metadataPart is Result.Metadata as a tagged data part.
func metadataPart(md map[string]any) (a2a.Part, error) {
	p, err := hitl.TaggedDataPart(md, SkillMetadataMediaType)
	if err != nil {
		return a2a.Part{}, fmt.Errorf("agent: result metadata: %w", err)
	}
	return p, nil
}

// errorParts are the human-readable error and its platform-tagged copy.
func errorParts(msg string) []a2a.Part {
	// A map of strings always encodes.
	p, _ := hitl.TaggedDataPart(map[string]string{SkillErrorKey: msg}, PlatformMediaType)
	return []a2a.Part{a2a.TextPart(msg), p}
}
