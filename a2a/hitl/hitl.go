package hitl

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
)

// Keys of the data-part objects that carry each convention.
const (
	KeyHITL              = "novaos.dev/hitl"
	KeyHITLResponse      = "novaos.dev/hitl-response"
	KeyProgress          = "novaos.dev/progress"
	KeyError             = "novaos.dev/error"
	KeyOAuthRequired     = "novaos.dev/pause/oauth"
	KeyWriteConfirmation = "novaos.dev/pause/write-confirmation"
)

// Type is the kind of a HITL message.
type Type string

// HITL message types.
const (
	TypeInputRequest      Type = "input_request"
	TypeBatchInputRequest Type = "batch_input_request"
	TypePlanConfirmation  Type = "plan_confirmation"
	TypeInfo              Type = "info"
	TypeSuccess           Type = "success"
	TypeErrorNotification Type = "error_notification"
	TypeExecutionProgress Type = "execution_progress"
)

var knownTypes = map[Type]bool{TypeInputRequest: true, TypeBatchInputRequest: true, TypePlanConfirmation: true,
	TypeInfo: true, TypeSuccess: true, TypeErrorNotification: true, TypeExecutionProgress: true}

// InputType says which widget an input request needs.
type InputType string

// Input types.
const (
	InputText     InputType = "text"
	InputTextarea InputType = "textarea"
	InputNumber   InputType = "number"
	InputEmail    InputType = "email"
	InputURL      InputType = "url"
	InputDate     InputType = "date"
	InputBoolean  InputType = "boolean"
	InputSelect   InputType = "select"
	InputPassword InputType = "password"
)

var knownInputTypes = map[InputType]bool{InputText: true, InputTextarea: true, InputNumber: true, InputEmail: true,
	InputURL: true, InputDate: true, InputBoolean: true, InputSelect: true, InputPassword: true}

// Action is a button the user can press.
type Action struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Style is a rendering hint: "primary", "secondary" or "danger".
	Style string `json:"style,omitempty"`
}

// InputValidation are rules a front end applies before submitting an
// input; the agent still validates what it receives.
type InputValidation struct {
	Required       bool     `json:"required"`
	MinLength      *int     `json:"minLength,omitempty"`
	MaxLength      *int     `json:"maxLength,omitempty"`
	MinValue       *float64 `json:"minValue,omitempty"`
	MaxValue       *float64 `json:"maxValue,omitempty"`
	Pattern        string   `json:"pattern,omitempty"`
	PatternMessage string   `json:"patternMessage,omitempty"`
	// Options are the allowed values of a select input.
	Options []string `json:"options,omitempty"`
}

// InputField is one field of a batch input request.
type InputField struct {
	Name        string           `json:"name"`
	Label       string           `json:"label"`
	InputType   InputType        `json:"inputType,omitempty"`
	Validation  *InputValidation `json:"validation,omitempty"`
	Description string           `json:"description,omitempty"`
}

// ProgressData is how far a piece of work has come. Every field is
// optional.
type ProgressData struct {
	// Percent is 0 to 100.
	Percent    *float64 `json:"percent,omitempty"`
	Step       int      `json:"step,omitempty"`
	TotalSteps int      `json:"totalSteps,omitempty"`
	Stage      string   `json:"stage,omitempty"`
}

// HITL asks the user for something, or tells them something.
type HITL struct {
	Type                Type             `json:"type"`
	Content             string           `json:"content"`
	RequiresUserAction  bool             `json:"requiresUserAction"`
	SessionID           string           `json:"sessionId,omitempty"`
	Actions             []Action         `json:"actions,omitempty"`
	InputType           InputType        `json:"inputType,omitempty"`
	Validation          *InputValidation `json:"validation,omitempty"`
	Fields              []InputField     `json:"fields,omitempty"`
	Plan                map[string]any   `json:"plan,omitempty"`
	Result              map[string]any   `json:"result,omitempty"`
	Progress            *ProgressData    `json:"progress,omitempty"`
	ErrorType           string           `json:"errorType,omitempty"`
	RecoverySuggestions []string         `json:"recoverySuggestions,omitempty"`
	Metadata            map[string]any   `json:"metadata,omitempty"`
}

// Response is the user's answer to a HITL message.
type Response struct {
	ActionID  string `json:"actionId"`
	SessionID string `json:"sessionId"`
	// InputValue is the text entered for an input request; a batch input
	// request's values are in Values, keyed by field name.
	InputValue *string           `json:"inputValue,omitempty"`
	Values     map[string]string `json:"values,omitempty"`
	Metadata   map[string]any    `json:"metadata,omitempty"`
}

