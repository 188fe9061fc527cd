package cost

import (
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/extmeta"
)

// URI identifies the extension: the metadata key and the card declaration.
const URI = "https://proto-labs.ai/a2a/ext/cost-v1"

// Description is the card declaration's description.
const Description = "Token usage, wall time and cost of a run, in the metadata of the task's terminal artifact."

// Declaration returns the extension as an agent card declares it. It is
// never required: it only adds data.
func Declaration() a2a.AgentExtension {
	return a2a.AgentExtension{URI: URI, Description: Description}
}

// Usage counts the model tokens a run used.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
}

// Payload is the cost-v1 payload.
type Payload struct {
	Usage      Usage    `json:"usage"`
	DurationMs *int64   `json:"durationMs,omitempty"`
	CostUSD    *float64 `json:"costUsd,omitempty"`
	Success    *bool    `json:"success,omitempty"`
}

// Validate checks that every count, the duration and the cost are
// non-negative (and the cost finite).
func (p Payload) Validate() error {
	counts := [...]struct {
		name string
		v    *int64
	}{
		{"usage.input_tokens", &p.Usage.InputTokens},
		{"usage.output_tokens", &p.Usage.OutputTokens},
		{"usage.cache_creation_input_tokens", p.Usage.CacheCreationInputTokens},
		{"usage.cache_read_input_tokens", p.Usage.CacheReadInputTokens},
		{"durationMs", p.DurationMs},
	}
	for _, c := range counts {
		if c.v != nil && *c.v < 0 {
			return extmeta.Invalid(URI, c.name, "must not be negative")
		}
	}
	if p.CostUSD != nil {
		if _, ok := extmeta.ToFloat(*p.CostUSD); !ok || *p.CostUSD < 0 {
			return extmeta.Invalid(URI, "costUsd", "must be a finite, non-negative number")
		}
	}
	return nil
}

// Metadata returns the fragment {URI: p}. It does not validate p: call
// Validate first (the agent SDK does).
func Metadata(p Payload) map[string]any { return extmeta.Fragment(URI, p) }

// Parse reads the cost-v1 payload from a metadata map: ok is false when
// md has none, and err (matching extmeta.ErrInvalid) reports one that is
// malformed or out of range.
func Parse(md map[string]any) (p Payload, ok bool, err error) {
	return extmeta.Parse(md, URI, read)
}

func read(r *extmeta.Reader) Payload {
	var p Payload
	u := r.Object("usage", true)
	p.Usage.InputTokens, _ = u.Int("input_tokens", true)
	p.Usage.OutputTokens, _ = u.Int("output_tokens", true)
	p.Usage.CacheCreationInputTokens = u.OptInt("cache_creation_input_tokens")
	p.Usage.CacheReadInputTokens = u.OptInt("cache_read_input_tokens")
	r.Merge(&u)
	p.DurationMs = r.OptInt("durationMs")
	p.CostUSD = r.OptFloat("costUsd")
	p.Success = r.OptBool("success")
	return p
}
