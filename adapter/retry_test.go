package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// clientStep is one scripted answer of the retry tests.
type clientStep struct {
	status     int
	code       string
	retryAfter string
	hangup     bool // close the connection without an answer
}

func clientAnswer(w http.ResponseWriter, st clientStep) {
	if st.hangup {
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("no hijacker")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	if st.retryAfter != "" {
		w.Header().Set("Retry-After", st.retryAfter)
	}
	if st.code == "" {
		w.WriteHeader(st.status)
		return
	}
	clientWriteProblem(w, st.status, st.code, "")
}

func TestClientRetryPolicy(t *testing.T) {
	type call func(ctx context.Context, c *Client) error
	getRun := func(ctx context.Context, c *Client) error { _, err := c.GetRun(ctx, "r1"); return err }
	startRun := func(ctx context.Context, c *Client) error {
		_, err := c.StartRun(ctx, "r1", delivery.RunStart{})
		return err
	}
	s500 := clientStep{status: 500, code: delivery.CodeInternal}
	cases := []struct {
		name      string
		call      call
		steps     []clientStep // then 200
		attempts  int
		err       error
		key       bool
		exactWait time.Duration // the one wait, when the answer named it
	}{
		{"GET 500 until attempts run out", getRun, []clientStep{s500, s500, s500, s500}, 3, ErrServer, false, 0},
		{"GET 503 setup_required is final", getRun, []clientStep{{status: 503, code: delivery.CodeSetupRequired}}, 1, ErrSetupRequired, false, 0},
		{"GET 503 unavailable then ok", getRun, []clientStep{{status: 503, code: delivery.CodeUnavailable}}, 2, nil, false, 0},
		{"GET 503 without a problem then ok", getRun, []clientStep{{status: 503}}, 2, nil, false, 0},
		{"GET 429 honours Retry-After", getRun, []clientStep{{status: 429, code: delivery.CodeRateLimited, retryAfter: "7"}}, 2, nil, false, 7 * time.Second},
		{"GET 429 beyond MaxRetryWait is final", getRun, []clientStep{{status: 429, code: delivery.CodeRateLimited, retryAfter: "600"}}, 1, ErrRateLimited, false, 0},
		{"GET 409 request_in_progress then ok", getRun, []clientStep{{status: 409, code: delivery.CodeRequestInProgress}}, 2, nil, false, 0},
		{"GET 409 version_conflict is final", getRun, []clientStep{{status: 409, code: delivery.CodeVersionConflict}}, 1, ErrVersionConflict, false, 0},
		{"GET 404 is final", getRun, []clientStep{{status: 404, code: delivery.CodeNotFound}}, 1, ErrNotFound, false, 0},
		{"GET 400 is final", getRun, []clientStep{{status: 400, code: delivery.CodeValidationFailed}}, 1, ErrValidationFailed, false, 0},
		{"GET 401 is final", getRun, []clientStep{{status: 401, code: delivery.CodeUnauthenticated}}, 1, ErrUnauthenticated, false, 0},
		{"GET dropped connection then ok", getRun, []clientStep{{hangup: true}}, 2, nil, false, 0},
		{"PATCH 502 then ok, with a key", func(ctx context.Context, c *Client) error {
			_, err := c.PatchRun(ctx, "r1", delivery.RunPatch{BaseVersion: 1})
			return err
		}, []clientStep{{status: 502}}, 2, nil, true, 0},
		{"POST startRun 500 until attempts run out", startRun, []clientStep{s500, s500, s500}, 3, ErrServer, true, 0},
		{"POST startRun dropped connection then ok", startRun, []clientStep{{hangup: true}}, 2, nil, true, 0},
		{"POST startRun 403 is final", startRun, []clientStep{{status: 403, code: delivery.CodeInvocationTokenInvalid}}, 1, ErrInvocationTokenInvalid, true, 0},
		{"POST startRun 409 already_started is final", startRun, []clientStep{{status: 409, code: delivery.CodeAlreadyStarted}}, 1, ErrAlreadyStarted, true, 0},
		{"POST ack (exempt) 502 then ok, no key", func(ctx context.Context, c *Client) error {
			_, err := c.AckEvents(ctx, "a1", "alpha", 9)
			return err
		}, []clientStep{{status: 502}}, 2, nil, false, 0},
		{"POST heartbeat (exempt) 504 then ok, no key", func(ctx context.Context, c *Client) error {
			_, err := c.SendHeartbeat(ctx, "a1", delivery.Heartbeat{Status: delivery.HeartbeatOK})
			return err
		}, []clientStep{{status: 504}}, 2, nil, false, 0},
		{"POST createMessage (exempt) 503 then ok, no key", func(ctx context.Context, c *Client) error {
			_, err := c.CreateMessage(ctx, delivery.MessageCreate{ThreadID: "t1", ContentMD: "hi"})
			return err
		}, []clientStep{{status: 503, code: delivery.CodeUnavailable}}, 2, nil, false, 0},
		{"POST outside the API gets a key and retries", func(ctx context.Context, c *Client) error {
			return c.Do(ctx, "POST", "/api/v1/elsewhere", map[string]int{"a": 1}, nil)
		}, []clientStep{{status: 502}}, 2, nil, true, 0},
		{"OPTIONS is never retried", func(ctx context.Context, c *Client) error {
			return c.Do(ctx, "OPTIONS", "/api/v1/delivery/discovery", nil, nil)
		}, []clientStep{{status: 503, code: delivery.CodeUnavailable}}, 1, ErrUnavailable, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
				if n < len(tc.steps) {
					clientAnswer(w, tc.steps[n])
					return
				}
				clientWriteJSON(w, map[string]any{"id": "r1", "version": 2})
			})
			clock := newClientTestClock(false)
			s := DefaultSettings()
			s.RetryMaxAttempts = 3
			c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: clock, Settings: &s})
			err := tc.call(context.Background(), c)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			seen := srv.Seen()
			if len(seen) != tc.attempts {
				t.Fatalf("%d attempts, want %d", len(seen), tc.attempts)
			}
			key := seen[0].Header.Get(delivery.IdempotencyKeyHeader)
			if (key != "") != tc.key {
				t.Fatalf("Idempotency-Key sent = %v, want %v", key != "", tc.key)
			}
			for i, r := range seen {
				if got := r.Header.Get(delivery.IdempotencyKeyHeader); got != key {
					t.Fatalf("attempt %d: Idempotency-Key %q, first was %q", i, got, key)
				}
			}
			sleeps := clock.Sleeps()
			if len(sleeps) != tc.attempts-1 {
				t.Fatalf("slept %v, want %d waits", sleeps, tc.attempts-1)
			}
			for n, d := range sleeps {
				if tc.exactWait > 0 {
					if d != tc.exactWait {
						t.Fatalf("wait %d = %v, want the Retry-After %v", n, d, tc.exactWait)
					}
					continue
				}
				if bound := min(s.RetryBackoffCap, s.RetryBackoffBase<<n); d < 0 || d > bound {
					t.Fatalf("wait %d = %v, want within [0, %v]", n, d, bound)
				}
			}
		})
	}
}

