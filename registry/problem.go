package registry

import (
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/problem"
)

// Problem type URIs of the registry API (RFC 9457 "type"). They are
// stable: clients may branch on them. Those for what every service
// answers are package problem's.
const (
	ProblemAgentNotFound     = "https://novaos.dev/problems/agent-not-found"          // 404
	ProblemAgentExists       = "https://novaos.dev/problems/agent-exists"             // 409
	ProblemAgentReadOnly     = "https://novaos.dev/problems/agent-read-only"          // 403
	ProblemInvalidAgent      = "https://novaos.dev/problems/invalid-agent"            // 422
	ProblemURLNotAllowed     = "https://novaos.dev/problems/agent-url-not-allowed"    // 422
	ProblemWriteForbidden    = "https://novaos.dev/problems/registry-write-forbidden" // 403, a write from another machine to a server without one
	ProblemMalformedJSON     = problem.TypeMalformedJSON                              // 400
	ProblemInvalidQuery      = problem.TypeInvalidQuery                               // 400
	ProblemInvalidPageToken  = problem.TypeInvalidPageToken                           // 400
	ProblemBodyTooLarge      = problem.TypeBodyTooLarge                               // 413
	ProblemUnsupportedMedia  = problem.TypeUnsupportedMedia                           // 415
	ProblemNotFound          = problem.TypeNotFound                                   // 404, no such route
	ProblemMethodNotAllowed  = problem.TypeMethodNotAllowed                           // 405
	ProblemInternal          = problem.TypeInternal                                   // 500
	ProblemUnauthorized      = problem.TypeUnauthorized                               // 401, a write without the admin token
	ProblemContentTypeHeader = problem.ContentType
)

// Problem is an RFC 9457 problem details object, as the registry API sends
// it with every error status; Errors lists the broken rules of an invalid
// agent. The Client returns it as the error of a failed call; errors.Is
// matches it against ErrNotFound, ErrExists, ErrInvalid, ErrURLNotAllowed,
// ErrBadPageToken, ErrReadOnly, ErrUnauthorized and ErrForbidden by its
// type, or by its status (404, 409, 422, 401, 403) when the type is
// unknown. It is package problem's Problem, with the registry's errors.
type Problem problem.Problem

func (p *Problem) Error() string {
	msg := fmt.Sprintf("registry: %d %s", p.Status, p.Title)
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	return msg
}

// Unwrap returns the sentinel errors the problem stands for.
func (p *Problem) Unwrap() []error {
	switch p.Type {
	case ProblemAgentNotFound:
		return []error{ErrNotFound}
	case ProblemAgentExists:
		return []error{ErrExists}
	case ProblemInvalidAgent:
		return []error{ErrInvalid}
	case ProblemURLNotAllowed:
		return []error{ErrInvalid, ErrURLNotAllowed}
	case ProblemInvalidPageToken:
		return []error{ErrBadPageToken}
	case ProblemAgentReadOnly:
		return []error{ErrReadOnly}
	case ProblemUnauthorized:
		return []error{ErrUnauthorized}
	case ProblemWriteForbidden:
		return []error{ErrForbidden}
	}
	switch p.Status {
	case http.StatusNotFound:
		return []error{ErrNotFound}
	case http.StatusConflict:
		return []error{ErrExists}
	case http.StatusUnprocessableEntity:
		return []error{ErrInvalid}
	case http.StatusUnauthorized:
		return []error{ErrUnauthorized}
	case http.StatusForbidden:
		return []error{ErrForbidden}
	}
	return nil
}

// AsProblem returns the Problem inside err, if any.
func AsProblem(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}
