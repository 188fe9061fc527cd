package hitl

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
)

// Keys of the control-data object a tagged part carries: each names one
// convention, and its value is that convention's payload. A part may carry
// several. The NovaOS Python SDK reads HITL, errors, progress and responses
// under these keys (MessageParser.extract_all) and the pauses under
// NOVAOS_PAUSE_OAUTH_KEY and NOVAOS_PAUSE_WRITE_CONFIRMATION_KEY.
const (
	KeyHITL              = "hitl"
	KeyHITLResponse      = "hitl_response"
	KeyProgress          = "progress"
	KeyError             = "error"
	KeyOAuthRequired     = "oauth"
	KeyWriteConfirmation = "write_confirmation"
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
	MinLength      *int     `json:"min_length,omitempty"`
	MaxLength      *int     `json:"max_length,omitempty"`
	MinValue       *float64 `json:"min_value,omitempty"`
	MaxValue       *float64 `json:"max_value,omitempty"`
	Pattern        string   `json:"pattern,omitempty"`
	PatternMessage string   `json:"pattern_message,omitempty"`
	Placeholder    string   `json:"placeholder,omitempty"`
	DefaultValue   string   `json:"default_value,omitempty"`
	// Options are the choices of a select input, each an object such as
	// {"value": "eu", "label": "Europe"}; Check compares "value".
	Options []map[string]string `json:"options,omitempty"`
}

// InputField is one field of a batch input request.
type InputField struct {
	Name        string           `json:"name"`
	Label       string           `json:"label"`
	InputType   InputType        `json:"input_type,omitempty"`
	Validation  *InputValidation `json:"validation,omitempty"`
	Description string           `json:"description,omitempty"`
}

// ProgressData is how far a piece of work has come. Every field is
// optional.
type ProgressData struct {
	// Percent is 0 to 100.
	Percent    *float64 `json:"percent,omitempty"`
	Step       int      `json:"step,omitempty"`
	TotalSteps int      `json:"total_steps,omitempty"`
	Stage      string   `json:"stage,omitempty"`
}

// HITL asks the user for something, or tells them something.
//
// On the wire it has the NovaOS Python SDK's HITLMessage fields only:
// hitl_type, content, requires_user_action, session_id, actions and metadata.
// What a particular kind of request adds (InputType, Validation, Fields,
// Plan, Result, Progress, ErrorType, RecoverySuggestions) travels inside
// metadata under its snake_case name ("input_type", "validation", "fields",
// "plan", "result", "progress", "error_type", "recovery_suggestions"), where
// that SDK's factories put it; Metadata holds the rest.
type HITL struct {
	Type                Type
	Content             string
	RequiresUserAction  bool
	SessionID           string
	Actions             []Action
	InputType           InputType
	Validation          *InputValidation
	Fields              []InputField
	Plan                map[string]any
	Result              map[string]any
	Progress            *ProgressData
	ErrorType           string
	RecoverySuggestions []string
	Metadata            map[string]any
}

// Response is the user's answer to a HITL message. A batch input
// request's answers go in Metadata["values"], an object keyed by field
// name.
type Response struct {
	ActionID  string `json:"action_id"`
	SessionID string `json:"session_id"`
	// InputValue is the text entered for an input request.
	InputValue *string        `json:"input_value,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
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
	SessionID string         `json:"session_id,omitempty"`
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
	Type                ErrorType      `json:"error_type"`
	Message             string         `json:"message"`
	SessionID           string         `json:"session_id,omitempty"`
	Details             map[string]any `json:"details,omitempty"`
	RecoverySuggestions []string       `json:"recovery_suggestions,omitempty"`
	Retryable           bool           `json:"retryable"`
}

// OAuthRequired pauses a run until the user authorizes a connector. Extra
// fields are merged into the payload beside connector and auth_url, as
// the NovaOS Python SDK's create_oauth_required_message merges its metadata.
type OAuthRequired struct {
	Connector string
	AuthURL   string
	SessionID string
	Extra     map[string]any
}

// WriteConfirmation pauses a run until the user confirms a tool call that
// writes (sends, deletes, pays). Extra fields are merged into the payload
// beside call_id and tool_name.
type WriteConfirmation struct {
	CallID    string
	ToolName  string
	SessionID string
	Extra     map[string]any
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

// Part returns the data part that carries p: {"<key>": payload}, tagged
// MetadataMediaType in its metadata.
func Part(p Payload) a2a.Part {
	part, err := TaggedDataPart(map[string]any{p.key(): p}, MetadataMediaType)
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
			if o["value"] == value {
				return nil
			}
		}
		return fmt.Errorf("hitl: not one of the options")
	}
	return nil
}