func TestClientIdempotencyKeys(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if n%2 == 0 {
			clientAnswer(w, clientStep{status: 502})
			return
		}
		clientWriteJSON(w, delivery.Run{ID: "r1"})
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: newClientTestClock(false)})
	ctx := context.Background()
	for range 2 {
		if _, err := c.StartRun(ctx, "r1", delivery.RunStart{}); err != nil {
			t.Fatal(err)
		}
	}
	fixed := WithIdempotencyKey(ctx, "outbox-key-1")
	if _, err := c.FinishRun(fixed, "r1", delivery.RunFinish{State: delivery.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	seen := srv.Seen()
	keys := make([]string, len(seen))
	for i, s := range seen {
		keys[i] = s.Header.Get(delivery.IdempotencyKeyHeader)
	}
	if keys[0] != keys[1] || keys[2] != keys[3] {
		t.Fatalf("a retry changed the key: %q", keys)
	}
	if keys[0] == keys[2] {
		t.Fatalf("two calls share a key: %q", keys)
	}
	for _, k := range keys[:4] {
		if len(k) != 36 || k[14] != '7' {
			t.Fatalf("key %q is not a UUIDv7", k)
		}
	}
	if keys[4] != "outbox-key-1" || keys[5] != "outbox-key-1" {
		t.Fatalf("WithIdempotencyKey: keys %q", keys[4:])
	}
}

// TestClientStoredThen502 is the platform storing a write and then
// failing to answer: the retry must carry what makes it the same write,
// so that it is stored once.
func TestClientStoredThen502(t *testing.T) {
	var mu sync.Mutex
	startsByKey := map[string]int{}
	messages := map[string]delivery.Message{}
	starts := 0
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/start"):
			key := r.Header.Get(delivery.IdempotencyKeyHeader)
			if key == "" {
				clientWriteProblem(w, 400, delivery.CodeValidationFailed, "")
				return
			}
			if _, ok := startsByKey[key]; ok {
				clientWriteJSON(w, delivery.Run{ID: "r1", State: delivery.RunRunning, Starts: starts})
				return
			}
			starts++
			startsByKey[key] = starts
			clientAnswer(w, clientStep{status: 502})
		case r.URL.Path == delivery.MessagesPath:
			var m delivery.MessageCreate
			_ = json.Unmarshal(seen.Body, &m)
			if stored, ok := messages[m.ClientMsgID]; ok {
				clientWriteJSON(w, stored)
				return
			}
			messages[m.ClientMsgID] = delivery.Message{ID: fmt.Sprintf("m%d", len(messages)+1), ThreadID: m.ThreadID, ClientMsgID: m.ClientMsgID}
			clientAnswer(w, clientStep{status: 502})
		}
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: newClientTestClock(false)})
	ctx := WithRun(context.Background(), "r1", func() string { return clientTestInvToken })
	run, err := c.StartRun(ctx, "r1", delivery.RunStart{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	gotStarts := starts
	mu.Unlock()
	if gotStarts != 1 || run.Starts != 1 {
		t.Fatalf("starts = %d (run says %d), want 1", gotStarts, run.Starts)
	}
	msg, err := c.CreateMessage(ctx, delivery.MessageCreate{ThreadID: "t1", ContentMD: "done"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	stored := len(messages)
	mu.Unlock()
	if stored != 1 || msg.ID != "m1" {
		t.Fatalf("%d messages stored, answer %+v; want one, m1", stored, msg)
	}
	if got := len(srv.Seen()); got != 4 {
		t.Fatalf("%d requests, want 4", got)
	}
}

func TestClientAttemptTimeout(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if n == 0 {
			<-r.Context().Done() // the first attempt hangs until the client gives up on it
			return
		}
		clientWriteJSON(w, delivery.Run{ID: "r1"})
	})
	s := DefaultSettings()
	// Short enough for the hanging attempt to end soon, with attempts to
	// spare should a busy machine let a later one run out of time too.
	s.HTTPTimeout = 250 * time.Millisecond
	s.RetryMaxAttempts = 10
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: newClientTestClock(false), Settings: &s})
	if _, err := c.GetRun(context.Background(), "r1"); err != nil {
		t.Fatalf("GetRun after a timed-out attempt: %v", err)
	}
	if got := len(srv.Seen()); got < 2 {
		t.Fatalf("%d attempts, want the hanging one and another", got)
	}
}

