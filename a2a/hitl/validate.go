package hitl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"

	"novaos.dev/novaos/a2a"
)

// ValidationError lists everything wrong with a message; each entry names
// the part and field.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "hitl: invalid message: " + e.Problems[0]
	}
	return fmt.Sprintf("hitl: invalid message: %s (and %d more)", e.Problems[0], len(e.Problems)-1)
}

// Validate checks m's A2A envelope (messageId, role, at least one part)
// and every convention payload it carries, in every form Extract reads,
// including ones Extract would skip because they do not decode. It
// returns nil or a *ValidationError.
func Validate(m *a2a.Message) error {
	if m == nil {
		return &ValidationError{Problems: []string{"nil message"}}
	}
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if m.MessageID == "" {
		add("messageId is required")
	}
	if m.Role != a2a.RoleUser && m.Role != a2a.RoleAgent {
		add("role must be ROLE_USER or ROLE_AGENT")
	}
	if len(m.Parts) == 0 {
		add("at least one part is required")
	}
	each(m, func(where, key string, raw json.RawMessage) {
		for _, pr := range ValidatePayload(key, raw) {
			add("%s %s: %s", where, key, pr)
		}
	})
	if probs != nil {
		return &ValidationError{Problems: probs}
	}
	return nil
}

// ValidatePayload checks the JSON payload of the convention key and
// returns its problems; an unknown key has none.
func ValidatePayload(key string, raw json.RawMessage) []string {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	decode := func(v any) bool {
		if len(raw) == 0 || raw[0] != '{' {
			add("payload must be a JSON object")
			return false
		}
		if err := json.Unmarshal(raw, v); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				add("field %s has the wrong type", te.Field)
			} else {
				add("payload does not decode")
			}
			return false
		}
		return true
	}
	switch key {
	case KeyHITL:
		var h HITL
		if decode(&h) {
			probs = append(probs, h.problems()...)
		}
	case KeyHITLResponse:
		var r Response
		if decode(&r) {
			if r.ActionID == "" {
				add("action_id is required")
			}
			if r.SessionID == "" {
				add("session_id is required")
			}
		}
	case KeyProgress:
		var p Progress
		if decode(&p) {
			if !knownProgress[p.Status] {
				add("unknown status %q", p.Status)
			}
			if p.Message == "" {
				add("message is required")
			}
			probs = append(probs, p.Progress.problems()...)
		}
	case KeyError:
		var e Error
		if decode(&e) {
			if e.Type == "" {
				add("error_type is required")
			}
			if e.Message == "" {
				add("message is required")
			}
		}
	case KeyOAuthRequired:
		var o OAuthRequired
		if decode(&o) {
			if o.Connector == "" {
				add("connector is required")
			}
			if u, err := url.Parse(o.AuthURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				add("auth_url must be an absolute http(s) URL")
			}
		}
	case KeyWriteConfirmation:
		var w WriteConfirmation
		if decode(&w) {
			if w.CallID == "" {
				add("call_id is required")
			}
			if w.ToolName == "" {
				add("tool_name is required")
			}
		}
	}
	return probs
}

func (h *HITL) problems() []string {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if !knownTypes[h.Type] {
		add("unknown hitl_type %q", h.Type)
	}
	if h.Content == "" {
		add("content is required")
	}
	ids := map[string]bool{}
	for i, a := range h.Actions {
		if a.ID == "" || a.Label == "" {
			add("action %d needs an id and a label", i)
		}
		if ids[a.ID] {
			add("action id %q repeated", a.ID)
		}
		ids[a.ID] = true
	}
	switch h.Type {
	case TypeInputRequest:
		if h.InputType != "" && !knownInputTypes[h.InputType] {
			add("unknown input_type %q", h.InputType)
		}
		probs = append(probs, h.Validation.problems("validation")...)
	case TypeBatchInputRequest:
		if len(h.Fields) == 0 {
			add("a batch input request needs fields")
		}
		names := map[string]bool{}
		for i, f := range h.Fields {
			if f.Name == "" {
				add("field %d has no name", i)
			}
			if names[f.Name] {
				add("field name %q repeated", f.Name)
			}
			names[f.Name] = true
			if f.InputType != "" && !knownInputTypes[f.InputType] {
				add("field %q: unknown input_type %q", f.Name, f.InputType)
			}
			probs = append(probs, f.Validation.problems("field "+f.Name+" validation")...)
		}
	case TypePlanConfirmation:
		if h.Plan == nil {
			add("a plan confirmation needs a plan")
		}
		if len(h.Actions) == 0 {
			add("a plan confirmation needs actions")
		}
	case TypeExecutionProgress:
		if h.Progress == nil {
			add("execution progress needs progress")
		} else {
			probs = append(probs, h.Progress.problems()...)
		}
	}
	return probs
}

func (v *InputValidation) problems(where string) []string {
	if v == nil {
		return nil
	}
	var probs []string
	if v.MinLength != nil && *v.MinLength < 0 {
		probs = append(probs, where+": min_length is negative")
	}
	if v.MinLength != nil && v.MaxLength != nil && *v.MinLength > *v.MaxLength {
		probs = append(probs, where+": min_length exceeds max_length")
	}
	if v.MinValue != nil && v.MaxValue != nil && *v.MinValue > *v.MaxValue {
		probs = append(probs, where+": min_value exceeds max_value")
	}
	if v.Pattern != "" {
		if _, err := regexp.Compile(v.Pattern); err != nil {
			probs = append(probs, where+": pattern does not compile")
		}
	}
	return probs
}

func (p ProgressData) problems() []string {
	var probs []string
	if p.Percent != nil && (*p.Percent < 0 || *p.Percent > 100) {
		probs = append(probs, "progress.percent must be within 0..100")
	}
	if p.Step < 0 || p.TotalSteps < 0 || (p.TotalSteps > 0 && p.Step > p.TotalSteps) {
		probs = append(probs, "progress.step must be within 0..total_steps")
	}
	return probs
}
