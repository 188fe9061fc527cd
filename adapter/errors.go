package adapter

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// Errors of a refusal, matched with errors.Is against a *ProblemError.
// Each of the first group matches one problem code (whatever the
// status); each of the second matches a status class, whatever the code,
// so that a code this package does not know is still handled by its
// status. ErrRateLimited matches both the code and the status 429.
var (
	ErrValidationFailed       = errors.New("adapter: validation failed")
	ErrUseDPoPNonce           = errors.New("adapter: use the platform's DPoP nonce")
	ErrInvocationTokenInvalid = errors.New("adapter: invocation token refused")
	ErrAgentInvocationDenied  = errors.New("adapter: agent invocation denied")
	ErrAlreadyStarted         = errors.New("adapter: run already started")
	ErrBillingModeMismatch    = errors.New("adapter: billing mode mismatch")
	ErrToolClassMismatch      = errors.New("adapter: tool class mismatch")
	ErrBaseVersionConflict    = errors.New("adapter: base version conflict")
	ErrVersionConflict        = errors.New("adapter: version conflict")
	ErrRequestInProgress      = errors.New("adapter: request in progress")
	ErrIdempotencyKeyReused   = errors.New("adapter: idempotency key reused")
	ErrSetupRequired          = errors.New("adapter: platform setup required")
	ErrUnavailable            = errors.New("adapter: platform unavailable")
	// ErrRunNotActive is 409 conflict with reason run_not_active: the
	// run is not in a state that takes the request (a patch of an
	// ended run).
	ErrRunNotActive = errors.New("adapter: run not active")
	// ErrRunInactive is 403 invocation_token_invalid with reason
	// run_inactive: a run-scoped request after the run ended.
	ErrRunInactive = errors.New("adapter: run inactive")

	ErrBadRequest      = errors.New("adapter: bad request")     // 400
	ErrUnauthenticated = errors.New("adapter: unauthenticated") // 401
	ErrForbidden       = errors.New("adapter: forbidden")       // 403
	// ErrNotFound (404) means not there or not visible to the caller:
	// the platform answers alike for both, so it never proves that the
	// thing is missing.
	ErrNotFound           = errors.New("adapter: not found")
	ErrConflict           = errors.New("adapter: conflict")            // 409
	ErrGone               = errors.New("adapter: gone")                // 410
	ErrPreconditionFailed = errors.New("adapter: precondition failed") // 412
	ErrPayloadTooLarge    = errors.New("adapter: payload too large")   // 413
	ErrRateLimited        = errors.New("adapter: rate limited")        // 429 or rate_limited
	ErrServer             = errors.New("adapter: platform error")      // 5xx

	// ErrMalformedResponse: a successful answer that does not decode
	// into what the operation answers, or one larger than the client
	// reads.
	ErrMalformedResponse = errors.New("adapter: malformed response")
)

// clientCodeSentinels maps the per-code sentinels to their codes.
var clientCodeSentinels = map[error]string{
	ErrValidationFailed:       delivery.CodeValidationFailed,
	ErrUseDPoPNonce:           delivery.CodeUseDPoPNonce,
	ErrInvocationTokenInvalid: delivery.CodeInvocationTokenInvalid,
	ErrAgentInvocationDenied:  delivery.CodeAgentInvocationDenied,
	ErrAlreadyStarted:         delivery.CodeAlreadyStarted,
	ErrBillingModeMismatch:    delivery.CodeBillingModeMismatch,
	ErrToolClassMismatch:      delivery.CodeToolClassMismatch,
	ErrBaseVersionConflict:    delivery.CodeBaseVersionConflict,
	ErrVersionConflict:        delivery.CodeVersionConflict,
	ErrRequestInProgress:      delivery.CodeRequestInProgress,
	ErrIdempotencyKeyReused:   delivery.CodeIdempotencyKeyReused,
	ErrSetupRequired:          delivery.CodeSetupRequired,
	ErrUnavailable:            delivery.CodeUnavailable,
}

// clientStatusSentinels maps the class sentinels to their statuses; 0
// stands for every 5xx.
var clientStatusSentinels = map[error]int{
	ErrBadRequest:         http.StatusBadRequest,
	ErrUnauthenticated:    http.StatusUnauthorized,
	ErrForbidden:          http.StatusForbidden,
	ErrNotFound:           http.StatusNotFound,
	ErrConflict:           http.StatusConflict,
	ErrGone:               http.StatusGone,
	ErrPreconditionFailed: http.StatusPreconditionFailed,
	ErrPayloadTooLarge:    http.StatusRequestEntityTooLarge,
	ErrRateLimited:        http.StatusTooManyRequests,
	ErrServer:             0,
}

// ProblemError is a refusal of the platform: an answer other than 2xx,
// with its RFC 9457 problem (as much of one as the answer held). It
// names the operation and the status, never a token: a token the
// platform echoed is replaced by secret.Redacted, and the server's
// words are cut short. Branch on it with errors.Is and the Err
// sentinels, or read Problem.Code and Reason.
type ProblemError struct {
	// Operation is the operation id (startRun, patchRun, ...), or the
	// method and path of a request no route of the API names.
	Operation string
	// Status is the HTTP status answered.
	Status  int
	Problem delivery.Problem
	// RetryAfter is what the answer's Retry-After (or the problem's
	// retry_after) asked to wait, 0 when nothing.
	RetryAfter time.Duration
}

