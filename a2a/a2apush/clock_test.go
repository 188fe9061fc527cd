package a2apush_test

import (
	"context"
	"fmt"
	"io"
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
	nextOutbox
	settled chan a2asrv.PushSettlement
}

// nextOutbox hands out the notification in head, once, to the first
// claim; outboxes that settle differently embed it.
type nextOutbox struct {
	mu   sync.Mutex
	head *a2asrv.PushDelivery
}

func (o *nextOutbox) ClaimPush(context.Context, time.Time, int, time.Duration) ([]*a2asrv.PushDelivery, error) {
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
	out := &oneShotOutbox{settled: make(chan a2asrv.PushSettlement, 1), nextOutbox: nextOutbox{head: &a2asrv.PushDelivery{
		Scope: a2asrv.Scope{Tenant: "acme"}, Seq: 7, Body: []byte(`{"task":{}}`), Queued: queued, Attempts: attempts,
		Config: &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "t1", URL: srv.URL},
	}}}
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

// New refuses options that cannot work, and takes the ones at the edge.
func TestNewValidates(t *testing.T) {
	out := &oneShotOutbox{}
	tests := []struct {
		name   string
		outbox a2asrv.PushOutbox
		o      a2apush.Options
		errHas string // "" for none
	}{
		{name: "no outbox", o: a2apush.Options{}, errHas: "no outbox"},
		{name: "defaults", outbox: out},
		{name: "a signer without an issuer", outbox: out, o: a2apush.Options{Signer: stubSigner{}}, errHas: "go together"},
		{name: "an issuer without a signer", outbox: out, o: a2apush.Options{Issuer: "https://x"}, errHas: "go together"},
		{name: "a lease as long as an attempt", outbox: out, o: a2apush.Options{Timeout: 2 * time.Second, ConnectTimeout: time.Second, Lease: 3 * time.Second}},
		{name: "a lease shorter than an attempt", outbox: out, o: a2apush.Options{Timeout: 2 * time.Second, ConnectTimeout: time.Second, Lease: 3*time.Second - 1},
			errHas: "a2apush: the lease (2.999999999s) must outlast an attempt (3s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := a2apush.New(tc.outbox, &tc.o)
			switch {
			case tc.errHas == "" && (err != nil || d == nil):
				t.Errorf("New: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Errorf("New: %v, want an error with %q", err, tc.errHas)
			}
		})
	}
}

type stubSigner struct{}

func (stubSigner) SignJWT(context.Context, string, []byte) (string, error) { return "x.y.z", nil }

// A delivered notification's successor stays leased for Options.Lease,
// by default an attempt's whole time (Timeout + ConnectTimeout) and 30s.
func TestDefaultLease(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		o    a2apush.Options
		want time.Duration
	}{
		{a2apush.Options{}, a2apush.DefaultTimeout + a2apush.DefaultConnectTimeout + 30*time.Second},
		{a2apush.Options{Timeout: 2 * time.Second, ConnectTimeout: time.Second}, 33 * time.Second},
		{a2apush.Options{Lease: time.Hour}, time.Hour},
	} {
		got, _ := settle(t, tc.o, now, now, 0, http.StatusOK, "")
		if got.Outcome != a2asrv.PushDelivered || got.Continue != tc.want {
			t.Errorf("with %+v: %+v, want delivered and leased on for %s", tc.o, got, tc.want)
		}
	}
}

// countingOutbox hands out its notifications to claims and checks that no
// claim asks for more than the deliverer has room for.
type countingOutbox struct {
	concurrency int
	mu          sync.Mutex
	queue       []*a2asrv.PushDelivery
	outstanding int
	claims      []int
	violations  []string
	settled     chan struct{}
}

func (o *countingOutbox) ClaimPush(_ context.Context, _ time.Time, max int, _ time.Duration) ([]*a2asrv.PushDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.claims = append(o.claims, max)
	if max <= 0 || o.outstanding+max > o.concurrency {
		o.violations = append(o.violations, fmt.Sprintf("a claim of %d with %d in flight", max, o.outstanding))
	}
	n := min(max, len(o.queue))
	if n < 0 {
		n = 0
	}
	ds := o.queue[:n]
	o.queue = o.queue[n:]
	o.outstanding += n
	return ds, nil
}

func (o *countingOutbox) SettlePush(context.Context, *a2asrv.PushDelivery, a2asrv.PushSettlement) (*a2asrv.PushDelivery, error) {
	o.mu.Lock()
	o.outstanding--
	o.mu.Unlock()
	o.settled <- struct{}{}
	return nil, nil
}

// The deliverer never has more than Concurrency deliveries in flight, and
// claims no more than it has room for.
func TestConcurrencyBoundsClaims(t *testing.T) {
	const concurrency, total = 3, 8
	release := make(chan struct{})
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	out := &countingOutbox{concurrency: concurrency, settled: make(chan struct{}, total)}
	for i := range total {
		out.queue = append(out.queue, &a2asrv.PushDelivery{Seq: int64(i), Body: []byte(`{}`), Queued: time.Now(),
			Config: &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: fmt.Sprint("t", i), URL: srv.URL}})
	}
	d, err := a2apush.New(out, &a2apush.Options{Concurrency: concurrency, Policy: &netguard.Policy{AllowLoopback: true}, PollInterval: time.Hour})
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
	// Wait for the first batch to reach the receiver, then let every
	// request through.
	deadline := time.Now().Add(20 * time.Second) // a failure bound
	for inFlight.Load() < concurrency {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", inFlight.Load(), concurrency)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range total {
		select {
		case <-out.settled:
		case <-time.After(20 * time.Second):
			t.Fatal("not every notification was settled")
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.violations) > 0 || out.claims[0] != concurrency {
		t.Errorf("claims %v: %v", out.claims, out.violations)
	}
	// A claim comes when the deliverer starts, is woken or a delivery
	// ends, and again only after one that filled every free slot: never
	// in a loop over an empty outbox.
	if n := len(out.claims); n > 4*total+1 {
		t.Errorf("%d claims for %d notifications", n, total)
	}
	if p := peak.Load(); p > concurrency {
		t.Errorf("%d deliveries in flight at once, want at most %d", p, concurrency)
	}
}

