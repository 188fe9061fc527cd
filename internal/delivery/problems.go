package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// newProblem is a problem of status and code, with detail.
func newProblem(status int, code, reason, detail string) *delivery.Problem {
	return &delivery.Problem{Status: status, Title: http.StatusText(status), Code: code, Reason: reason, Detail: detail}
}

func validationFailed(detail string, errs ...delivery.FieldError) *delivery.Problem {
	p := newProblem(http.StatusBadRequest, delivery.CodeValidationFailed, "", detail)
	p.Errors = errs
	return p
}

func unauthenticated(detail string) *delivery.Problem {
	return newProblem(http.StatusUnauthorized, delivery.CodeUnauthenticated, "", detail)
}

// badProof is unauthenticated for a good token with a proof that is not.
func badProof(detail string) *delivery.Problem {
	p := unauthenticated(detail)
	p.Reason = delivery.InvalidDPoPProof
	return p
}

func notFound(detail string) *delivery.Problem {
	return newProblem(http.StatusNotFound, delivery.CodeNotFound, "", detail)
}

func forbidden(detail string) *delivery.Problem {
	return newProblem(http.StatusForbidden, delivery.CodeForbidden, "", detail)
}

// tokenInvalid refuses an invocation token: reason is expired,
// superseded, invalid, consumed or run_inactive.
func tokenInvalid(reason, detail string) *delivery.Problem {
	return newProblem(http.StatusForbidden, delivery.CodeInvocationTokenInvalid, reason, detail)
}

func conflict(code, reason, detail string) *delivery.Problem {
	return newProblem(http.StatusConflict, code, reason, detail)
}

// withCurrent adds the run as it is now to p.
func withCurrent(p *delivery.Problem, run delivery.Run) *delivery.Problem {
	p.Current, _ = json.Marshal(run)
	return p
}

// problemOf is the delivery problem err stands for: a *delivery.Problem
// as it is, the plumbing's *problem.Problem (413, 415, malformed JSON)
// by its status, and anything else a 500 whose cause is logged under a
// correlation id, never sent.
func (s *Service) problemOf(ctx context.Context, err error) *delivery.Problem {
	var dp *delivery.Problem
	if errors.As(err, &dp) {
		return dp
	}
	var pp *problem.Problem
	if errors.As(err, &pp) {
		code := delivery.CodeValidationFailed
		switch pp.Status {
		case http.StatusRequestEntityTooLarge:
			code = delivery.CodePayloadTooLarge
		case http.StatusUnauthorized:
			code = delivery.CodeUnauthenticated
		case http.StatusForbidden:
			code = delivery.CodeForbidden
		case http.StatusNotFound:
			code = delivery.CodeNotFound
		}
		if pp.Status >= 500 {
			code = delivery.CodeUnavailable
		}
		p := newProblem(pp.Status, code, "", pp.Detail)
		for _, fe := range pp.Errors {
			p.Errors = append(p.Errors, delivery.FieldError{Code: delivery.CodeValidationFailed, Pointer: "/" + fe.Field, Detail: fe.Message})
		}
		return p
	}
	switch {
	case errors.Is(err, httpapi.ErrUnauthenticated):
		return unauthenticated("send valid credentials")
	case errors.Is(err, httpapi.ErrForbidden):
		return forbidden("the caller may not do this")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return newProblem(http.StatusServiceUnavailable, delivery.CodeUnavailable, "", "the request was cut off; retry")
	}
	id := correlationID(ctx)
	s.log.ErrorContext(ctx, "delivery: request failed", "correlation_id", id, "err", err)
	p := newProblem(http.StatusInternalServerError, delivery.CodeInternal, "", "")
	p.CorrelationID = id
	return p
}

// correlationID names a failure in the log and the answer: the request's
// trace id, else a new id.
func correlationID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return a2a.NewID()
}

// fail answers r with the problem err stands for.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problemOf(r.Context(), err)
	s.tel.refused.WithLabelValues(p.Code).Inc()
	writeProblem(w, p)
}

// writeProblem answers with p as application/problem+json. A 401 says
// how to authenticate (RFC 9449 §7.1: a DPoP challenge, with the error
// use_dpop_nonce when the proof lacked a current nonce).
func writeProblem(w http.ResponseWriter, p *delivery.Problem) {
	h := w.Header()
	if p.Status == http.StatusUnauthorized {
		challenge := `DPoP algs="` + dpop.Algorithm + `"`
		switch {
		case p.Code == delivery.CodeUseDPoPNonce:
			challenge += `, error="use_dpop_nonce"`
		case p.Reason == delivery.InvalidDPoPProof:
			challenge += `, error="invalid_dpop_proof"`
		}
		h.Set("WWW-Authenticate", challenge)
		h.Add("WWW-Authenticate", `Bearer realm="novaos-delivery"`)
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	b, _ := json.Marshal(p) // strings, ints, field errors and raw JSON we made
	h.Set("Content-Type", problem.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// writeJSON answers with v as application/json and status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, newProblem(http.StatusInternalServerError, delivery.CodeInternal, "", ""))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
