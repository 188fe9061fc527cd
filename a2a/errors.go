package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JSON-RPC 2.0 and A2A error codes. This is the one registry of codes for the
// JSON-RPC binding; [Error.HTTPStatus] maps them for the HTTP binding.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound                   = -32001
	CodeTaskNotCancelable              = -32002
	CodePushNotificationNotSupported   = -32003
	CodeUnsupportedOperation           = -32004
	CodeContentTypeNotSupported        = -32005
	CodeInvalidAgentResponse           = -32006
	CodeExtendedAgentCardNotConfigured = -32007
	CodeExtensionSupportRequired       = -32008
	CodeVersionNotSupported            = -32009

	// CodeUnauthenticated answers a request whose caller could not be
	// identified. A2A leaves authentication errors to the implementation;
	// this is the code a2a-go uses.
	CodeUnauthenticated = -31401
)

// ErrorInfoType is the @type of the google.rpc.ErrorInfo detail every A2A
// error carries in its data array.
const (
	ErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"
	ErrorDomain   = "a2a-protocol.org"
)

type codeInfo struct {
	reason  string
	message string
	http    int
	// status is the gRPC status the code maps to (A2A v1.0.1 §5.4), by
	// its canonical name: the REST error body's "status" too.
	status string
}

var codes = map[int]codeInfo{
	CodeParseError:                     {"PARSE_ERROR", "Invalid JSON payload", 400, "INVALID_ARGUMENT"},
	CodeInvalidRequest:                 {"INVALID_REQUEST", "Request payload validation error", 400, "INVALID_ARGUMENT"},
	CodeMethodNotFound:                 {"METHOD_NOT_FOUND", "Method not found", 404, "UNIMPLEMENTED"},
	CodeInvalidParams:                  {"INVALID_PARAMS", "Invalid parameters", 400, "INVALID_ARGUMENT"},
	CodeInternalError:                  {"INTERNAL_ERROR", "Internal error", 500, "INTERNAL"},
	CodeTaskNotFound:                   {"TASK_NOT_FOUND", "Task not found", 404, "NOT_FOUND"},
	CodeTaskNotCancelable:              {"TASK_NOT_CANCELABLE", "Task cannot be canceled", 400, "FAILED_PRECONDITION"},
	CodePushNotificationNotSupported:   {"PUSH_NOTIFICATION_NOT_SUPPORTED", "Push Notification is not supported", 400, "FAILED_PRECONDITION"},
	CodeUnsupportedOperation:           {"UNSUPPORTED_OPERATION", "This operation is not supported", 400, "FAILED_PRECONDITION"},
	CodeContentTypeNotSupported:        {"CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types", 400, "INVALID_ARGUMENT"},
	CodeInvalidAgentResponse:           {"INVALID_AGENT_RESPONSE", "Invalid agent response", 500, "INTERNAL"},
	CodeExtendedAgentCardNotConfigured: {"EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended agent card is not configured", 400, "FAILED_PRECONDITION"},
	CodeExtensionSupportRequired:       {"EXTENSION_SUPPORT_REQUIRED", "A required extension is not supported by the client", 400, "FAILED_PRECONDITION"},
	CodeVersionNotSupported:            {"VERSION_NOT_SUPPORTED", "The requested A2A protocol version is not supported", 400, "FAILED_PRECONDITION"},
	CodeUnauthenticated:                {"UNAUTHENTICATED", "Unauthenticated", 401, "UNAUTHENTICATED"},
}

// Sentinel errors, one per code, for errors.Is. An *Error with the same code
// matches its sentinel.
var (
	ErrParse                          = &Error{Code: CodeParseError}
	ErrInvalidRequest                 = &Error{Code: CodeInvalidRequest}
	ErrMethodNotFound                 = &Error{Code: CodeMethodNotFound}
	ErrInvalidParams                  = &Error{Code: CodeInvalidParams}
	ErrInternal                       = &Error{Code: CodeInternalError}
	ErrTaskNotFound                   = &Error{Code: CodeTaskNotFound}
	ErrTaskNotCancelable              = &Error{Code: CodeTaskNotCancelable}
	ErrPushNotificationNotSupported   = &Error{Code: CodePushNotificationNotSupported}
	ErrUnsupportedOperation           = &Error{Code: CodeUnsupportedOperation}
	ErrContentTypeNotSupported        = &Error{Code: CodeContentTypeNotSupported}
	ErrInvalidAgentResponse           = &Error{Code: CodeInvalidAgentResponse}
	ErrExtendedAgentCardNotConfigured = &Error{Code: CodeExtendedAgentCardNotConfigured}
	ErrExtensionSupportRequired       = &Error{Code: CodeExtensionSupportRequired}
	ErrVersionNotSupported            = &Error{Code: CodeVersionNotSupported}
)

