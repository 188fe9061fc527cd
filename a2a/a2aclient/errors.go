package a2aclient

import (
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/a2a"
)

// Errors for branching with errors.Is.
var (
	// ErrStreamIncomplete: a stream closed (and could not be resumed)
	// before the task reached a terminal or interrupted state or the agent
	// answered with a message. It is never reported as a success.
	ErrStreamIncomplete = errors.New("a2aclient: stream ended before the task reached a terminal or interrupted state")
	// ErrResponseTooLarge: a response body, card or stream event exceeded
	// its size limit.
	ErrResponseTooLarge = errors.New("a2aclient: response exceeds size limit")
	// ErrInvalidResponse: the agent's answer is not a valid A2A response
	// (not the binding's shape, or a result of the wrong shape).
	ErrInvalidResponse = errors.New("a2aclient: invalid response")
	// ErrNoInterface: the card declares no interface with a binding this
	// client speaks.
	ErrNoInterface = errors.New("a2aclient: card declares no supported interface")
	// ErrUnreachable matches transport failures (connection refused, reset,
	// DNS) and an HTTP 404 from the agent URL: the agent was not reached.
	ErrUnreachable = errors.New("a2aclient: agent unreachable")
	// ErrUnauthenticated matches HTTP 401 and the JSON-RPC code -31401
	// (NovaOS's and a2a-go's "unauthenticated"); ErrForbidden matches HTTP
	// 403; ErrRateLimited matches HTTP 429.
	ErrUnauthenticated = errors.New("a2aclient: unauthenticated")
	ErrForbidden       = errors.New("a2aclient: forbidden")
	ErrRateLimited     = errors.New("a2aclient: rate limited")
)

// codeUnauthenticated is the JSON-RPC code servers use for a missing or
// invalid credential (a2asrv.CodeUnauthenticated, a2a-go's -31401).
const codeUnauthenticated = -31401

// Error classes of JSON-RPC codes, for errors.Is on a *CallError whose code
// is not one of the a2a sentinels. Codes are classified by range:
// -32099..-32000 are A2A (server-defined) errors, -32768..-32000 outside
// that are JSON-RPC errors, anything else is an application error.
var (
	ErrClassA2A         = errors.New("a2aclient: A2A error")
	ErrClassJSONRPC     = errors.New("a2aclient: JSON-RPC error")
	ErrClassApplication = errors.New("a2aclient: application error")
)

// CallError is an A2A error answered by the agent: a JSON-RPC error, or
// an HTTP+JSON error body (its ErrorInfo reason, else its HTTP status,
// gives the code; its details are kept in Err.Data). It unwraps to the
// *a2a.Error, so errors.Is(err, a2a.ErrTaskNotFound) and errors.As(err,
// new(*a2a.Error)) work; errors.Is also matches the ErrClass* of its code.
type CallError struct {
	Method string
	Err    *a2a.Error
}

func (e *CallError) Error() string { return fmt.Sprintf("a2aclient: %s: %v", e.Method, e.Err) }

// Unwrap returns the agent's error.
func (e *CallError) Unwrap() error { return e.Err }

// Is matches the class of the error's code, and ErrUnauthenticated for
// -31401.
func (e *CallError) Is(target error) bool {
	return target == Class(e.Err.Code) || (target == ErrUnauthenticated && e.Err.Code == codeUnauthenticated)
}

// Class returns ErrClassA2A, ErrClassJSONRPC or ErrClassApplication for a
// JSON-RPC error code.
func Class(code int) error {
	switch {
	case code <= -32000 && code >= -32099:
		return ErrClassA2A
	case code <= -32000 && code >= -32768:
		return ErrClassJSONRPC
	}
	return ErrClassApplication
}

// HTTPError is an HTTP answer that carries no A2A error: no JSON-RPC
// response, or (HTTP+JSON) no error body naming an A2A error.
type HTTPError struct {
	Method     string
	StatusCode int
	// Body is the start of the response body (at most 512 bytes).
	Body string
	// Detail is what the body said, when it said something readable: the
	// message of a google.rpc.Status body, an RFC 9457 problem's title
	// and detail, or the first line of plain text (one line, at most 200
	// bytes).
	Detail string
}

func (e *HTTPError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("a2aclient: %s: HTTP %d %s: %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode), e.Detail)
	}
	return fmt.Sprintf("a2aclient: %s: HTTP %d %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode))
}

// Is matches ErrUnreachable for 404 (no agent at that URL),
// ErrUnauthenticated for 401, ErrForbidden for 403 and ErrRateLimited for
// 429.
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrUnreachable:
		return e.StatusCode == http.StatusNotFound
	case ErrUnauthenticated:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	}
	return false
}

// transportError wraps a failure below HTTP; it matches ErrUnreachable.
type transportError struct {
	method string
	err    error
}

func (e *transportError) Error() string { return fmt.Sprintf("a2aclient: %s: %v", e.method, e.err) }
func (e *transportError) Unwrap() error { return e.err }
func (e *transportError) Is(target error) bool {
	return target == ErrUnreachable
}

// Result is SendMessageSafe's answer: errors as values. Exactly one of Task,
// Message or Err is set.
type Result struct {
	Task    *a2a.Task
	Message *a2a.Message
	Err     error
}

// OK reports whether the call succeeded.
func (r Result) OK() bool { return r.Err == nil }

// Unreachable reports whether the call failed because the agent was not
// reached (connection failure or HTTP 404); a fan-out caller may skip such
// an agent, while any other error means the agent answered.
func (r Result) Unreachable() bool { return errors.Is(r.Err, ErrUnreachable) }
