package hitl

import (
	"encoding/json"
	"strconv"

	"novaos.dev/novaos/a2a"
)

// Found is what Extract read from a message: each field is set when the
// message carries that convention (the first one, when it carries several).
type Found struct {
	HITL              *HITL
	Response          *Response
	Progress          *Progress
	Error             *Error
	OAuthRequired     *OAuthRequired
	WriteConfirmation *WriteConfirmation
}

// Empty reports whether nothing was found.
func (f Found) Empty() bool { return f == Found{} }

// Paused reports whether the message asks the user to act before the run
// goes on: a HITL message that requires action, or either pause.
func (f Found) Paused() bool {
	return (f.HITL != nil && f.HITL.RequiresUserAction) || f.OAuthRequired != nil || f.WriteConfirmation != nil
}

// Extract reads the conventions a message carries, in the three forms the
// NovaOS Python SDK's MessageParser reads, first to last:
//
//   - a data part tagged MetadataMediaType in its metadata (what
//     NewMessage writes);
//   - the ACP-shaped form: a part whose mediaType (its own field, or
//     "content_type" in its metadata) is MetadataMediaType and whose
//     content is the same object as a JSON string (a text part, a data
//     part holding a string, or raw bytes);
//   - the legacy form: the convention keys in the message's own metadata.
//
// An untagged data part is an agent's ordinary output and is never read
// as control data, whatever its keys. A payload that does not decode is
// skipped (Validate reports it). A nil message yields nothing.
func Extract(m *a2a.Message) Found {
	var f Found
	each(m, func(_, key string, raw json.RawMessage) { f.add(key, raw) })
	return f
}

// ExtractTask reads the conventions of a task's status message, history
// and artifacts, in that order, one Found per message or artifact that
// carries any.
func ExtractTask(t *a2a.Task) []Found {
	var out []Found
	add := func(f Found) {
		if !f.Empty() {
			out = append(out, f)
		}
	}
	if t == nil {
		return nil
	}
	add(Extract(t.Status.Message))
	for i := range t.History {
		add(Extract(&t.History[i]))
	}
	for _, a := range t.Artifacts {
		add(fromParts(a.Parts))
	}
	return out
}

// FromFrame reads the conventions a stream frame carries: a status
// update's message, an artifact update's parts, a message, or a task's
// status message (a task's history and artifacts: use ExtractTask).
func FromFrame(fr *a2a.StreamResponse) Found {
	switch {
	case fr == nil:
	case fr.StatusUpdate != nil:
		return Extract(fr.StatusUpdate.Status.Message)
	case fr.ArtifactUpdate != nil:
		return fromParts(fr.ArtifactUpdate.Artifact.Parts)
	case fr.Message != nil:
		return Extract(fr.Message)
	case fr.Task != nil:
		return Extract(fr.Task.Status.Message)
	}
	return Found{}
}

func fromParts(parts []a2a.Part) Found {
	var f Found
	for _, p := range parts {
		for key, raw := range controlObject(p) {
			f.add(key, raw)
		}
	}
	return f
}

func (f *Found) add(key string, raw json.RawMessage) {
	switch key {
	case KeyHITL:
		decodeInto(&f.HITL, raw)
	case KeyHITLResponse:
		decodeInto(&f.Response, raw)
	case KeyProgress:
		decodeInto(&f.Progress, raw)
	case KeyError:
		decodeInto(&f.Error, raw)
	case KeyOAuthRequired:
		decodeInto(&f.OAuthRequired, raw)
	case KeyWriteConfirmation:
		decodeInto(&f.WriteConfirmation, raw)
	}
}

// decodeInto sets *dst from raw unless it is already set or raw is not an
// object of the right shape.
func decodeInto[T any](dst **T, raw json.RawMessage) {
	if *dst != nil {
		return
	}
	var v T
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &v) != nil {
		return
	}
	*dst = &v
}

// each calls fn for every convention key of m's control data, in the order
// Extract reads them; where names the part ("part 1") or "metadata".
func each(m *a2a.Message, fn func(where, key string, raw json.RawMessage)) {
	if m == nil {
		return
	}
	for i, p := range m.Parts {
		for key, raw := range controlObject(p) {
			fn("part "+strconv.Itoa(i), key, raw)
		}
	}
	for _, key := range []string{KeyHITL, KeyHITLResponse, KeyProgress, KeyError, KeyOAuthRequired, KeyWriteConfirmation} {
		v, ok := m.Metadata[key]
		if !ok {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		fn("metadata", key, raw)
	}
}

// controlObject returns the control-data object of a part tagged
// MetadataMediaType, nil for any other part. Data parts hold the object
// itself (or, ACP-shaped, a JSON string of it); text and raw parts hold
// its JSON text.
func controlObject(p a2a.Part) map[string]json.RawMessage {
	if !Tagged(p, MetadataMediaType) {
		return nil
	}
	var text []byte
	switch p.Kind {
	case a2a.PartData:
		var s string
		if len(p.Data) > 0 && p.Data[0] == '"' && json.Unmarshal(p.Data, &s) == nil {
			text = []byte(s)
		} else {
			text = p.Data
		}
	case a2a.PartText:
		text = []byte(p.Text)
	case a2a.PartRaw:
		text = p.Raw
	default:
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(text, &obj) != nil {
		return nil
	}
	return obj
}