// Error is a JSON-RPC error: a code, a message safe to show the caller, and
// optional data. It is what servers send and what clients receive.
type Error struct {
	Code    int
	Message string
	// Metadata goes into the ErrorInfo detail's metadata map.
	Metadata map[string]string
	// Data, when set, is sent verbatim as the error's data member instead of
	// the generated ErrorInfo array (clients see the peer's data here).
	Data json.RawMessage
}

// NewError returns an error with code and a message formatted from format.
func NewError(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = codes[e.Code].message
	}
	return fmt.Sprintf("a2a: %s (%d)", msg, e.Code)
}

// Is matches any *Error with the same code, so errors.Is(err,
// a2a.ErrTaskNotFound) works for errors built with NewError.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Reason is the ErrorInfo reason for the code (TASK_NOT_FOUND, …); unknown
// codes are classified by range.
func (e *Error) Reason() string {
	if c, ok := codes[e.Code]; ok {
		return c.reason
	}
	switch {
	case e.Code <= -32000 && e.Code >= -32099:
		return "A2A_ERROR"
	case e.Code <= -32600 && e.Code >= -32768:
		return "JSONRPC_ERROR"
	}
	return "UNKNOWN"
}

// HTTPStatus is the status the HTTP+JSON binding uses for the code (A2A
// v1.0.1 table).
func (e *Error) HTTPStatus() int {
	if c, ok := codes[e.Code]; ok {
		return c.http
	}
	return 500
}

// StatusName is the canonical name of the gRPC status the code maps to
// (NOT_FOUND, FAILED_PRECONDITION, …; A2A v1.0.1 §5.4), also the "status"
// of the HTTP+JSON binding's error body. Unknown codes are INTERNAL.
func (e *Error) StatusName() string {
	if c, ok := codes[e.Code]; ok {
		return c.status
	}
	return "INTERNAL"
}

// Text is the message to send: Message, or the code's standard text.
func (e *Error) Text() string {
	if e.Message != "" {
		return e.Message
	}
	if c, ok := codes[e.Code]; ok {
		return c.message
	}
	return "Error"
}

type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type errorWire struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON writes the JSON-RPC error object with an ErrorInfo detail.
func (e *Error) MarshalJSON() ([]byte, error) {
	w := errorWire{Code: e.Code, Message: e.Text(), Data: e.Data}
	if w.Data == nil {
		d, err := e.errorInfo()
		if err != nil {
			return nil, err
		}
		w.Data = d
	}
	return json.Marshal(w)
}

// errorInfo is the details array every binding sends for e: one
// google.rpc.ErrorInfo with the code's reason and e's metadata.
func (e *Error) errorInfo() (json.RawMessage, error) {
	return json.Marshal([]errorInfo{{Type: ErrorInfoType, Reason: e.Reason(), Domain: ErrorDomain, Metadata: e.Metadata}})
}

// UnmarshalJSON reads a peer's error object, keeping its data verbatim.
func (e *Error) UnmarshalJSON(b []byte) error {
	var w errorWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Error{Code: w.Code, Message: w.Message, Data: w.Data}
	return nil
}

// AsError converts any error into an *Error: an *Error in the chain is
// returned as is; anything else becomes an internal error whose message does
// not reveal the cause (log the original instead).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError}
}

type statusWire struct {
	Error statusBody `json:"error"`
}

type statusBody struct {
	Code    int             `json:"code"`
	Status  string          `json:"status"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// MarshalStatus writes e as the HTTP+JSON binding's error body, the
// google.rpc.Status shape (spec §11.6): {"error":{"code":<HTTP status>,
// "status":<gRPC status name>,"message":…,"details":[ErrorInfo]}}. A peer's
// data (Error.Data) is sent as the details when it is an array, as the
// details must be.
func (e *Error) MarshalStatus() ([]byte, error) {
	return e.MarshalStatusAs(e.HTTPStatus())
}

// MarshalStatusAs is MarshalStatus for an answer sent with another HTTP
// status than the code's own (413 for a body over the limit, say).
func (e *Error) MarshalStatusAs(httpStatus int) ([]byte, error) {
	details := e.Data
	if t := bytes.TrimLeft(details, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		d, err := e.errorInfo()
		if err != nil {
			return nil, err
		}
		details = d
	}
	return json.Marshal(statusWire{statusBody{Code: httpStatus, Status: e.StatusName(), Message: e.Text(), Details: details}})
}