func TestClientCallerCancelIsFinal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		cancel()
		<-r.Context().Done()
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: newClientTestClock(false)})
	_, err := c.GetRun(ctx, "r1")
	if !errors.Is(err, context.Canceled) || IsTransient(err) {
		t.Fatalf("error = %v, want context.Canceled and not transient", err)
	}
	if got := len(srv.Seen()); got != 1 {
		t.Fatalf("%d attempts after the caller gave up, want 1", got)
	}
}

func TestClientBackoff(t *testing.T) {
	base, limit := 200*time.Millisecond, 10*time.Second
	top := func(n int64) int64 { return n - 1 }
	zero := func(int64) int64 { return 0 }
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, 200 * time.Millisecond}, {1, 400 * time.Millisecond}, {3, 1600 * time.Millisecond}, {6, limit}, {63, limit}, {1000, limit}} {
		if got := clientBackoff(tc.n, base, limit, top); got != tc.want {
			t.Errorf("clientBackoff(%d) at the top = %v, want %v", tc.n, got, tc.want)
		}
		if got := clientBackoff(tc.n, base, limit, zero); got != 0 {
			t.Errorf("clientBackoff(%d) at the bottom = %v, want 0", tc.n, got)
		}
	}
}

func TestClientRouteOf(t *testing.T) {
	for _, r := range delivery.Routes {
		path := strings.NewReplacer("{agent}", "agent%2F1", "{consumer}", "alpha", "{run}", "run-1").Replace(r.Template)
		got, ok := clientRouteOf(r.Method, path)
		if !ok || got.OperationID != r.OperationID {
			t.Errorf("%s %s: route %q, %v; want %s", r.Method, path, got.OperationID, ok, r.OperationID)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", delivery.StartRunPath("r1")},
		{"POST", "/api/v1/delivery/runs//start"},
		{"POST", "/api/v1/delivery/runs/r1/start/again"},
		{"GET", "/api/v1/delivery"},
	} {
		if r, ok := clientRouteOf(tc.method, tc.path); ok {
			t.Errorf("%s %s matched %s", tc.method, tc.path, r.OperationID)
		}
	}
}

func TestClientIsTransient(t *testing.T) {
	pe := func(status int, code string) error {
		return &ProblemError{Status: status, Problem: delivery.Problem{Code: code}}
	}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("other"), false},
		{&clientTransportError{op: "getRun", err: errors.New("connection reset")}, true},
		{pe(500, delivery.CodeInternal), true},
		{pe(502, ""), true},
		{pe(503, delivery.CodeUnavailable), true},
		{pe(503, delivery.CodeSetupRequired), false},
		{pe(429, delivery.CodeRateLimited), true},
		{pe(409, delivery.CodeRequestInProgress), true},
		{pe(409, delivery.CodeAlreadyStarted), false},
		{pe(400, delivery.CodeValidationFailed), false},
		{pe(404, ""), false},
		{fmt.Errorf("wrapped: %w", pe(504, "")), true},
	}
	for _, tc := range cases {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
