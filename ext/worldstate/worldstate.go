package worldstate

import (
	"strconv"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/extmeta"
)

// URI identifies the extension: the metadata key and the card declaration.
const URI = "https://proto-labs.ai/a2a/ext/worldstate-delta-v1"

// Description is the card declaration's description.
const Description = "Changes a run made to shared state, as set/inc/push deltas, in the metadata of the task's terminal artifact."

// Declaration returns the extension as an agent card declares it.
func Declaration() a2a.AgentExtension {
	return a2a.AgentExtension{URI: URI, Description: Description}
}

// Op is how a delta changes the value at its path.
type Op string

// The three operations.
const (
	OpSet  Op = "set"  // replace the value
	OpInc  Op = "inc"  // add a number
	OpPush Op = "push" // append to a list
)

// Delta is one change to shared state.
type Delta struct {
	Domain string `json:"domain"`
	Path   string `json:"path"`
	Op     Op     `json:"op"`
	Value  any    `json:"value"`
}

// Payload is the worldstate-delta-v1 payload.
type Payload struct {
	Deltas []Delta `json:"deltas"`
}

// Validate checks every delta: non-empty domain and path, a known op, and a
// number for inc.
func (p Payload) Validate() error {
	for i, d := range p.Deltas {
		field := "deltas[" + strconv.Itoa(i) + "]"
		switch {
		case d.Domain == "":
			return extmeta.Invalid(URI, field+".domain", "must not be empty")
		case d.Path == "":
			return extmeta.Invalid(URI, field+".path", "must not be empty")
		}
		switch d.Op {
		case OpSet, OpPush:
		case OpInc:
			if _, ok := extmeta.ToFloat(d.Value); !ok {
				return extmeta.Invalid(URI, field+".value", "must be a finite number for op inc")
			}
		default:
			return extmeta.Invalid(URI, field+".op", strconv.Quote(string(d.Op))+" is not one of set, inc, push")
		}
	}
	return nil
}

// Metadata returns the fragment {URI: p}; nil Deltas are written as []. It
// does not validate p: call Validate first (the agent SDK does).
func Metadata(p Payload) map[string]any {
	if p.Deltas == nil {
		p.Deltas = []Delta{}
	}
	return extmeta.Fragment(URI, p)
}

// Parse reads the worldstate-delta-v1 payload from a metadata map: ok is
// false when md has none, and err (matching extmeta.ErrInvalid) reports one
// that is malformed.
func Parse(md map[string]any) (p Payload, ok bool, err error) {
	return extmeta.Parse(md, URI, read)
}

func read(r *extmeta.Reader) Payload {
	arr := r.Array("deltas", true)
	p := Payload{Deltas: make([]Delta, 0, len(arr))}
	for i, v := range arr {
		e := r.Elem("deltas", i, v)
		var d Delta
		d.Domain = e.String("domain", true)
		d.Path = e.String("path", true)
		d.Op = Op(e.String("op", true))
		if v, ok := e.Value("value"); ok {
			d.Value = v
		} else {
			e.Fail("value", "is required")
		}
		r.Merge(&e)
		p.Deltas = append(p.Deltas, d)
	}
	return p
}
