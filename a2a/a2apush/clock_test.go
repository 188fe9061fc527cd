package a2apush_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
)

// oneShotOutbox hands out one notification and reports its settlement.
type oneShotOutbox struct {
	mu      sync.Mutex
	head    *a2asrv.PushDelivery
	settled chan a2asrv.PushSettlement
}

func (o *oneShotOutbox) ClaimPush(context.Context, time.Time, int, time.Duration) ([]*a2asrv.PushDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == nil {
		return nil, nil
	}
	d := o.head
	o.head = nil
	return []*a2asrv.PushDelivery{d}, nil
}

func (o *oneShotOutbox) SettlePush(_ context.Context, _ *a2asrv.PushDelivery, s a2asrv.PushSettlement) (*a2asrv.PushDelivery, error) {
	o.settled <- s
	return nil, nil
}

// settle delivers one notification queued at queued, after attempts
// failures, on a clock stopped at now, to a receiver that answers status
// with a Retry-After of retryAfter (none when ""). It returns the
// settlement and how many requests reached the receiver.
func settle(t *testing.T, o a2apush.Options, now, queued time.Time, attempts, status int, retryAfter string) (a2asrv.PushSettlement, int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	out := &oneShotOutbox{settled: make(chan a2asrv.PushSettlement, 1), head: &a2asrv.PushDelivery{
		Scope: a2asrv.Scope{Tenant: "acme"}, Seq: 7, Body: []byte(`{"task":{}}`), Queued: queued, Attempts: attempts,
		Config: &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "t1", URL: srv.URL},
	}}
	o.Policy = &netguard.Policy{AllowLoopback: true}
	o.Now = func() time.Time { return now }
	o.PollInterval = time.Hour // only Wake and the first claim look at the outbox
	d, err := a2apush.New(out, &o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	select {
	case s := <-out.settled:
		return s, requests.Load()
	case <-time.After(20 * time.Second): // a failure bound, not a timing
		t.Fatal("no settlement")
		return a2asrv.PushSettlement{}, 0
	}
}

// A notification older than MaxAge is never sent, and a failure whose
// retry would come after MaxAge gives the stream up at once.
func TestMaxAgeIsEnforced(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const maxAge = time.Hour
	o := a2apush.Options{MaxAge: maxAge, BackoffBase: time.Second, BackoffMax: 10 * time.Minute, MaxAttempts: 100, Lease: time.Minute}
	tests := []struct {
		name       string
		age        time.Duration
		status     int
		retryAfter string
		want       a2asrv.PushSettlement
		requests   int32
	}{
		{name: "older than MaxAge: not sent", age: maxAge + time.Second, status: http.StatusNoContent, requests: 0,
			want: a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "gave up: the notification waited 1h0m1s, more than 1h0m0s"}},
		{name: "exactly MaxAge old: sent", age: maxAge, status: http.StatusNoContent, requests: 1,
			want: a2asrv.PushSettlement{Outcome: a2asrv.PushDelivered, At: now, Continue: time.Minute}},
		{name: "a retry past MaxAge: given up now", age: maxAge - time.Minute, status: http.StatusServiceUnavailable, retryAfter: "61", requests: 1,
			want: a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "gave up: a retry in 1m1s would come after the notification's maximum age (1h0m0s): HTTP 503"}},
		{name: "a retry exactly at MaxAge: scheduled", age: maxAge - time.Minute, status: http.StatusServiceUnavailable, retryAfter: "60", requests: 1,
			want: a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Next: now.Add(time.Minute), Error: "HTTP 503"}},
		{name: "a refusal is not a retry", age: maxAge - time.Minute, status: http.StatusGone, retryAfter: "61", requests: 1,
			want: a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 410 (not retried)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n := settle(t, o, now, now.Add(-tc.age), 0, tc.status, tc.retryAfter)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settlement (-want +got)\n%s", diff)
			}
			if n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// A receiver's Retry-After is honoured when it is longer than the
// backoff, up to BackoffMax, in either of its forms.
func TestRetryAfterIsCapped(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	// The first failure backs off 0.5-1s: any Retry-After above it is
	// what decides, and its value comes back exactly.
	o := a2apush.Options{BackoffBase: time.Second, BackoffMax: 10 * time.Minute, MaxAge: 24 * time.Hour}
	tests := []struct {
		name       string
		retryAfter string
		wait       time.Duration // 0: the backoff's, 0.5-1s
	}{
		{"seconds", "120", 2 * time.Minute},
		{"seconds past BackoffMax", "3600", 10 * time.Minute},
		{"seconds beyond any duration", "99999999999999999", 10 * time.Minute},
		{"exactly BackoffMax", "600", 10 * time.Minute},
		{"an HTTP date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"an HTTP date past BackoffMax", now.Add(48 * time.Hour).Format(http.TimeFormat), 10 * time.Minute},
		{"an HTTP date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"zero", "0", 0},
		{"negative", "-5", 0},
		{"not a number", "soon", 0},
		{"shorter than the backoff", "0", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := settle(t, o, now, now, 0, http.StatusTooManyRequests, tc.retryAfter)
			if got.Outcome != a2asrv.PushRetry || got.Error != "HTTP 429" || !got.At.Equal(now) {
				t.Fatalf("settlement %+v, want a retry after HTTP 429", got)
			}
			wait := got.Next.Sub(now)
			if tc.wait == 0 {
				if wait < 500*time.Millisecond || wait > time.Second {
					t.Errorf("waits %s, want the backoff's 0.5-1s", wait)
				}
			} else if wait != tc.wait {
				t.Errorf("waits %s, want %s", wait, tc.wait)
			}
		})
	}
}

// Later failures back off exponentially up to BackoffMax, less jitter of
// at most half; MaxAttempts ends them.
func TestBackoffGrows(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	o := a2apush.Options{BackoffBase: time.Second, BackoffMax: 10 * time.Second, MaxAge: 24 * time.Hour, MaxAttempts: 50}
	for _, tc := range []struct {
		failures int // before this attempt
		full     time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {2, 4 * time.Second}, {3, 8 * time.Second}, {4, 10 * time.Second}, {40, 10 * time.Second}} {
		got, _ := settle(t, o, now, now, tc.failures, http.StatusBadGateway, "")
		wait := got.Next.Sub(now)
		if got.Outcome != a2asrv.PushRetry || wait < tc.full/2 || wait > tc.full {
			t.Errorf("after %d failures: %+v (waits %s), want a retry within %s-%s", tc.failures+1, got, wait, tc.full/2, tc.full)
		}
	}
	got, _ := settle(t, o, now, now, 49, http.StatusBadGateway, "")
	if want := "gave up after 50 attempts: HTTP 502"; got.Outcome != a2asrv.PushDead || got.Error != want {
		t.Errorf("the 50th failure: %+v, want dead with %q", got, want)
	}
	if strings.Contains(got.Error, "127.0.0.1") {
		t.Errorf("the error names the receiver: %q", got.Error)
	}
}
