package memory

import (
	"errors"
	"net/http"
	"strconv"
)

// Codes of Error: stable names a caller may branch on.
const (
	CodeInvalid      = "invalid_request"        // 422: a field breaks a rule (Field, Rule)
	CodeScope        = "insufficient_scope"     // 403: the token lacks the memory:… scope
	CodeNotOwner     = "not_owner"              // 403: an update of another agent's memory
	CodePolicy       = "policy_denied"          // 422: the service's own policy refuses (e.g. an agent writing user scope)
	CodeScreened     = "content_screened"       // 422: personal data or a credential in the content (Rule names the kind)
	CodeNotFound     = "not_found"              // 404
	CodeConflict     = "version_conflict"       // 409: a stale optimistic version
	CodeKeyReused    = "idempotency_key_reused" // 409: the key was used for a different request
	CodeUnauthorized = "unauthorized"           // 401: no valid token
	CodeUnavailable  = "unavailable"            // 503: a store is down; retry
	CodeInternal     = "internal"               // 500
)

// Error is a failed memory call as the service reports it and the client
// returns it: an HTTP status with the meaning the NovaOS memory guide gives
// it (403 a missing scope or an update of another agent's memory, 404, 409
// a stale version, 422 refused by validation or policy, 429 and 503 worth
// a retry), a stable Code, and for a request that breaks a rule the Field
// and the Rule. It never carries the request's content, so it is safe to
// log.
type Error struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Rule    string `json:"rule,omitempty"`
}

func (e *Error) Error() string {
	msg := "memory: " + strconv.Itoa(e.Status) + " " + e.Code
	if e.Field != "" {
		msg += ": " + e.Field
		if e.Rule != "" {
			msg += ": " + e.Rule
		}
	}
	if e.Message != "" && e.Field == "" {
		msg += ": " + e.Message
	}
	return msg
}

// HTTPStatus is the status, for retry policies (resilience.StatusCoder).
func (e *Error) HTTPStatus() int { return e.Status }

// Is lets errors.Is match the store sentinels a status stands for:
// ErrNotFound (404), ErrConflict (409 version_conflict), ErrKeyReused (409
// idempotency_key_reused) and ErrInvalid (422 invalid_request).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict && e.Code != CodeKeyReused
	case ErrKeyReused:
		return e.Code == CodeKeyReused
	case ErrInvalid:
		return e.Code == CodeInvalid
	}
	return false
}

// ErrorFor turns err into the Error a caller is shown: an *Error as it is,
// a *ValidationError as 422 invalid_request naming its field and rule,
// ErrNotFound as 404, ErrConflict and ErrKeyReused as 409, and anything else as 500 with a
// message that reveals nothing (the cause is for the server's log).
func ErrorFor(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if v, ok := errors.AsType[*ValidationError](err); ok {
		return &Error{Status: http.StatusUnprocessableEntity, Code: CodeInvalid, Field: v.Field, Rule: v.Rule, Message: v.Field + ": " + v.Rule}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such memory"}
	case errors.Is(err, ErrKeyReused):
		return &Error{Status: http.StatusConflict, Code: CodeKeyReused, Field: "idempotency_key",
			Rule:    "was used within 24 hours for a different request; send a new key with a new request",
			Message: "the idempotency key was used for a different request"}
	case errors.Is(err, ErrConflict):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: "version", Rule: "is not the memory's current version; read it again", Message: "the memory changed since it was read"}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "the memory service failed"}
}