// ProgressStatus is the state a progress report announces.
type ProgressStatus string

// Progress statuses.
const (
	ProgressStarted    ProgressStatus = "started"
	ProgressInProgress ProgressStatus = "in_progress"
	ProgressCompleted  ProgressStatus = "completed"
	ProgressFailed     ProgressStatus = "failed"
	ProgressCancelled  ProgressStatus = "cancelled"
)

var knownProgress = map[ProgressStatus]bool{ProgressStarted: true, ProgressInProgress: true, ProgressCompleted: true, ProgressFailed: true, ProgressCancelled: true}

// Progress reports how a run is going.
type Progress struct {
	Status    ProgressStatus `json:"status"`
	Message   string         `json:"message"`
	SessionID string         `json:"sessionId,omitempty"`
	Progress  ProgressData   `json:"progress"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ErrorType classifies an Error.
type ErrorType string

// Error types.
const (
	ErrorValidation     ErrorType = "validation_error"
	ErrorNotFound       ErrorType = "not_found"
	ErrorConnection     ErrorType = "connection_error"
	ErrorAuthentication ErrorType = "authentication_error"
	ErrorAuthorization  ErrorType = "authorization_error"
	ErrorRateLimit      ErrorType = "rate_limit"
	ErrorTimeout        ErrorType = "timeout"
	ErrorInternal       ErrorType = "internal_error"
)

// Error is a structured error a user (or a calling agent) can act on.
type Error struct {
	Type                ErrorType      `json:"type"`
	Message             string         `json:"message"`
	SessionID           string         `json:"sessionId,omitempty"`
	Details             map[string]any `json:"details,omitempty"`
	RecoverySuggestions []string       `json:"recoverySuggestions,omitempty"`
	Retryable           bool           `json:"retryable"`
}

// OAuthRequired pauses a run until the user authorizes a connector.
type OAuthRequired struct {
	Connector string         `json:"connector"`
	AuthURL   string         `json:"authUrl"`
	SessionID string         `json:"sessionId,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// WriteConfirmation pauses a run until the user confirms a tool call that
// writes (sends, deletes, pays).
type WriteConfirmation struct {
	CallID    string         `json:"callId"`
	ToolName  string         `json:"toolName"`
	SessionID string         `json:"sessionId,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// Payload is one of *HITL, *Response, *Progress, *Error, *OAuthRequired or
// *WriteConfirmation.
type Payload interface{ key() string }

func (*HITL) key() string              { return KeyHITL }
func (*Response) key() string          { return KeyHITLResponse }
func (*Progress) key() string          { return KeyProgress }
func (*Error) key() string             { return KeyError }
func (*OAuthRequired) key() string     { return KeyOAuthRequired }
func (*WriteConfirmation) key() string { return KeyWriteConfirmation }

// Part returns the data part that carries p.
func Part(p Payload) a2a.Part {
	part, err := a2a.DataPart(map[string]any{p.key(): p})
	if err != nil {
		// Every payload type marshals; only a caller-supplied map with an
		// unencodable value (a channel, a func) gets here.
		panic(fmt.Sprintf("hitl: encode %s: %v", p.key(), err))
	}
	return part
}

// NewMessage returns an agent message: a text part with content, then one
// data part per payload.
func NewMessage(content string, payloads ...Payload) *a2a.Message {
	return newMessage(a2a.RoleAgent, content, payloads)
}

// NewResponseMessage returns the user's message answering a HITL message.
func NewResponseMessage(content string, r Response) *a2a.Message {
	return newMessage(a2a.RoleUser, content, []Payload{&r})
}

func newMessage(role a2a.Role, content string, payloads []Payload) *a2a.Message {
	parts := make([]a2a.Part, 0, 1+len(payloads))
	if content != "" {
		parts = append(parts, a2a.TextPart(content))
	}
	for _, p := range payloads {
		parts = append(parts, Part(p))
	}
	return a2a.NewMessage(role, parts...)
}

// Embed returns a copy of m with the payloads appended as data parts; m is
// not changed.
func Embed(m *a2a.Message, payloads ...Payload) *a2a.Message {
	c := *m
	c.Parts = append([]a2a.Part(nil), m.Parts...)
	for _, p := range payloads {
		c.Parts = append(c.Parts, Part(p))
	}
	c.Metadata = maps.Clone(m.Metadata)
	return &c
}

// InputRequest asks for one value.
func InputRequest(content string, t InputType, v *InputValidation, sessionID string) *HITL {
	if t == "" {
		t = InputText
	}
	return &HITL{Type: TypeInputRequest, Content: content, RequiresUserAction: true, SessionID: sessionID, InputType: t, Validation: v}
}

// BatchInputRequest asks for several values in one form, with a Submit
// button.
func BatchInputRequest(content string, fields []InputField, sessionID string) *HITL {
	return &HITL{Type: TypeBatchInputRequest, Content: content, RequiresUserAction: true, SessionID: sessionID, Fields: fields,
		Actions: []Action{{ID: "submit", Label: "Submit", Style: "primary"}}}
}

// PlanConfirmation asks the user to approve a plan with one of actions.
func PlanConfirmation(content string, plan map[string]any, actions []Action) *HITL {
	return &HITL{Type: TypePlanConfirmation, Content: content, RequiresUserAction: true, Plan: plan, Actions: actions}
}

// Info tells the user something; nothing is asked.
func Info(content string) *HITL { return &HITL{Type: TypeInfo, Content: content} }

// Success reports a finished piece of work with an optional result.
func Success(content string, result map[string]any) *HITL {
	return &HITL{Type: TypeSuccess, Content: content, Result: result}
}

// ErrorNotification tells the user something failed and how to recover.
func ErrorNotification(content, errorType string, suggestions []string) *HITL {
	return &HITL{Type: TypeErrorNotification, Content: content, ErrorType: errorType, RecoverySuggestions: suggestions}
}

// ExecutionProgress reports progress as a HITL message.
func ExecutionProgress(content string, p ProgressData) *HITL {
	return &HITL{Type: TypeExecutionProgress, Content: content, Progress: &p}
}

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

// Extract reads the conventions a message carries. A data part that is not
// a convention, or whose payload does not decode, is skipped (Validate
// reports the latter). A nil message yields nothing.
func Extract(m *a2a.Message) Found {
	var f Found
	if m == nil {
		return f
	}
	for _, p := range m.Parts {
		extractPart(&f, p)
	}
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
		var f Found
		for _, p := range a.Parts {
			extractPart(&f, p)
		}
		add(f)
	}
	return out
}

// FromFrame reads the conventions a stream frame carries: a status
// update's message, an artifact update's parts, a message, or a task's
// status message (a task's history and artifacts: use ExtractTask).
func FromFrame(fr *a2a.StreamResponse) Found {
	var f Found
	switch {
	case fr == nil:
	case fr.StatusUpdate != nil:
		f = Extract(fr.StatusUpdate.Status.Message)
	case fr.ArtifactUpdate != nil:
		for _, p := range fr.ArtifactUpdate.Artifact.Parts {
			extractPart(&f, p)
		}
	case fr.Message != nil:
		f = Extract(fr.Message)
	case fr.Task != nil:
		f = Extract(fr.Task.Status.Message)
	}
	return f
}

func extractPart(f *Found, p a2a.Part) {
	if p.Kind != a2a.PartData {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p.Data, &obj) != nil {
		return
	}
	for k, raw := range obj {
		switch k {
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

// Check applies the rules to a value the user entered for an input of type
// t; nil means the value passes.
func (v *InputValidation) Check(t InputType, value string) error {
	if v == nil {
		return nil
	}
	if value == "" {
		if v.Required {
			return fmt.Errorf("hitl: a value is required")
		}
		return nil
	}
	n := utf8.RuneCountInString(value)
	if v.MinLength != nil && n < *v.MinLength {
		return fmt.Errorf("hitl: at least %d characters", *v.MinLength)
	}
	if v.MaxLength != nil && n > *v.MaxLength {
		return fmt.Errorf("hitl: at most %d characters", *v.MaxLength)
	}
	if t == InputNumber || v.MinValue != nil || v.MaxValue != nil {
		x, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("hitl: not a number")
		}
		if v.MinValue != nil && x < *v.MinValue {
			return fmt.Errorf("hitl: at least %v", *v.MinValue)
		}
		if v.MaxValue != nil && x > *v.MaxValue {
			return fmt.Errorf("hitl: at most %v", *v.MaxValue)
		}
	}
	if v.Pattern != "" {
		re, err := regexp.Compile(v.Pattern)
		if err != nil {
			return fmt.Errorf("hitl: invalid pattern: %w", err)
		}
		if !re.MatchString(value) {
			if v.PatternMessage != "" {
				return fmt.Errorf("hitl: %s", v.PatternMessage)
			}
			return fmt.Errorf("hitl: does not match %s", v.Pattern)
		}
	}
	if len(v.Options) > 0 {
		for _, o := range v.Options {
			if o == value {
				return nil
			}
		}
		return fmt.Errorf("hitl: not one of the options")
	}
	return nil
}
