package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	p := &Policy{NoJitter: true}
	want := []time.Duration{1, 2, 4, 8, 16, 16, 16}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w*time.Second {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w*time.Second)
		}
	}
	for _, attempt := range []int{0, -3, 63, 64, 1000} {
		got := p.Delay(attempt)
		if got <= 0 || got > DefaultMax {
			t.Errorf("Delay(%d) = %v, want within (0, %v]", attempt, got, DefaultMax)
		}
	}
	small := &Policy{Base: 10 * time.Millisecond, Max: 25 * time.Millisecond, NoJitter: true}
	if got := small.Delay(3); got != 25*time.Millisecond {
		t.Errorf("capped Delay(3) = %v, want 25ms", got)
	}
	jittered := &Policy{Base: time.Second}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := jittered.Delay(2)
		if d < time.Second || d > 2*time.Second {
			t.Fatalf("jittered Delay(2) = %v, want within [1s, 2s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("jitter produced only %d distinct delays in 200 draws", len(seen))
	}
}

// recorder is a Wait that records delays instead of sleeping.
type recorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recorder) wait(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return ctx.Err()
}

var errPlain = errors.New("plain failure")

func TestDoRetries(t *testing.T) {
	tests := []struct {
		name      string
		attempts  int
		errs      []error // returned by successive calls; nil after the list
		wantCalls int
		wantErr   error // matched with errors.Is; nil means success
		wantWaits []time.Duration
	}{
		{name: "success at once", attempts: 3, wantCalls: 1},
		{name: "two transient then success", attempts: 3,
			errs: []error{&HTTPError{Status: 503}, &HTTPError{Status: 502}}, wantCalls: 3,
			wantWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "spent attempts return the last error", attempts: 3,
			errs:      []error{&HTTPError{Status: 504}, &HTTPError{Status: 429}, Retryable(errPlain)},
			wantCalls: 3, wantErr: errPlain, wantWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "zero attempts still make one", attempts: 0,
			errs: []error{Retryable(errPlain)}, wantCalls: 1, wantErr: errPlain},
		{name: "negative attempts make one", attempts: -2,
			errs: []error{Retryable(errPlain)}, wantCalls: 1, wantErr: errPlain},
		{name: "caller error is not retried", attempts: 3,
			errs: []error{&HTTPError{Status: 400}}, wantCalls: 1, wantErr: &HTTPError{Status: 400}},
		{name: "500 is an answer, not retried", attempts: 3,
			errs: []error{&HTTPError{Status: 500}}, wantCalls: 1, wantErr: &HTTPError{Status: 500}},
		{name: "unmarked error is not retried", attempts: 3,
			errs: []error{errPlain}, wantCalls: 1, wantErr: errPlain},
		{name: "connection refused is retried", attempts: 2,
			errs: []error{fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}, wantCalls: 2,
			wantWaits: []time.Duration{time.Second}},
		{name: "answer cut short is retried", attempts: 2,
			errs: []error{fmt.Errorf("read: %w", io.ErrUnexpectedEOF)}, wantCalls: 2,
			wantWaits: []time.Duration{time.Second}},
		{name: "longer Retry-After wins", attempts: 2,
			errs: []error{&HTTPError{Status: 429, After: 5 * time.Second}}, wantCalls: 2,
			wantWaits: []time.Duration{5 * time.Second}},
		{name: "Retry-After is capped", attempts: 2,
			errs: []error{&HTTPError{Status: 503, After: time.Hour}}, wantCalls: 2,
			wantWaits: []time.Duration{DefaultMax}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p := &Policy{Attempts: tt.attempts, NoJitter: true, Wait: rec.wait}
			calls := 0
			err := p.Do(context.Background(), func(context.Context) error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tt.wantErr != nil && !matches(err, tt.wantErr):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if fmt.Sprint(rec.delays) != fmt.Sprint(tt.wantWaits) {
				t.Errorf("waits = %v, want %v", rec.delays, tt.wantWaits)
			}
		})
	}
}

