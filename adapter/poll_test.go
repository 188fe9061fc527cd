package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

func pollEvents(seqs ...int64) delivery.EventPage {
	p := delivery.EventPage{Events: []delivery.Event{}}
	for _, s := range seqs {
		p.Events = append(p.Events, delivery.Event{ID: fmt.Sprintf("e%d", s), Seq: s, Type: delivery.EventInvocation})
		p.HeadSeq = s
	}
	return p
}

func pollSeqs(evs []delivery.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func newPollClient(t *testing.T, url string, clock Clock, logs *clientLogBuffer) *Client {
	s := DefaultSettings()
	s.RetryMaxAttempts = 1 // the source's own backoff is under test
	opts := &ClientOptions{Clock: clock, Settings: &s}
	if logs != nil {
		opts.Logger = logs.logger()
	}
	return newClientForTest(t, url, clientBearer(), opts)
}

func TestPollCadence(t *testing.T) {
	script := []any{
		pollEvents(), pollEvents(), pollEvents(1, 2), pollEvents(3), pollEvents(),
		clientStep{status: 503, code: delivery.CodeUnavailable}, pollEvents(4),
	}
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		switch a := script[n].(type) {
		case clientStep:
			clientAnswer(w, a)
		default:
			clientWriteJSON(w, a)
		}
	})
	clock := newClientTestClock(false)
	c := newPollClient(t, srv.URL, clock, nil)
	src, err := NewPollingSource(c, "agent-1", "alpha", &PollingOptions{Limit: 50, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	want := [][]int64{{1, 2}, {3}, {4}}
	for i, w := range want {
		evs, err := src.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive %d: %v", i, err)
		}
		if got := pollSeqs(evs); !slices.Equal(got, w) {
			t.Fatalf("Receive %d = %v, want %v", i, got, w)
		}
	}
	s := c.settings
	sleeps := clock.Sleeps()
	// Two empty pages, an event page, another at once, an empty page, a
	// failure (backoff), and the last page.
	if len(sleeps) != 4 || sleeps[0] != s.PollInterval || sleeps[1] != s.PollInterval || sleeps[2] != s.PollInterval ||
		sleeps[3] < 0 || sleeps[3] > s.ReconnectBackoffBase {
		t.Fatalf("waits %v, want [%v %v %v <=%v]", sleeps, s.PollInterval, s.PollInterval, s.PollInterval, s.ReconnectBackoffBase)
	}
	for i, r := range srv.Seen() {
		if r.Method != "GET" || r.Path != delivery.ConsumerEventsPath("agent-1", "alpha") || r.Query != "limit=50&wait=5" {
			t.Fatalf("poll %d: %s %s?%s", i, r.Method, r.Path, r.Query)
		}
	}
}

func TestPollBackoffGrowsAndHonoursRetryAfter(t *testing.T) {
	fail := clientStep{status: 502}
	script := []clientStep{fail, fail, fail, {status: 429, code: delivery.CodeRateLimited, retryAfter: "30"}}
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if n < len(script) {
			clientAnswer(w, script[n])
			return
		}
		clientWriteJSON(w, pollEvents(1))
	})
	clock := newClientTestClock(false)
	var logs clientLogBuffer
	c := newPollClient(t, srv.URL, clock, &logs)
	src, err := NewPollingSource(c, "agent-1", "alpha", &PollingOptions{Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := c.settings
	sleeps := clock.Sleeps()
	if len(sleeps) != 4 || sleeps[3] != 30*time.Second {
		t.Fatalf("waits %v, want 4 ending with the Retry-After 30s", sleeps)
	}
	for n, d := range sleeps[:3] {
		if bound := min(s.ReconnectBackoffCap, s.ReconnectBackoffBase<<n); d < 0 || d > bound {
			t.Fatalf("wait %d = %v, want within [0, %v]", n, d, bound)
		}
	}
	if got := strings.Count(logs.String(), "polling failed"); got != 4 {
		t.Fatalf("%d failures logged, want 4", got)
	}
	if srv.Seen()[0].Query != "limit=100" {
		t.Fatalf("a source without long polling sent %q", srv.Seen()[0].Query)
	}
}

func TestPollPermanentRefusalEndsReceive(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		clientWriteProblem(w, 401, delivery.CodeUnauthenticated, "")
	})
	clock := newClientTestClock(false)
	src, err := NewPollingSource(newPollClient(t, srv.URL, clock, nil), "agent-1", "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Receive(context.Background()); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Receive = %v, want ErrUnauthenticated", err)
	}
	if len(clock.Sleeps()) != 0 || len(srv.Seen()) != 1 {
		t.Fatalf("%d polls, waits %v: a refusal for good is not retried", len(srv.Seen()), clock.Sleeps())
	}
}

