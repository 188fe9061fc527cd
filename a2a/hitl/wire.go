package hitl

import (
	"encoding/json"
	"errors"
	"maps"
)

// hitlWire is the NovaOS Python SDK's HITLMessage as its to_dict writes it.
type hitlWire struct {
	Type               Type                       `json:"hitl_type"`
	Content            string                     `json:"content"`
	RequiresUserAction bool                       `json:"requires_user_action"`
	SessionID          string                     `json:"session_id,omitempty"`
	Actions            []Action                   `json:"actions,omitempty"`
	Metadata           map[string]json.RawMessage `json:"metadata,omitempty"`
}

// MarshalJSON writes h in the NovaOS Python SDK's HITLMessage shape, the
// kind-specific fields inside metadata.
func (h HITL) MarshalJSON() ([]byte, error) {
	md := make(map[string]any, len(h.Metadata)+8)
	maps.Copy(md, h.Metadata)
	// The typed fields win over a same-named free-form entry: they are
	// what the builder was asked for.
	setIf(md, "input_type", h.InputType, h.InputType != "")
	setIf(md, "validation", h.Validation, h.Validation != nil)
	setIf(md, "fields", h.Fields, h.Fields != nil)
	setIf(md, "plan", h.Plan, h.Plan != nil)
	setIf(md, "result", h.Result, h.Result != nil)
	setIf(md, "progress", h.Progress, h.Progress != nil)
	setIf(md, "error_type", h.ErrorType, h.ErrorType != "")
	setIf(md, "recovery_suggestions", h.RecoverySuggestions, h.RecoverySuggestions != nil)
	w := struct {
		Type               Type           `json:"hitl_type"`
		Content            string         `json:"content"`
		RequiresUserAction bool           `json:"requires_user_action"`
		SessionID          string         `json:"session_id,omitempty"`
		Actions            []Action       `json:"actions,omitempty"`
		Metadata           map[string]any `json:"metadata,omitempty"`
	}{h.Type, h.Content, h.RequiresUserAction, h.SessionID, h.Actions, md}
	return json.Marshal(w)
}

func setIf(md map[string]any, key string, v any, ok bool) {
	if ok {
		md[key] = v
	}
}

// UnmarshalJSON reads the NovaOS Python SDK's HITLMessage shape, lifting the
// kind-specific fields out of metadata.
func (h *HITL) UnmarshalJSON(b []byte) error {
	var w hitlWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := HITL{Type: w.Type, Content: w.Content, RequiresUserAction: w.RequiresUserAction, SessionID: w.SessionID, Actions: w.Actions}
	md := w.Metadata
	for _, f := range []struct {
		key string
		dst any
	}{
		{"input_type", &out.InputType}, {"validation", &out.Validation}, {"fields", &out.Fields},
		{"plan", &out.Plan}, {"result", &out.Result}, {"progress", &out.Progress},
		{"error_type", &out.ErrorType}, {"recovery_suggestions", &out.RecoverySuggestions},
	} {
		if err := take(md, f.key, f.dst, "metadata."); err != nil {
			return err
		}
	}
	rest, err := rawToAny(md)
	if err != nil {
		return err
	}
	out.Metadata = rest
	*h = out
	return nil
}

// take decodes m[key] into dst and removes it from m. A value of the
// wrong type is reported as a *json.UnmarshalTypeError naming
// prefix+key.
func take(m map[string]json.RawMessage, key string, dst any, prefix string) error {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	delete(m, key)
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := prefix + key
			if te.Field != "" {
				field += "." + te.Field
			}
			return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Offset: te.Offset, Field: field}
		}
		return err
	}
	return nil
}

// rawToAny decodes what is left of a payload into a free-form map; nil when
// nothing is left.
func rawToAny(m map[string]json.RawMessage) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, raw := range m {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// flat writes known and extra as one object; known keys win.
func flat(known map[string]any, extra map[string]any) ([]byte, error) {
	m := make(map[string]any, len(known)+len(extra))
	maps.Copy(m, extra)
	maps.Copy(m, known)
	return json.Marshal(m)
}

// MarshalJSON writes {"connector", "auth_url", "session_id", ...Extra}.
func (o OAuthRequired) MarshalJSON() ([]byte, error) {
	known := map[string]any{"connector": o.Connector, "auth_url": o.AuthURL}
	setIf(known, "session_id", o.SessionID, o.SessionID != "")
	return flat(known, o.Extra)
}

// UnmarshalJSON reads the flat payload; unknown fields go to Extra.
func (o *OAuthRequired) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out OAuthRequired
	for _, f := range []struct {
		key string
		dst *string
	}{{"connector", &out.Connector}, {"auth_url", &out.AuthURL}, {"session_id", &out.SessionID}} {
		if err := take(m, f.key, f.dst, ""); err != nil {
			return err
		}
	}
	extra, err := rawToAny(m)
	if err != nil {
		return err
	}
	out.Extra = extra
	*o = out
	return nil
}

// MarshalJSON writes {"call_id", "tool_name", "session_id", ...Extra}.
func (w WriteConfirmation) MarshalJSON() ([]byte, error) {
	known := map[string]any{"call_id": w.CallID, "tool_name": w.ToolName}
	setIf(known, "session_id", w.SessionID, w.SessionID != "")
	return flat(known, w.Extra)
}

// UnmarshalJSON reads the flat payload; unknown fields go to Extra.
func (w *WriteConfirmation) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out WriteConfirmation
	for _, f := range []struct {
		key string
		dst *string
	}{{"call_id", &out.CallID}, {"tool_name", &out.ToolName}, {"session_id", &out.SessionID}} {
		if err := take(m, f.key, f.dst, ""); err != nil {
			return err
		}
	}
	extra, err := rawToAny(m)
	if err != nil {
		return err
	}
	out.Extra = extra
	*w = out
	return nil
}