func matches(err, want error) bool {
	var he *HTTPError
	if w, ok := want.(*HTTPError); ok {
		return errors.As(err, &he) && he.Status == w.Status
	}
	return errors.Is(err, want)
}

func TestDoNilPolicyMakesDefaultAttempts(t *testing.T) {
	var p *Policy
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	// The default policy really sleeps; cancel after the first failure so
	// the test sees the second attempt refused by the context, not a sleep.
	err := p.Do(ctx, func(context.Context) error {
		calls++
		cancel()
		return &HTTPError{Status: 503}
	})
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("calls = %d, err = %v; want 1 call and a cancelled wait", calls, err)
	}
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 503 {
		t.Errorf("err %v does not carry the last attempt's failure", err)
	}
	if DefaultPolicy().Attempts != 3 {
		t.Errorf("DefaultPolicy attempts = %d, want 3", DefaultPolicy().Attempts)
	}
}

func TestDoStopsWhenContextEndsDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Policy{Attempts: 5, Base: time.Hour}
	calls := 0
	called := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- p.Do(ctx, func(context.Context) error {
			if calls++; calls == 1 {
				close(called)
			}
			return Retryable(errPlain)
		})
	}()
	<-called // the first attempt failed: Do now waits an hour
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, errPlain) || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want both the failure and context.Canceled", err)
		}
		if calls != 1 {
			t.Errorf("calls = %d, want 1", calls)
		}
	case <-time.After(time.Minute): // an hour's wait if the context is ignored
		t.Fatal("Do kept waiting after its context ended")
	}
}

func TestIsTransientRealNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = http.Get("http://" + addr + "/")
	if err == nil || !IsTransient(err) {
		t.Errorf("refused connection: IsTransient(%v) = false, want true", err)
	}

	// A server that hangs up mid-answer.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("short"))
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil || !IsTransient(err) {
		t.Errorf("cut answer: IsTransient(%v) = false, want true", err)
	}

	// A client timeout is a network timeout: transient.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
	}))
	defer slow.Close()
	_, err = (&http.Client{Timeout: 20 * time.Millisecond}).Get(slow.URL)
	if err == nil || !IsTransient(err) {
		t.Errorf("client timeout: IsTransient(%v) = false, want true", err)
	}

	if !IsTransient(fmt.Errorf("attempt: %w", context.DeadlineExceeded)) {
		t.Error("a per-attempt deadline is not transient")
	}
	for _, err := range []error{nil, context.Canceled, fmt.Errorf("x: %w", context.Canceled), errPlain, &HTTPError{Status: 404}} {
		if IsTransient(err) {
			t.Errorf("IsTransient(%v) = true, want false", err)
		}
	}
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestBreaker(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	b := NewBreaker(&BreakerOptions{Threshold: 3, Reset: 10 * time.Second, Now: clk.now})
	fail := &HTTPError{Status: 503}

	// Caller mistakes do not count, and a success clears the count.
	for _, err := range []error{fail, fail, &HTTPError{Status: 404}, fail, fail, nil, fail, fail} {
		if !b.Allow() {
			t.Fatalf("breaker opened early after %v", err)
		}
		b.Record(err)
	}
	if b.State() != Closed {
		t.Fatalf("state = %v, want closed before the third failure in a row", b.State())
	}
	b.Allow()
	b.Record(fail)
	if b.State() != Open || b.Allow() {
		t.Fatalf("state = %v; want open and refusing after 3 failures in a row", b.State())
	}
	clk.add(9 * time.Second)
	if b.Allow() {
		t.Fatal("breaker let a call through before the reset time")
	}
	clk.add(time.Second)
	if !b.Allow() {
		t.Fatal("breaker refused the probe after the reset time")
	}
	if b.State() != HalfOpen || b.Allow() {
		t.Fatal("a second call went through while the probe was in flight")
	}
	b.Record(fail) // failed probe: open again for a full reset
	if b.State() != Open {
		t.Fatalf("state after failed probe = %v, want open", b.State())
	}
	clk.add(5 * time.Second)
	if b.Allow() {
		t.Fatal("failed probe did not restart the reset time")
	}
	clk.add(5 * time.Second)
	if !b.Allow() {
		t.Fatal("no probe after the second reset")
	}
	b.Record(context.Canceled) // the caller gave up: someone else may probe
	if !b.Allow() {
		t.Fatal("a cancelled probe left the breaker stuck")
	}
	b.Record(nil)
	if b.State() != Closed || !b.Allow() {
		t.Fatalf("state after good probe = %v, want closed", b.State())
	}
	b.Record(&HTTPError{Status: 429})
	b.Record(&HTTPError{Status: 429})
	b.Record(&HTTPError{Status: 429})
	if b.State() != Open {
		t.Errorf("429s did not open the breaker: rate limiting is the service's trouble")
	}
}

