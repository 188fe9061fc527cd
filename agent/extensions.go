package agent

import "slices"

// Extensions is the outcome of a request's A2A-Extensions negotiation: the
// extension URIs in force and the data callers published for them. The
// server negotiates; a skill only asks.
type Extensions struct {
	active    []string
	requested []string
	metadata  [2]map[string]any // request metadata, then message metadata
}

// Active returns the URIs in force, in the order the caller asked for them.
func (e Extensions) Active() []string { return slices.Clone(e.active) }

// Requested returns every URI the caller asked for in A2A-Extensions, as
// it arrived.
func (e Extensions) Requested() []string { return slices.Clone(e.requested) }

// Ignored returns the URIs the caller asked for that are not in force: ones
// this agent does not implement. Not an error: the agent serves the request
// without them.
func (e Extensions) Ignored() []string {
	var out []string
	for _, uri := range e.requested {
		if !slices.Contains(e.active, uri) {
			out = append(out, uri)
		}
	}
	return out
}

// IsActive reports whether the extension uri is in force for this request.
func (e Extensions) IsActive(uri string) bool { return slices.Contains(e.active, uri) }

// Value returns the data the caller published for an active extension, at
// metadata[uri] of the request or, failing that, of the message. ok is
// false when the extension is not active or carried no data: activation is
// the agreement, so data for an extension not in force is ignored.
func (e Extensions) Value(uri string) (v any, ok bool) {
	if !e.IsActive(uri) {
		return nil, false
	}
	for _, md := range e.metadata {
		if v, ok := md[uri]; ok {
			return v, true
		}
	}
	return nil, false
}
