package schedsvc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// faultyFront answers the first failures requests of each method and
// path it is told of with a status, and passes the rest to the service;
// it counts every request.
type faultyFront struct {
	next http.Handler
	mu   sync.Mutex
	// fail maps "METHOD path" to the statuses its next requests get.
	fail  map[string][]int
	count map[string]int
}

func (f *faultyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.count[key]++
	var status int
	if q := f.fail[key]; len(q) > 0 {
		status, f.fail[key] = q[0], q[1:]
	}
	f.mu.Unlock()
	if status != 0 {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try again", status)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *faultyFront) requests(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count[method+" "+path]
}

// noWait retries at once, so the tests never sleep.
func noWait(context.Context, time.Duration) error { return nil }

func TestClientAgainstService(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	mux := http.NewServeMux()
	for _, r := range h.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	front := &faultyFront{next: mux, fail: map[string][]int{}, count: map[string]int{}}
	srv := httptest.NewServer(front)
	defer srv.Close()
	breaker := resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 5, Reset: time.Hour})
	c, err := heartbeat.New(srv.URL, secret.New(h.aliceToken()), &heartbeat.Options{
		Retry: &resilience.Policy{Attempts: 3, Wait: noWait, Breaker: breaker}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	path := heartbeat.ConfigsPath("echo", "inst-1")

	// A create that meets a 503 is retried, and creates one config.
	front.fail["POST "+path] = []int{http.StatusServiceUnavailable}
	req := createReq()
	req.Budget = &heartbeat.Budget{MaxDailyRuns: 24, MaxDailyTokens: 100_000, MaxDailyCostUSD: 5}
	created, err := c.CreateConfig(ctx, "echo", "inst-1", req)
	if err != nil {
		t.Fatal(err)
	}
	if n := front.requests("POST", path); n != 2 {
		t.Errorf("the create took %d requests, want 2 (a 503, then the create)", n)
	}
	// A second create is a 409, which is an answer: it is not retried.
	_, err = c.CreateConfig(ctx, "echo", "inst-1", req)
	var he *heartbeat.Error
	if !errors.As(err, &he) || he.Status != http.StatusConflict || !errors.Is(err, heartbeat.ErrExists) || !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("a second create: %v, want a 409 matching ErrExists and ErrConflict", err)
	}
	if n := front.requests("POST", path); n != 3 {
		t.Errorf("the second create took %d requests, want 1", n-2)
	}

	list, err := c.ListConfigs(ctx, "echo", "inst-1")
	if err != nil || len(list) != 1 || list[0].ConfigID != created.ConfigID || list[0].Budget.MaxDailyTokens != 100_000 ||
		list[0].Schedules[0].NextRunAt == nil {
		t.Fatalf("ListConfigs = %+v, %v", list, err)
	}
	for range 2 { // idempotent both ways
		st, err := c.PauseConfig(ctx, "echo", "inst-1", created.ConfigID)
		if err != nil || st.Status != heartbeat.StatusPaused {
			t.Fatalf("PauseConfig = %+v, %v", st, err)
		}
	}
	// A resume that meets a 502 and a 429 still gets through.
	front.fail["POST "+path+"/"+created.ConfigID+"/resume"] = []int{http.StatusBadGateway, http.StatusTooManyRequests}
	for range 2 {
		st, err := c.ResumeConfig(ctx, "echo", "inst-1", created.ConfigID)
		if err != nil || st.Status != heartbeat.StatusActive {
			t.Fatalf("ResumeConfig = %+v, %v", st, err)
		}
	}

	// Refusals are typed and name the field.
	bad := createReq()
	bad.CronExpression = "every hour"
	_, err = c.CreateConfig(ctx, "echo", "inst-2", bad)
	if !errors.As(err, &he) || !errors.Is(err, heartbeat.ErrInvalidRequest) || len(he.Errors) == 0 || he.Errors[0].Field != "cron_expression" {
		t.Errorf("a bad cron: %v", err)
	}
	if _, err := c.ListConfigs(ctx, "echo", "in/valid"); !errors.Is(err, heartbeat.ErrInvalidRequest) {
		t.Errorf("a bad instance id: %v", err)
	}
	other, _ := heartbeat.New(srv.URL, secret.New("not-a-token"), &heartbeat.Options{Retry: &resilience.Policy{}})
	if _, err := other.ListConfigs(ctx, "echo", "inst-1"); !errors.Is(err, heartbeat.ErrUnauthorized) ||
		strings.Contains(err.Error(), "not-a-token") {
		t.Errorf("a bad token: %v", err)
	}
	if err := c.DeleteConfig(ctx, "echo", "inst-1", created.ConfigID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteConfig(ctx, "echo", "inst-1", created.ConfigID); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("a second delete: %v", err)
	}

	// Five failures in a row open the breaker: the calls after it fail
	// without reaching the server.
	front.fail["GET "+path] = []int{503, 503, 503, 503, 503, 503}
	start := front.requests("GET", path)
	_, _ = c.ListConfigs(ctx, "echo", "inst-1")
	_, _ = c.ListConfigs(ctx, "echo", "inst-1")
	before := front.requests("GET", path)
	if _, err := c.ListConfigs(ctx, "echo", "inst-1"); !errors.Is(err, resilience.ErrOpen) {
		t.Errorf("with the breaker open: %v", err)
	}
	if after := front.requests("GET", path); after != before || before-start != 5 {
		t.Errorf("requests: %d failed, %d after the open breaker's call; want 5 failures and no more", before-start, after-before)
	}
}