func TestBreakerOneProbeUnderConcurrency(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	b := NewBreaker(&BreakerOptions{Threshold: 1, Reset: time.Second, Now: clk.now})
	b.Allow()
	b.Record(errPlain)
	clk.add(time.Second)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if b.Allow() {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 1 {
		t.Fatalf("%d probes went through, want exactly 1", allowed.Load())
	}
}

func TestDoWithBreaker(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	b := NewBreaker(&BreakerOptions{Threshold: 2, Reset: 30 * time.Second, Now: clk.now})
	rec := &recorder{}
	p := &Policy{Attempts: 3, NoJitter: true, Wait: rec.wait, Breaker: b}
	calls := 0
	err := p.Do(context.Background(), func(context.Context) error { calls++; return &HTTPError{Status: 502} })
	if calls != 2 || !errors.Is(err, ErrOpen) {
		t.Fatalf("calls = %d, err = %v; want the breaker to stop the third attempt", calls, err)
	}
	var oe *OpenError
	if !errors.As(err, &oe) || !oe.Until.Equal(clk.now().Add(30*time.Second)) {
		t.Errorf("open error %#v does not say when it reopens", err)
	}
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 502 {
		t.Errorf("open error %v hides the last failure", err)
	}
	calls = 0
	err = p.Do(context.Background(), func(context.Context) error { calls++; return nil })
	if calls != 0 || !errors.Is(err, ErrOpen) {
		t.Fatalf("open breaker: calls = %d, err = %v; want refusal without a call", calls, err)
	}
	clk.add(30 * time.Second)
	if err := p.Do(context.Background(), func(context.Context) error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("probe: calls = %d, err = %v", calls, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 120 * time.Second},
		{" 3 ", 3 * time.Second},
		{"-1", 0},
		{"1.5", 0},
		{"soon", 0},
		{"99999999999999999999", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestStatusError(t *testing.T) {
	resp := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"7"}}}
	err := StatusError(resp)
	if err.HTTPStatus() != 503 || err.RetryAfter() != 7*time.Second {
		t.Errorf("StatusError = %+v", err)
	}
	if got := err.Error(); got != "http status 503 Service Unavailable" {
		t.Errorf("Error() = %q", got)
	}
	if !IsTransient(fmt.Errorf("call: %w", err)) {
		t.Error("a wrapped 503 is not transient")
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "Wed, 21 Oct 2015 07:28:00 GMT", "-5", "1e9"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := ParseRetryAfter(s, now); d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", s, d)
		}
	})
}

func TestDoStopsAtCallerDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	rec := &recorder{}
	calls := 0
	err := (&Policy{Attempts: 5, Wait: rec.wait}).Do(ctx, func(ctx context.Context) error {
		calls++
		<-ctx.Done()
		return ctx.Err()
	})
	if calls != 1 || !errors.Is(err, context.DeadlineExceeded) || len(rec.delays) != 0 {
		t.Fatalf("calls = %d, waits = %v, err = %v; want one call and the caller's deadline", calls, rec.delays, err)
	}
}