func TestPollAck(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		clientWriteJSON(w, delivery.ConsumerState{Consumer: "alpha"})
	})
	src, err := NewPollingSource(newPollClient(t, srv.URL, newClientTestClock(false), nil), "agent-1", "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, seq := range []int64{3, 2, 3, 5} {
		if err := src.Ack(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	for _, r := range srv.Seen() {
		if r.Method != "POST" || r.Path != delivery.ConsumerAckPath("agent-1", "alpha") {
			t.Fatalf("%s %s", r.Method, r.Path)
		}
		var a delivery.ConsumerAck
		if err := json.Unmarshal(r.Body, &a); err != nil {
			t.Fatal(err)
		}
		got = append(got, a.Seq)
	}
	if !slices.Equal(got, []int64{3, 5}) {
		t.Fatalf("acks sent %v, want [3 5]: an ack at or below the last is not sent", got)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Ack(ctx, 9); !errors.Is(err, ErrSourceClosed) {
		t.Fatalf("Ack after Close = %v", err)
	}
	if _, err := src.Receive(ctx); !errors.Is(err, ErrSourceClosed) {
		t.Fatalf("Receive after Close = %v", err)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestPollHeartbeat(t *testing.T) {
	hbs := make(chan delivery.Heartbeat, 10)
	acks := []any{delivery.HeartbeatAck{IntervalMS: 5000}, delivery.HeartbeatAck{IntervalMS: 10}, clientStep{status: 500}}
	var hbMu sync.Mutex
	hbN := 0
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/events"):
			<-r.Context().Done() // a long poll that never finds an event
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			var hb delivery.Heartbeat
			_ = json.Unmarshal(seen.Body, &hb)
			hbMu.Lock()
			a := acks[min(hbN, len(acks)-1)]
			hbN++
			hbMu.Unlock()
			if st, ok := a.(clientStep); ok {
				clientAnswer(w, st)
			} else {
				clientWriteJSON(w, a)
			}
			hbs <- hb
		}
	})
	clock := newClientTestClock(true)
	var logs clientLogBuffer
	c := newPollClient(t, srv.URL, clock, &logs)
	src, err := NewPollingSource(c, "agent-1", "alpha", &PollingOptions{HeartbeatInterval: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan error, 1)
	go func() {
		_, err := src.Receive(context.Background())
		received <- err
	}()
	// The adapter sets the heartbeat once it knows its runs.
	src.SetHeartbeat(func() delivery.Heartbeat {
		return delivery.Heartbeat{Status: delivery.HeartbeatOK, Details: delivery.HeartbeatDetails{ActiveRuns: []string{"r1"}}}
	})
	if hb := <-hbs; hb.Status != delivery.HeartbeatOK || !slices.Equal(hb.Details.ActiveRuns, []string{"r1"}) {
		t.Fatalf("heartbeat %+v", hb)
	}
	if d := clock.waitSleeper(t); d != 5*time.Second {
		t.Fatalf("next heartbeat after %v, want the 5s the platform named", d)
	}
	clock.Advance(5 * time.Second)
	<-hbs
	if d := clock.waitSleeper(t); d != MinHeartbeatInterval {
		t.Fatalf("next heartbeat after %v, want the floor %v", d, MinHeartbeatInterval)
	}
	clock.Advance(MinHeartbeatInterval)
	<-hbs // answered 500: logged, and the next still comes on time
	if d := clock.waitSleeper(t); d != MinHeartbeatInterval {
		t.Fatalf("after a failed heartbeat the next comes after %v", d)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-received; !errors.Is(err, ErrSourceClosed) {
		t.Fatalf("Receive ended with %v, want ErrSourceClosed", err)
	}
	if !strings.Contains(logs.String(), "heartbeat failed") {
		t.Fatalf("the failed heartbeat was not logged:\n%s", logs.String())
	}
	for _, r := range srv.Seen() {
		if strings.HasSuffix(r.Path, "/heartbeat") && (r.Method != "POST" || r.Path != delivery.HeartbeatPath("agent-1")) {
			t.Fatalf("heartbeat sent as %s %s", r.Method, r.Path)
		}
	}
}

func TestPollReceiveEndsWithContext(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		clientWriteJSON(w, pollEvents())
	})
	clock := newClientTestClock(true) // the wait after the empty page blocks
	src, err := NewPollingSource(newPollClient(t, srv.URL, clock, nil), "agent-1", "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := src.Receive(ctx)
		done <- err
	}()
	clock.waitSleeper(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive = %v, want context.Canceled", err)
	}
}

func TestPollNewPollingSourceRefuses(t *testing.T) {
	c := newClientForTest(t, "http://127.0.0.1:1", clientBearer(), nil)
	for _, tc := range []struct {
		c               *Client
		agent, consumer string
	}{{nil, "a", "b"}, {c, "", "b"}, {c, "a", ""}} {
		if _, err := NewPollingSource(tc.c, tc.agent, tc.consumer, nil); err == nil {
			t.Errorf("NewPollingSource(%v, %q, %q) succeeded", tc.c, tc.agent, tc.consumer)
		}
	}
}
