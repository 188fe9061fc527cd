package confidence

import (
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/extmeta"
)

// URI identifies the extension: the metadata key and the card declaration.
const URI = "https://proto-labs.ai/a2a/ext/confidence-v1"

// Description is the card declaration's description.
const Description = "The agent's self-reported confidence (0 to 1) in its answer, in the metadata of the task's terminal artifact."

// Declaration returns the extension as an agent card declares it.
func Declaration() a2a.AgentExtension {
	return a2a.AgentExtension{URI: URI, Description: Description}
}

// Payload is the confidence-v1 payload. An empty Explanation is omitted.
type Payload struct {
	Confidence  float64 `json:"confidence"`
	Explanation string  `json:"explanation,omitempty"`
	Success     *bool   `json:"success,omitempty"`
}

// Validate checks that Confidence is a number in [0, 1].
func (p Payload) Validate() error {
	if _, ok := extmeta.ToFloat(p.Confidence); !ok || p.Confidence < 0 || p.Confidence > 1 {
		return extmeta.Invalid(URI, "confidence", "must be a number from 0 to 1")
	}
	return nil
}

// Metadata returns the fragment {URI: p}. It does not validate p: call
// Validate first (the agent SDK does).
func Metadata(p Payload) map[string]any { return extmeta.Fragment(URI, p) }

// Parse reads the confidence-v1 payload from a metadata map: ok is false
// when md has none, and err (matching extmeta.ErrInvalid) reports one that
// is malformed or out of range.
func Parse(md map[string]any) (p Payload, ok bool, err error) {
	return extmeta.Parse(md, URI, read)
}

func read(r *extmeta.Reader) Payload {
	var p Payload
	p.Confidence, _ = r.Float("confidence", true)
	p.Explanation = r.String("explanation", false)
	p.Success = r.OptBool("success")
	return p
}