// chainOutbox is a stream of many pending notifications: each settlement
// that asks to go on (Continue) gets the next one, as a store does.
type chainOutbox struct {
	nextOutbox
	length  int
	settled []a2asrv.PushSettlement
	done    chan struct{}
}

func (o *chainOutbox) SettlePush(_ context.Context, d *a2asrv.PushDelivery, s a2asrv.PushSettlement) (*a2asrv.PushDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settled = append(o.settled, s)
	if len(o.settled) == o.length {
		close(o.done)
	}
	if int(d.Seq)+1 >= o.length {
		return nil, nil
	}
	next := *d
	next.Seq++
	if s.Continue > 0 {
		return &next, nil
	}
	o.head = &next // claimed again later, like any due notification
	return nil, nil
}

// One claim carries at most 32 notifications of a stream in a row, so a
// stream with much pending takes turns with the others.
func TestRunOfOneStreamIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	const length = 40
	out := &chainOutbox{length: length, done: make(chan struct{}), nextOutbox: nextOutbox{head: &a2asrv.PushDelivery{Body: []byte(`{}`), Queued: time.Now(),
		Config: &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "t1", URL: srv.URL}}}}
	d, err := a2apush.New(out, &a2apush.Options{Policy: &netguard.Policy{AllowLoopback: true}, Lease: time.Minute, PollInterval: time.Hour})
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
	case <-out.done:
	case <-time.After(20 * time.Second): // a failure bound
		t.Fatal("the stream was not delivered")
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	var got []time.Duration
	for _, s := range out.settled {
		if s.Outcome != a2asrv.PushDelivered {
			t.Fatalf("settlement %+v", s)
		}
		got = append(got, s.Continue)
	}
	var want []time.Duration
	for i := range length {
		c := time.Minute
		if i == 31 {
			c = 0 // the 32nd of the run: the stream is claimed again
		}
		want = append(want, c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Continue of each settlement (-want +got)\n%s", diff)
	}
}

// A deliverer stopped mid-attempt releases the notification to be tried
// again at once, by whoever claims it next.
func TestShutdownReleasesInFlight(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	arrived, stop := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees the client leave
		close(arrived)
		select { // held until the deliverer gives up on it
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	out := &oneShotOutbox{settled: make(chan a2asrv.PushSettlement, 1), nextOutbox: nextOutbox{head: &a2asrv.PushDelivery{Body: []byte(`{}`), Queued: now,
		Config: &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "t1", URL: srv.URL}}}}
	d, err := a2apush.New(out, &a2apush.Options{Policy: &netguard.Policy{AllowLoopback: true}, Now: func() time.Time { return now }, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	<-arrived
	cancel()
	select {
	case s := <-out.settled:
		want := a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Next: now, Error: "interrupted by shutdown"}
		if diff := cmp.Diff(want, s); diff != "" {
			t.Errorf("settlement (-want +got)\n%s", diff)
		}
	case <-time.After(20 * time.Second): // a failure bound
		t.Fatal("no settlement")
	}
	if err := <-ran; err != context.Canceled {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

// What becomes of a notification, by the receiver's status: 2xx is
// delivered; 408, 425, 429 and 5xx are retried; anything else is refused
// for good.
func TestStatusOutcomes(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	o := a2apush.Options{BackoffBase: time.Second, BackoffMax: time.Minute, Lease: time.Minute}
	delivered := a2asrv.PushSettlement{Outcome: a2asrv.PushDelivered, At: now, Continue: time.Minute}
	for _, tc := range []struct {
		status int
		want   a2asrv.PushSettlement // Next is checked apart for a retry
	}{
		{200, delivered},
		{201, delivered},
		{299, delivered},
		{300, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 300 (not retried)"}},
		{400, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 400 (not retried)"}},
		{407, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 407 (not retried)"}},
		{408, a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Error: "HTTP 408"}},
		{409, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 409 (not retried)"}},
		{424, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 424 (not retried)"}},
		{425, a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Error: "HTTP 425"}},
		{426, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 426 (not retried)"}},
		{429, a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Error: "HTTP 429"}},
		{499, a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: now, Error: "HTTP 499 (not retried)"}},
		{500, a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Error: "HTTP 500"}},
		{599, a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Error: "HTTP 599"}},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			got, n := settle(t, o, now, now, 0, tc.status, "")
			if tc.want.Outcome == a2asrv.PushRetry {
				if wait := got.Next.Sub(now); wait < 500*time.Millisecond || wait > time.Second {
					t.Errorf("retried after %s, want the first backoff, 0.5-1s", wait)
				}
				got.Next = time.Time{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || n != 1 {
				t.Errorf("%d requests; settlement (-want +got)\n%s", n, diff)
			}
		})
	}
}
