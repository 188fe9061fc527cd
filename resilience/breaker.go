package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Defaults of the breaker, the NovaOS Python SDK's.
const (
	DefaultThreshold = 5
	DefaultReset     = 30 * time.Second
)

// ErrOpen is matched (errors.Is) by the error of a call the breaker
// refused.
var ErrOpen = errors.New("resilience: circuit open")

// OpenError is returned instead of calling an operation while the breaker
// is open. Last is the failure of the attempt before it, if Do made one.
type OpenError struct {
	Last  error
	Until time.Time // when a probe will be let through
}

func (e *OpenError) Error() string {
	msg := "resilience: circuit open until " + e.Until.UTC().Format(time.RFC3339)
	if e.Last != nil {
		msg += " (last failure: " + e.Last.Error() + ")"
	}
	return msg
}

func (e *OpenError) Is(target error) bool { return target == ErrOpen }
func (e *OpenError) Unwrap() error        { return e.Last }

// State is a breaker's state.
type State int

const (
	Closed   State = iota // calls flow
	Open                  // calls are refused until the reset time
	HalfOpen              // one probe is in flight
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// BreakerOptions configure a Breaker; nil or zero fields mean the Python SDK's
// defaults.
type BreakerOptions struct {
	Threshold int           // consecutive failures that open it (default 5)
	Reset     time.Duration // how long it stays open (default 30s)
	Now       func() time.Time
}

// A Breaker is a three-state circuit breaker, safe for concurrent use.
type Breaker struct {
	threshold int
	reset     time.Duration
	now       func() time.Time

	mu       sync.Mutex
	state    State
	failures int
	openedAt time.Time
}

// NewBreaker returns a closed breaker.
func NewBreaker(o *BreakerOptions) *Breaker {
	b := &Breaker{threshold: DefaultThreshold, reset: DefaultReset, now: time.Now}
	if o != nil {
		if o.Threshold > 0 {
			b.threshold = o.Threshold
		}
		if o.Reset > 0 {
			b.reset = o.Reset
		}
		if o.Now != nil {
			b.now = o.Now
		}
	}
	return b
}

// State returns the state as of the last call: an open breaker whose reset
// time has passed stays Open until Allow lets a probe through.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Allow reports whether a call may go ahead. While open it says no until
// the reset time has passed; then it lets exactly one probe through and
// says no to the others until that probe is recorded.
func (b *Breaker) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Closed:
		return true
	case Open:
		if b.now().Sub(b.openedAt) >= b.reset {
			b.state = HalfOpen
			return true
		}
	}
	return false
}

func (b *Breaker) reopensAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.openedAt.Add(b.reset)
}

// Record tells the breaker how an allowed call ended. A nil error, or an
// error that is the caller's own (an HTTP 4xx other than 429), is a
// success: the service answered. A call the caller cancelled says nothing
// either way; a cancelled probe lets the next caller probe instead. Anything
// else is a failure.
func (b *Breaker) Record(err error) {
	if errors.Is(err, context.Canceled) {
		b.mu.Lock()
		if b.state == HalfOpen {
			b.state = Open // openedAt is old enough: the next Allow probes
		}
		b.mu.Unlock()
		return
	}
	if countsAgainst(err) {
		b.Failure()
	} else {
		b.Success()
	}
}

// Success closes the breaker and clears the failure count.
func (b *Breaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.failures = Closed, 0
}

// Failure counts a failure; the Threshold-th in a row, or a failed
// probe, opens the breaker for Reset.
func (b *Breaker) Failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.state == HalfOpen || b.failures >= b.threshold {
		b.state, b.openedAt = Open, b.now()
	}
}

func countsAgainst(err error) bool {
	if err == nil {
		return false
	}
	var sc StatusCoder
	if errors.As(err, &sc) {
		code := sc.HTTPStatus()
		return code >= 500 || code == http.StatusTooManyRequests
	}
	return true
}

// HTTPError is a service's non-success HTTP answer, reduced to what
// retrying needs. Its text names the status only: a body may echo what the
// caller sent, secrets included.
type HTTPError struct {
	Status int
	After  time.Duration // the answer's Retry-After, 0 if none
}

// StatusError returns resp's status as an *HTTPError. It does not read or
// close the body.
func StatusError(resp *http.Response) *HTTPError {
	return &HTTPError{Status: resp.StatusCode, After: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("http status %d %s", e.Status, http.StatusText(e.Status))
}
func (e *HTTPError) HTTPStatus() int           { return e.Status }
func (e *HTTPError) RetryAfter() time.Duration { return e.After }
