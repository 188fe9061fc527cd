package adapter

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// The retry policy of a Client. A call is tried again only when sending
// it twice cannot do twice what it does once:
//
//   - GET, HEAD, PUT and DELETE are idempotent by their method;
//   - a POST or PATCH carries an Idempotency-Key (the platform answers a
//     repeated key with its first answer), or its route is exempt
//     (delivery.Route.ExemptReason: the body names it once, or the agent
//     runtime's state makes a repeat harmless).
//
// Every POST and PATCH whose route is not exempt gets a new UUIDv7 key,
// once per call, repeated on every attempt; WithIdempotencyKey fixes it
// beforehand (an outbox stores it before its first send).
//
// What is tried again: a network error or an attempt's timeout, a 5xx
// but 503 setup_required, 429 and 409 request_in_progress. The wait
// before retry n (from 0) is the longer of the answer's Retry-After and
// full jitter, uniform(0, min(RetryBackoffCap, RetryBackoffBase·2^n)),
// slept on the client's Clock; at most Settings.RetryMaxAttempts
// attempts are made.

// clientKeyCtx is the context key of WithIdempotencyKey.
type clientKeyCtx struct{}

// WithIdempotencyKey returns a context whose POST or PATCH (of a route
// that is not exempt) carries key as its Idempotency-Key instead of a
// new one: store the key before the first send, and a send repeated
// after a crash is answered with the first answer.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, clientKeyCtx{}, key)
}

func clientIdempotencyKey(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(clientKeyCtx{}).(string)
	return k, ok
}

// clientValidKey reports whether k may travel as a header value: 1 to
// 255 visible ASCII characters.
func clientValidKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}

// clientMethodRetries reports whether a request may be sent again by
// its method, its key and its route's exemption.
func clientMethodRetries(method string, hasKey, exempt bool) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost, http.MethodPatch:
		return hasKey || exempt
	}
	return false
}

// clientNeedsKey reports whether a request gets an Idempotency-Key.
func clientNeedsKey(method string, exempt bool) bool {
	return (method == http.MethodPost || method == http.MethodPatch) && !exempt
}

// IsTransient reports whether err, returned by a Client, may pass when
// the same request is sent again later: a network error or timeout, a
// 5xx but 503 setup_required, 429 or 409 request_in_progress. A Client
// retries those itself; IsTransient tells a caller whose retries ran
// out (an outbox keeping an entry pending) from one refused for good.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var pe *ProblemError
	if errors.As(err, &pe) {
		return clientRetryableProblem(pe)
	}
	var te *clientTransportError
	return errors.As(err, &te)
}

func clientRetryableProblem(pe *ProblemError) bool {
	switch {
	case pe.Status == http.StatusServiceUnavailable && pe.Problem.Code == delivery.CodeSetupRequired:
		return false
	case pe.Status >= 500 && pe.Status <= 599:
		return true
	case pe.Status == http.StatusTooManyRequests:
		return true
	case pe.Status == http.StatusConflict && pe.Problem.Code == delivery.CodeRequestInProgress:
		return true
	}
	return false
}

// clientTransportError is a request that got no answer: the network
// failed or the attempt timed out.
type clientTransportError struct {
	op  string
	err error
}

func (e *clientTransportError) Error() string { return "adapter: " + e.op + ": " + e.err.Error() }
func (e *clientTransportError) Unwrap() error { return e.err }

// clientBackoff is the full-jitter wait before retry n (from 0):
// uniform in [0, min(limit, base·2^n)].
func clientBackoff(n int, base, limit time.Duration, rnd func(int64) int64) time.Duration {
	d := limit
	if n < 62 {
		if step := base << n; step > 0 && step>>n == base && step < limit {
			d = step
		}
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(rnd(int64(d) + 1))
}

// clientRoute is a delivery.Route with its template split once.
type clientRoute struct {
	delivery.Route
	segs []string
}

var clientRoutes = sync.OnceValue(func() []clientRoute {
	rs := make([]clientRoute, len(delivery.Routes))
	for i, r := range delivery.Routes {
		rs[i] = clientRoute{Route: r, segs: strings.Split(r.Template, "/")}
	}
	return rs
})

// clientRouteOf finds the route of a request by its method and path (the
// path as sent, escaped, without query): a braced segment of a template
// matches any non-empty segment.
func clientRouteOf(method, path string) (delivery.Route, bool) {
	segs := strings.Split(path, "/")
	for _, r := range clientRoutes() {
		if r.Method != method || len(r.segs) != len(segs) {
			continue
		}
		ok := true
		for i, p := range r.segs {
			if strings.HasPrefix(p, "{") {
				if segs[i] == "" {
					ok = false
					break
				}
			} else if p != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return r.Route, true
		}
	}
	return delivery.Route{}, false
}
