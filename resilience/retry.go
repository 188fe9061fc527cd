package resilience

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults, the NovaOS Python SDK's: three attempts, 1s doubling to at most
// 16s.
const (
	DefaultAttempts = 3
	DefaultBase     = time.Second
	DefaultMax      = 16 * time.Second
)

// A Policy says how often and how patiently to retry. The zero Policy
// makes one attempt; DefaultPolicy makes DefaultAttempts.
type Policy struct {
	// Attempts is the number of tries in all, the first included; 0 (or
	// less) still makes one.
	Attempts int
	// Base is the wait after the first failure (0: DefaultBase); each
	// later wait doubles it, up to Max (0: DefaultMax).
	Base, Max time.Duration
	// NoJitter waits the computed delays exactly; by default each is
	// multiplied by a random factor in [0.5, 1.0].
	NoJitter bool
	// Breaker, when set, is consulted before every attempt and told every
	// outcome; it is shared by every call to one service.
	Breaker *Breaker
	// Wait sleeps d or until ctx ends; nil uses a timer. Tests replace it
	// to run without sleeping.
	Wait func(ctx context.Context, d time.Duration) error
}

// DefaultPolicy returns the Python SDK's policy: DefaultAttempts tries with
// jittered backoff from DefaultBase to DefaultMax, and no breaker.
func DefaultPolicy() *Policy { return &Policy{Attempts: DefaultAttempts} }

// Delay is the wait before attempt+1 after attempt (1-based) failed:
// Base·2^(attempt-1) capped at Max, jittered unless NoJitter.
func (p *Policy) Delay(attempt int) time.Duration {
	base, limit := p.Base, p.Max
	if base <= 0 {
		base = DefaultBase
	}
	if limit <= 0 {
		limit = DefaultMax
	}
	d := limit
	// Shifting past the cap would overflow; stop doubling once it is hit.
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 62 {
		if step := base << (attempt - 1); step > 0 && step>>(attempt-1) == base && step < limit {
			d = step
		}
	}
	if !p.NoJitter {
		d = time.Duration(float64(d) * (0.5 + rand.Float64()/2))
	}
	return d
}

// Do runs op until it succeeds, fails with an error that is not
// transient, the attempts are spent, or ctx ends. It returns nil or the
// last attempt's error (joined with ctx's when ctx ended during a wait);
// with an open breaker it returns an error matching ErrOpen without
// calling op. A nil Policy is DefaultPolicy.
func (p *Policy) Do(ctx context.Context, op func(ctx context.Context) error) error {
	if p == nil {
		p = DefaultPolicy()
	}
	attempts := max(p.Attempts, 1)
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return errors.Join(last, err)
		}
		if p.Breaker != nil && !p.Breaker.Allow() {
			return &OpenError{Last: last, Until: p.Breaker.reopensAt()}
		}
		err := op(ctx)
		if p.Breaker != nil {
			p.Breaker.Record(err)
		}
		if err == nil {
			return nil
		}
		last = err
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return errors.Join(err, cerr)
		}
		if attempt >= attempts || !IsTransient(err) || ctx.Err() != nil {
			return err
		}
		d := p.Delay(attempt)
		if ra, ok := retryAfter(err); ok && ra > d {
			d = min(ra, max(p.Max, DefaultMax))
		}
		wait := p.Wait
		if wait == nil {
			wait = Sleep
		}
		if werr := wait(ctx, d); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

// Sleep waits d, or until ctx ends (then it returns ctx's error): the
// wait a Policy uses when its Wait is nil.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryableStatus reports whether an HTTP status says the service failed
// for a while and the same request may succeed later: 429, 502, 503, 504.
// Other statuses, 500 included, are answers, not weather.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// A StatusCoder is an error that carries the HTTP status a service
// answered with; IsTransient and Breaker read it through errors.As.
type StatusCoder interface {
	error
	HTTPStatus() int
}

// A RetryAfterer is an error that carries a server's Retry-After.
type RetryAfterer interface {
	error
	RetryAfter() time.Duration
}

// Retryable marks err as transient whatever its kind.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &transient{err}
}

type transient struct{ err error }

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// IsTransient reports whether err is worth another attempt: marked by
// Retryable, an HTTP status RetryableStatus accepts, or a network failure
// (a refused or reset connection, a connection cut mid-answer, a
// timeout, a per-attempt deadline included). A cancellation is not: the
// caller gave up. Do also stops once its own context has ended, whatever
// the error.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var t *transient
	if errors.As(err, &t) {
		return true
	}
	var sc StatusCoder
	if errors.As(err, &sc) {
		return RetryableStatus(sc.HTTPStatus())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return ne.Timeout()
	}
	var op *net.OpError
	return errors.As(err, &op)
}

func retryAfter(err error) (time.Duration, bool) {
	var ra RetryAfterer
	if errors.As(err, &ra) {
		if d := ra.RetryAfter(); d > 0 {
			return d, true
		}
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header value: delay seconds or an
// HTTP date (relative to now). It returns 0 for an absent, past or
// malformed value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