// Error says operation, status, code, reason, detail and correlation id.
func (e *ProblemError) Error() string {
	var b strings.Builder
	b.WriteString("adapter: ")
	if e.Operation != "" {
		b.WriteString(e.Operation)
		b.WriteString(": ")
	}
	b.WriteString(strconv.Itoa(e.Status))
	if e.Problem.Code != "" {
		b.WriteString(" " + e.Problem.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Problem.Reason != "" {
		b.WriteString(" (" + e.Problem.Reason + ")")
	}
	if e.Problem.Detail != "" {
		b.WriteString(": " + e.Problem.Detail)
	}
	if e.Problem.CorrelationID != "" {
		b.WriteString(" [correlation_id " + e.Problem.CorrelationID + "]")
	}
	return b.String()
}

// Is matches the sentinels: a per-code one by Problem.Code, a class one
// by Status.
func (e *ProblemError) Is(target error) bool {
	if code, ok := clientCodeSentinels[target]; ok {
		return e.Problem.Code == code
	}
	switch target {
	case ErrRunNotActive:
		return e.Problem.Code == delivery.CodeConflict && e.Problem.Reason == delivery.RunNotActive
	case ErrRunInactive:
		return e.Problem.Code == delivery.CodeInvocationTokenInvalid && e.Problem.Reason == delivery.RunInactive
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests || e.Problem.Code == delivery.CodeRateLimited
	}
	if st, ok := clientStatusSentinels[target]; ok {
		if st == 0 {
			return e.Status >= 500 && e.Status <= 599
		}
		return e.Status == st
	}
	return false
}

// Reason is the problem's reason: which case of its code (expired,
// superseded, invalid, run_inactive, run_not_active, ...).
func (e *ProblemError) Reason() string { return e.Problem.Reason }

// Code is the problem's code, empty when the answer held none.
func (e *ProblemError) Code() string { return e.Problem.Code }

// HTTPStatus is Status (package resilience reads it).
func (e *ProblemError) HTTPStatus() int { return e.Status }

// CurrentRun is the run as it is now, which a base_version_conflict
// carries so that a patch can be rebased on it; false when the problem
// holds no run.
func (e *ProblemError) CurrentRun() (delivery.Run, bool) {
	if len(e.Problem.Current) == 0 {
		return delivery.Run{}, false
	}
	var r delivery.Run
	if err := json.Unmarshal(e.Problem.Current, &r); err != nil || r.ID == "" {
		return delivery.Run{}, false
	}
	return r, true
}

// What a ProblemError keeps of the server's words: an error ends up in
// logs.
const (
	clientMaxProblemText  = 1000 // title, detail
	clientMaxProblemWord  = 200  // type, code, reason, correlation id, field codes and pointers
	clientMaxFieldErrors  = 50
	clientMaxFieldDetail  = 300
	clientMaxCurrentBytes = 1 << 20
)

// clientReadProblem turns a refused answer into a *ProblemError. The
// body may be anything (a proxy's HTML page, nothing, broken JSON): the
// status is always there, the problem's members where they decode.
// Each of secrets (the tokens the request carried) is cut out of every
// string kept.
func clientReadProblem(op string, status int, h http.Header, body []byte, now time.Time, secrets ...string) *ProblemError {
	e := &ProblemError{Operation: op, Status: status}
	// A member of an unexpected type (a newer platform's) costs only
	// that member: json.Unmarshal fills the others and says so.
	var p delivery.Problem
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &p); err != nil && !errors.As(err, &typeErr) {
		p = delivery.Problem{}
	}
	clean := func(s string, n int) string { return clientClip(clientRedact(s, secrets), n) }
	p.Type = clean(p.Type, clientMaxProblemWord)
	p.Title = clean(p.Title, clientMaxProblemText)
	p.Detail = clean(p.Detail, clientMaxProblemText)
	p.Code = clean(p.Code, clientMaxProblemWord)
	p.Reason = clean(p.Reason, clientMaxProblemWord)
	p.CorrelationID = clean(p.CorrelationID, clientMaxProblemWord)
	if len(p.Errors) > clientMaxFieldErrors {
		p.Errors = p.Errors[:clientMaxFieldErrors]
	}
	for i := range p.Errors {
		p.Errors[i].Code = clean(p.Errors[i].Code, clientMaxProblemWord)
		p.Errors[i].Pointer = clean(p.Errors[i].Pointer, clientMaxProblemWord)
		p.Errors[i].Detail = clean(p.Errors[i].Detail, clientMaxFieldDetail)
	}
	if len(p.Current) > clientMaxCurrentBytes || clientHasSecret(string(p.Current), secrets) {
		p.Current = nil
	}
	if p.Status == 0 {
		p.Status = status
	}
	if p.Title == "" {
		p.Title = http.StatusText(status)
	}
	e.Problem = p
	e.RetryAfter = resilience.ParseRetryAfter(h.Get("Retry-After"), now)
	if e.RetryAfter == 0 && p.RetryAfter > 0 {
		e.RetryAfter = time.Duration(min(p.RetryAfter, 24*3600)) * time.Second
	}
	return e
}

// clientRedact replaces each secret in s. A secret shorter than 8 bytes
// is left alone: no real token is that short, and replacing it would
// blank ordinary words.
func clientRedact(s string, secrets []string) string {
	for _, t := range secrets {
		if len(t) >= 8 && strings.Contains(s, t) {
			s = strings.ReplaceAll(s, t, secret.Redacted)
		}
	}
	return s
}

func clientHasSecret(s string, secrets []string) bool {
	for _, t := range secrets {
		if len(t) >= 8 && strings.Contains(s, t) {
			return true
		}
	}
	return false
}

// clientClip shortens s to at most n bytes on a rune boundary, marking
// the cut, and makes it valid UTF-8.
func clientClip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
