package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

const (
	gwTestToken    = "agent-api-token-c0ffee"
	gwTestAgent    = "agent-1"
	gwTestConsumer = "alpha"
	gwTestBackoff  = time.Second            // ReconnectBackoffBase in tests
	gwTestRand     = 0.5                    // every jitter draw
	gwTestJitter   = gwTestBackoff / 2      // the first backoff: gwTestRand * base
	gwTestHBms     = int64(time.Hour / 1e6) // a heartbeat interval no test reaches by accident
)

// gwFakeClock is a manual Clock: Advance moves time and wakes the
// sleepers it passes; waitSleep blocks until one of a given length waits.
type gwFakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*gwSleeper
	changed  chan struct{}
}

type gwSleeper struct {
	until time.Time
	d     time.Duration
	ch    chan struct{}
}

func newGwFakeClock() *gwFakeClock {
	return &gwFakeClock{now: time.Unix(1_800_000_000, 0), changed: make(chan struct{})}
}

func (c *gwFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *gwFakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &gwSleeper{until: c.now.Add(d), d: d, ch: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.notifyLocked()
	c.mu.Unlock()
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.sleepers, s); i >= 0 {
			c.sleepers = slices.Delete(c.sleepers, i, i+1)
			c.notifyLocked()
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *gwFakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Advance moves the clock and wakes, in deadline order, every sleeper
// whose deadline it reaches.
func (c *gwFakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	slices.SortStableFunc(c.sleepers, func(a, b *gwSleeper) int { return a.until.Compare(b.until) })
	keep := c.sleepers[:0]
	for _, s := range c.sleepers {
		if !s.until.After(c.now) {
			close(s.ch)
			continue
		}
		keep = append(keep, s)
	}
	c.sleepers = keep
	c.notifyLocked()
}

// waitSleep blocks until a sleep of exactly d is pending.
func (c *gwFakeClock) waitSleep(t *testing.T, d time.Duration) {
	t.Helper()
	for {
		c.mu.Lock()
		for _, s := range c.sleepers {
			if s.d == d {
				c.mu.Unlock()
				return
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatalf("no sleep of %s", d)
		}
	}
}

// gwTestServer speaks the gateway protocol as package delivery defines
// it; each test scripts its side frame by frame.
type gwTestServer struct {
	srv   *httptest.Server
	conns chan *gwSrvConn
	count atomic.Int32
	clock *gwFakeClock
	key   *dpop.Key

	mu       sync.Mutex
	accepted []*gwSrvConn
}

// closeAll drops the server's ends, so that a client's Close need not
// wait for a closing handshake nobody answers.
func (s *gwTestServer) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.accepted {
		_ = c.ws.CloseNow()
	}
}

type gwSrvConn struct {
	t     *testing.T
	s     *gwTestServer
	ws    *websocket.Conn
	url   string // as the client addressed it
	nonce string
}

func newGwTestServer(t *testing.T, clock *gwFakeClock, key *dpop.Key) *gwTestServer {
	s := &gwTestServer{conns: make(chan *gwSrvConn, 16), clock: clock, key: key}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != delivery.GatewayPath {
			http.NotFound(w, r)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(1 << 20)
		s.count.Add(1)
		s.conns <- &gwSrvConn{s: s, ws: ws, url: "ws://" + r.Host + r.URL.Path}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *gwTestServer) accept(t *testing.T) *gwSrvConn {
	t.Helper()
	select {
	case c := <-s.conns:
		c.t = t
		s.mu.Lock()
		s.accepted = append(s.accepted, c)
		s.mu.Unlock()
		return c
	case <-t.Context().Done():
		t.Fatal("no connection")
		return nil
	}
}

func (c *gwSrvConn) send(op string, d any) {
	c.t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		c.t.Fatal(err)
	}
	frame, _ := json.Marshal(delivery.Frame{Op: op, D: data})
	if err := c.ws.Write(c.t.Context(), websocket.MessageText, frame); err != nil {
		c.t.Fatalf("server write %s: %v", op, err)
	}
}

func (c *gwSrvConn) read() delivery.Frame {
	c.t.Helper()
	_, data, err := c.ws.Read(c.t.Context())
	if err != nil {
		c.t.Fatalf("server read: %v", err)
	}
	var f delivery.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		c.t.Fatalf("server read: %v", err)
	}
	return f
}

// expect reads the next frame, which must be op, into v.
func (c *gwSrvConn) expect(op string, v any) {
	c.t.Helper()
	f := c.read()
	if f.Op != op {
		c.t.Fatalf("frame %q, want %q", f.Op, op)
	}
	if v != nil {
		if err := json.Unmarshal(f.D, v); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *gwSrvConn) hello(heartbeatMS, windowMS int64) {
	c.t.Helper()
	c.nonce = "nonce-" + NewID()
	c.send(delivery.OpHello, delivery.GatewayHello{HeartbeatIntervalMS: heartbeatMS, ResumeWindowMS: windowMS,
		DPoPNonce: c.nonce, ProtocolVersions: []string{delivery.ProtocolVersion}})
}

// checkProof verifies a proof as the platform does: GET on the gateway
// URL, bound to the key, with the hello's nonce and the token's hash.
func (c *gwSrvConn) checkProof(proof, token string) {
	c.t.Helper()
	_, err := dpop.Verify(proof, dpop.Expect{Method: http.MethodGet, URL: c.url, AccessToken: token,
		JKT: c.s.key.Thumbprint(), Nonce: func(n string, _ time.Time) bool { return n == c.nonce }, Now: c.s.clock.Now()})
	if err != nil {
		c.t.Fatalf("proof refused: %v", err)
	}
}

// handshake reads what follows hello: identify (then ready) or resume
// (then resumed), and returns which came.
func (c *gwSrvConn) handshake(sessionID string) (op string, id delivery.GatewayIdentify, res delivery.GatewayResume) {
	c.t.Helper()
	f := c.read()
	switch f.Op {
	case delivery.OpIdentify:
		if err := json.Unmarshal(f.D, &id); err != nil {
			c.t.Fatal(err)
		}
		if id.APIToken != gwTestToken || id.Consumer != gwTestConsumer || id.ProtocolVersion != delivery.ProtocolVersion {
			c.t.Fatalf("identify: %v, protocol %q", id, id.ProtocolVersion)
		}
		c.checkProof(id.DPoP, id.APIToken)
		c.send(delivery.OpReady, delivery.GatewayReady{GatewaySessionID: sessionID,
			Principal: delivery.Principal{ID: gwTestAgent, Kind: "agent"}, Consumer: gwTestConsumer, HeadSeq: 100})
	case delivery.OpResume:
		if err := json.Unmarshal(f.D, &res); err != nil {
			c.t.Fatal(err)
		}
		if res.APIToken != gwTestToken {
			c.t.Fatal("resume without the token")
		}
		c.checkProof(res.DPoP, res.APIToken)
		c.send(delivery.OpResumed, delivery.GatewayResumed{GatewaySessionID: res.GatewaySessionID, Cursor: res.Cursor, HeadSeq: 100})
	default:
		c.t.Fatalf("frame %q after hello", f.Op)
	}
	return f.Op, id, res
}

// expectClose reads until the client's close frame and checks its code.
func (c *gwSrvConn) expectClose(code websocket.StatusCode) string {
	c.t.Helper()
	for {
		_, data, err := c.ws.Read(c.t.Context())
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != code {
				c.t.Fatalf("connection ended with %v, want close %d", err, code)
			}
			return ce.Reason
		}
		var f delivery.Frame
		_ = json.Unmarshal(data, &f)
		if f.Op != delivery.OpHeartbeat && f.Op != delivery.OpAck {
			c.t.Fatalf("frame %q while waiting for close %d", f.Op, code)
		}
	}
}

func (c *gwSrvConn) event(seq int64, typ string) delivery.Event {
	c.t.Helper()
	ev := delivery.Event{ID: fmt.Sprintf("ev-%d", seq), Seq: seq, Type: typ, Payload: json.RawMessage(`{}`),
		InvocationToken: "invocation-token-" + NewID()}
	c.send(delivery.OpEvent, ev)
	return ev
}

// gwSyncBuffer collects log output from several goroutines.
type gwSyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *gwSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *gwSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type gwHarness struct {
	t     *testing.T
	clock *gwFakeClock
	key   *dpop.Key
	srv   *gwTestServer
	logs  *gwSyncBuffer
	opts  *GatewayOptions

	closers []interface{ Close() error } // closed at the end, after the server's ends
}

func newGwHarness(t *testing.T) *gwHarness {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	h := &gwHarness{t: t, clock: newGwFakeClock(), key: key, logs: &gwSyncBuffer{}}
	h.srv = newGwTestServer(t, h.clock, key)
	settings := DefaultSettings()
	settings.ReconnectBackoffBase = gwTestBackoff
	settings.ReconnectBackoffCap = 8 * gwTestBackoff
	settings.WSMaxFrameBytes = 4096
	h.opts = &GatewayOptions{AgentID: gwTestAgent, Consumer: gwTestConsumer, Credentials: Credentials{APIToken: secret.New(gwTestToken), DPoP: key}, Settings: &settings, Clock: h.clock, Rand: func() float64 { return gwTestRand },
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Heartbeat: func() delivery.Heartbeat {
			return delivery.Heartbeat{Status: delivery.HeartbeatOK, Details: delivery.HeartbeatDetails{ActiveRuns: []string{"run-1"}}}
		}}
	t.Cleanup(func() {
		h.srv.closeAll()
		for _, c := range h.closers {
			_ = c.Close()
		}
		for _, s := range []string{gwTestToken, "invocation-token-"} {
			if strings.Contains(h.logs.String(), s) {
				t.Error("a token reached the log")
			}
		}
	})
	return h
}

func (h *gwHarness) info() delivery.GatewayInfo {
	return delivery.GatewayInfo{URL: delivery.GatewayPath, ProtocolVersions: []string{delivery.ProtocolVersion}}
}

// dial connects a Gateway through a first identify with the given
// hello timings and returns both ends.
func (h *gwHarness) dial(heartbeatMS, windowMS int64) (*Gateway, *gwSrvConn) {
	h.t.Helper()
	type result struct {
		g   *Gateway
		err error
	}
	ch := make(chan result, 1)
	go func() {
		g, err := DialGateway(h.t.Context(), h.srv.srv.URL, h.info(), h.opts)
		ch <- result{g, err}
	}()
	sc := h.srv.accept(h.t)
	sc.hello(heartbeatMS, windowMS)
	if op, _, _ := sc.handshake("sess-1"); op != delivery.OpIdentify {
		h.t.Fatalf("first handshake is %s", op)
	}
	r := <-ch
	if r.err != nil {
		h.t.Fatalf("DialGateway: %v", r.err)
	}
	h.closers = append(h.closers, r.g)
	return r.g, sc
}

// reconnect advances the clock by the backoff wait and accepts the
// gateway's next connection, which the test then greets.
func (h *gwHarness) reconnect(wait time.Duration) *gwSrvConn {
	h.t.Helper()
	h.clock.waitSleep(h.t, wait)
	h.clock.Advance(wait)
	return h.srv.accept(h.t)
}

func receive(t *testing.T, g interface {
	Receive(context.Context) ([]delivery.Event, error)
}) []delivery.Event {
	t.Helper()
	evs, err := g.Receive(t.Context())
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return evs
}

// gwWaitQueued blocks until n events wait for Receive.
func gwWaitQueued(t *testing.T, g *Gateway, n int) {
	t.Helper()
	for {
		g.mu.Lock()
		l, ch := len(g.queue), g.changed
		g.mu.Unlock()
		if l >= n {
			return
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatalf("never %d events queued", n)
		}
	}
}

func seqs(evs []delivery.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestGatewayIdentifyEventsAndAcks(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)

	sc.event(1, delivery.EventInvocation)
	sc.event(2, delivery.EventFollowup)
	var got []int64
	for len(got) < 2 {
		got = append(got, seqs(receive(t, g))...)
	}
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("events %v", got)
	}
	if err := g.Ack(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	var ack delivery.GatewayAck
	sc.expect(delivery.OpAck, &ack)
	if ack.Seq != 2 {
		t.Fatalf("ack %d, want 2", ack.Seq)
	}

	// A cursor settles seqs without events, but not past an event the
	// adapter has not acknowledged.
	sc.event(3, delivery.EventInvocation)
	sc.send(delivery.OpCursor, delivery.GatewayCursor{Seq: 6})
	sc.event(7, delivery.EventInvocation)
	got = nil
	for len(got) < 2 {
		got = append(got, seqs(receive(t, g))...)
	}
	if err := g.Ack(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	sc.expect(delivery.OpAck, &ack)
	if ack.Seq != 6 {
		t.Fatalf("ack %d after the cursor, want 6", ack.Seq)
	}
	if err := g.Ack(t.Context(), 1); err != nil { // lower: nothing to send
		t.Fatal(err)
	}
	if err := g.Ack(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	sc.expect(delivery.OpAck, &ack)
	if ack.Seq != 7 {
		t.Fatalf("ack %d, want 7", ack.Seq)
	}

	// An ephemeral event may come without a seq; it blocks no ack.
	sc.send(delivery.OpEvent, delivery.Event{ID: "ac-1", Type: delivery.EventAutocompleteRequested, Payload: json.RawMessage(`{}`)})
	if evs := receive(t, g); len(evs) != 1 || evs[0].Type != delivery.EventAutocompleteRequested {
		t.Fatalf("ephemeral event: %v", evs)
	}
	if err := g.SendAutocompleteResult(t.Context(), "ac-ref", []delivery.SelectOption{{Label: "A", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	var ac delivery.GatewayAutocompleteResult
	sc.expect(delivery.OpAutocompleteResult, &ac)
	if ac.Ref != "ac-ref" || len(ac.Choices) != 1 {
		t.Fatalf("autocomplete result %+v", ac)
	}
	many := make([]delivery.SelectOption, DefaultSettings().AutocompleteMaxChoices+1)
	if err := g.SendAutocompleteResult(t.Context(), "ac-ref", many); err == nil {
		t.Fatal("too many choices were sent")
	}
}

func TestGatewayRedeliveryReplacesQueuedEvent(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	first := sc.event(1, delivery.EventInvocation)
	second := first
	second.InvocationToken = "invocation-token-newer"
	second.Redelivered = true
	sc.send(delivery.OpEvent, second)
	sc.event(2, delivery.EventInvocation)
	gwWaitQueued(t, g, 2)
	got := receive(t, g)
	if len(got) != 2 || got[0].InvocationToken != second.InvocationToken || !got[0].Redelivered {
		t.Fatalf("queued event not replaced by its redelivery: %v", got)
	}
}

func TestGatewayPrincipalMismatchStops(t *testing.T) {
	h := newGwHarness(t)
	ch := make(chan error, 1)
	go func() {
		_, err := DialGateway(t.Context(), h.srv.srv.URL, h.info(), h.opts)
		ch <- err
	}()
	sc := h.srv.accept(t)
	sc.hello(gwTestHBms, 60_000)
	var id delivery.GatewayIdentify
	sc.expect(delivery.OpIdentify, &id)
	sc.send(delivery.OpReady, delivery.GatewayReady{GatewaySessionID: "s", Principal: delivery.Principal{ID: "agent-2"}})
	sc.expectClose(websocket.StatusNormalClosure)
	err := <-ch
	var cr CloseReason
	if !errors.Is(err, ErrGatewayStopped) || !errors.Is(err, ErrWrongPrincipal) || !errors.As(err, &cr) || cr.Code != 1000 {
		t.Fatalf("DialGateway: %v", err)
	}
	if n := h.srv.count.Load(); n != 1 {
		t.Fatalf("%d connections, want no reconnect", n)
	}
}

func TestGatewayHeartbeatCadenceAndMissingAck(t *testing.T) {
	h := newGwHarness(t)
	start := h.clock.Now()
	g, sc := h.dial(10_000, 60_000)

	sc.event(1, delivery.EventInvocation)
	receive(t, g)
	if err := g.Ack(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	sc.expect(delivery.OpAck, nil)

	// The first heartbeat after rand*interval, then every interval (the
	// heartbeat_ack may change it).
	steps := []struct {
		wait     time.Duration
		ackMS    int64
		wantTime time.Duration
	}{
		{5 * time.Second, 20_000, 5 * time.Second},
		{10 * time.Second, 0, 15 * time.Second}, // scheduled before the answer came
		{20 * time.Second, 0, 35 * time.Second},
	}
	for i, s := range steps {
		h.clock.waitSleep(t, s.wait)
		h.clock.Advance(s.wait)
		var hb delivery.GatewayHeartbeat
		sc.expect(delivery.OpHeartbeat, &hb)
		if at := h.clock.Now().Sub(start); at != s.wantTime {
			t.Fatalf("heartbeat %d at %s, want %s", i, at, s.wantTime)
		}
		if hb.LastSeq != 1 || hb.Agent == nil || !slices.Equal(hb.Agent.Details.ActiveRuns, []string{"run-1"}) {
			t.Fatalf("heartbeat %d: %+v", i, hb)
		}
		if i < len(steps)-1 {
			sc.send(delivery.OpHeartbeatAck, delivery.GatewayHeartbeatAck{IntervalMS: s.ackMS})
			// Frames are handled in order: once this event is out, the
			// answer was read (as it would be long before the next tick).
			sc.send(delivery.OpEvent, delivery.Event{ID: NewID(), Type: delivery.EventAutocompleteRequested})
			receive(t, g)
		}
	}

	// The last heartbeat is not answered: at the next tick the gateway
	// closes with 1001 and resumes with its cursor.
	h.clock.waitSleep(t, 20*time.Second)
	h.clock.Advance(20 * time.Second)
	if reason := sc.expectClose(websocket.StatusGoingAway); reason != gwReasonHeartbeat {
		t.Fatalf("close reason %q", reason)
	}
	sc2 := h.reconnect(gwTestJitter)
	sc2.hello(10_000, 60_000)
	op, _, res := sc2.handshake("")
	if op != delivery.OpResume || res.GatewaySessionID != "sess-1" || res.Cursor != 1 {
		t.Fatalf("after a missing heartbeat_ack: %s %v", op, res)
	}
	// Events flow on the resumed session.
	sc2.event(2, delivery.EventInvocation)
	if got := seqs(receive(t, g)); !slices.Equal(got, []int64{2}) {
		t.Fatalf("after resume: %v", got)
	}
}

func TestGatewayCloseCodeReactions(t *testing.T) {
	codes := []int{4010, 4999} // not in the table: reconnect
	for code := range delivery.CloseCodes {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		row, inTable := delivery.CloseCodes[code]
		reason := row.Reason
		if !inTable {
			reason = "unknown"
		}
		if code == delivery.CloseRateLimited {
			reason = "rate_limited retry_after_ms=1234"
		}
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			h := newGwHarness(t)
			g, sc := h.dial(gwTestHBms, 60_000)
			sc.event(1, delivery.EventInvocation)
			receive(t, g)
			if err := g.Ack(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			sc.expect(delivery.OpAck, nil)
			if err := sc.ws.Close(websocket.StatusCode(code), reason); err != nil {
				t.Fatal(err)
			}

			reaction := delivery.ReactionTo(code)
			if reaction == delivery.Stop {
				_, err := g.Receive(t.Context())
				var cr CloseReason
				if !errors.Is(err, ErrGatewayStopped) || !errors.As(err, &cr) || cr.Code != code || cr.Reason != reason {
					t.Fatalf("Receive after close %d: %v", code, err)
				}
				<-g.Done() // the session goroutine has ended: no reconnect can follow
				if got, ok := g.CloseReason(); !ok || got != cr {
					t.Fatalf("CloseReason() = %v, %v", got, ok)
				}
				if n := h.srv.count.Load(); n != 1 {
					t.Fatalf("%d connections after a stop", n)
				}
				if err := g.Ack(t.Context(), 2); !errors.Is(err, ErrGatewayStopped) {
					t.Fatalf("Ack after stop: %v", err)
				}
				return
			}
			wait := gwTestJitter
			if reaction == delivery.Wait {
				wait = 1234 * time.Millisecond
			}
			sc2 := h.reconnect(wait)
			sc2.hello(gwTestHBms, 60_000)
			op, _, res := sc2.handshake("sess-2")
			want := delivery.OpResume
			if reaction == delivery.Identify {
				want = delivery.OpIdentify
			}
			if op != want {
				t.Fatalf("after close %d (reaction %d): %s, want %s", code, reaction, op, want)
			}
			if op == delivery.OpResume && (res.Cursor != 1 || res.GatewaySessionID != "sess-1") {
				t.Fatalf("resume %v", res)
			}
			if op == delivery.OpIdentify {
				// The platform's cursor is behind the adapter's: it learns it.
				var ack delivery.GatewayAck
				sc2.expect(delivery.OpAck, &ack)
				if ack.Seq != 1 {
					t.Fatalf("ack after identify %d", ack.Seq)
				}
			}
		})
	}
}

func TestGatewayRateLimitedWithoutRetryAfterBacksOff(t *testing.T) {
	h := newGwHarness(t)
	_, sc := h.dial(gwTestHBms, 60_000)
	if err := sc.ws.Close(delivery.CloseRateLimited, "rate_limited"); err != nil {
		t.Fatal(err)
	}
	sc2 := h.reconnect(gwTestJitter)
	sc2.hello(gwTestHBms, 60_000)
	if op, _, _ := sc2.handshake(""); op != delivery.OpResume {
		t.Fatalf("after 4008: %s", op)
	}
}

func TestGatewayBackoffGrows(t *testing.T) {
	h := newGwHarness(t)
	h.opts.Rand = func() float64 { return 0.999 }
	_, sc := h.dial(gwTestHBms, 60_000)
	_ = sc.ws.Close(delivery.CloseUnknownError, "unknown_error")
	// Each failed attempt doubles the jitter's range, up to the cap.
	for _, limit := range []time.Duration{1, 2, 4, 8, 8} {
		wait := time.Duration(0.999 * float64(limit*gwTestBackoff))
		sc := h.reconnect(wait)
		_ = sc.ws.Close(delivery.CloseUnknownError, "unknown_error") // fails before hello
	}
	// The server_restart close starts over: a random part of the base.
	sc = h.reconnect(time.Duration(0.999 * float64(8*gwTestBackoff)))
	_ = sc.ws.Close(delivery.CloseServerRestart, "server_restart")
	sc = h.reconnect(time.Duration(0.999 * float64(gwTestBackoff)))
	sc.hello(gwTestHBms, 60_000)
	if op, _, _ := sc.handshake(""); op != delivery.OpResume {
		t.Fatalf("after server_restart: %s", op)
	}
}

func TestGatewayTakeoverStops(t *testing.T) {
	h := newGwHarness(t)
	src, err := NewGatewaySource(h.srv.srv.URL, h.info(), h.opts)
	if err != nil {
		t.Fatal(err)
	}
	h.closers = append(h.closers, src)
	sc := h.srv.accept(t)
	sc.hello(gwTestHBms, 60_000)
	sc.handshake("sess-1")
	sc.event(1, delivery.EventInvocation)
	if got := seqs(receive(t, src)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("events %v", got)
	}
	_ = sc.ws.Close(delivery.CloseTakenOver, "consumer_taken_over")
	_, err = src.Receive(t.Context())
	var cr CloseReason
	if !errors.Is(err, ErrGatewayStopped) || !errors.As(err, &cr) || cr.Code != delivery.CloseTakenOver {
		t.Fatalf("Receive after takeover: %v", err)
	}
	<-src.Gateway().Done()
	if n := h.srv.count.Load(); n != 1 {
		t.Fatalf("%d connections after a takeover", n)
	}
}

func TestGatewayResyncIdentifiesAnew(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	sc.event(1, delivery.EventInvocation)
	receive(t, g)
	_ = g.Ack(t.Context(), 1)
	sc.expect(delivery.OpAck, nil)
	sc.send(delivery.OpResyncRequired, delivery.GatewayResyncRequired{Reason: "cursor_too_old"})
	if reason := sc.expectClose(websocket.StatusNormalClosure); reason != gwReasonResync {
		t.Fatalf("close reason %q", reason)
	}
	sc2 := h.reconnect(gwTestJitter)
	sc2.hello(gwTestHBms, 60_000) // well within the resume window
	if op, _, _ := sc2.handshake("sess-2"); op != delivery.OpIdentify {
		t.Fatalf("after resync_required: %s, want identify", op)
	}
}

func TestGatewayResumeOutsideWindowIdentifies(t *testing.T) {
	h := newGwHarness(t)
	_, sc := h.dial(gwTestHBms, 1_000)
	_ = sc.ws.Close(delivery.CloseGoingAway, "going_away")
	h.clock.waitSleep(t, gwTestJitter)
	h.clock.Advance(2 * time.Second) // past the window while backing off
	sc2 := h.srv.accept(t)
	sc2.hello(gwTestHBms, 1_000)
	if op, _, _ := sc2.handshake("sess-2"); op != delivery.OpIdentify {
		t.Fatalf("outside the resume window: %s, want identify", op)
	}
}

func TestGatewayFrameOverLimitReconnects(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	big := delivery.Event{ID: "big", Seq: 1, Type: delivery.EventInvocation,
		Payload: json.RawMessage(`"` + strings.Repeat("x", 8000) + `"`)}
	sc.send(delivery.OpEvent, big)
	sc.expectClose(websocket.StatusMessageTooBig)
	sc2 := h.reconnect(gwTestJitter)
	sc2.hello(gwTestHBms, 60_000)
	if op, _, res := sc2.handshake(""); op != delivery.OpResume || res.Cursor != 0 {
		t.Fatalf("after a frame over the limit: %s %v", op, res)
	}
	sc2.event(1, delivery.EventInvocation)
	if got := seqs(receive(t, g)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("events %v", got)
	}
}

func TestGatewayProtocolErrorsReconnect(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		code  websocket.StatusCode
	}{
		{"not json", `{"op":`, websocket.StatusInvalidFramePayloadData},
		{"event without seq", `{"op":"event","d":{"id":"e","type":"agent.invocation"}}`, websocket.StatusInvalidFramePayloadData},
		{"event without id", `{"op":"event","d":{"seq":3,"type":"agent.invocation"}}`, websocket.StatusInvalidFramePayloadData},
		{"event not an object", `{"op":"event","d":[1]}`, websocket.StatusInvalidFramePayloadData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGwHarness(t)
			_, sc := h.dial(gwTestHBms, 60_000)
			if err := sc.ws.Write(t.Context(), websocket.MessageText, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			sc.expectClose(tt.code)
			sc2 := h.reconnect(gwTestJitter)
			sc2.hello(gwTestHBms, 60_000)
			if op, _, _ := sc2.handshake(""); op != delivery.OpResume {
				t.Fatalf("after a protocol error: %s", op)
			}
		})
	}
}

func TestGatewayRunUpdate(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	runToken := secret.New("invocation-token-run")
	ops := []delivery.PatchOp{{Op: "replace", Path: "/status_line", Value: "working"}}
	send := func() chan error {
		ch := make(chan error, 1)
		go func() { ch <- g.SendRunUpdate(t.Context(), "run-1", runToken, 4, ops) }()
		return ch
	}

	{ // a refusal comes back to the sender of its ref
		ch := send()
		var u delivery.GatewayRunUpdate
		sc.expect(delivery.OpRunUpdate, &u)
		if u.Ref == "" || u.RunID != "run-1" || u.InvocationToken != runToken.Reveal() || u.BaseVersion != 4 || len(u.Ops) != 1 {
			t.Fatalf("run.update %v", u)
		}
		sc.send(delivery.OpError, delivery.GatewayError{Op: delivery.OpRunUpdate, Ref: "another", Code: "x", Status: 400})
		sc.send(delivery.OpError, delivery.GatewayError{Op: delivery.OpRunUpdate, Ref: u.Ref, Code: delivery.CodeBaseVersionConflict,
			Status: 409, Detail: "the run moved on", Current: json.RawMessage(`{"id":"run-1","version":7,"state":"running"}`)})
		err := <-ch
		var oe *GatewayOpError
		if !errors.As(err, &oe) || oe.Code != delivery.CodeBaseVersionConflict || oe.Status != 409 || oe.Ref != u.Ref ||
			oe.Op != delivery.OpRunUpdate || oe.Current == nil || oe.Current.Version != 7 {
			t.Fatalf("SendRunUpdate: %v", err)
		}
	}
	{ // no refusal within the window is success
		ch := send()
		sc.expect(delivery.OpRunUpdate, nil)
		h.clock.waitSleep(t, DefaultRunUpdateErrorWait)
		h.clock.Advance(DefaultRunUpdateErrorWait)
		if err := <-ch; err != nil {
			t.Fatalf("SendRunUpdate: %v", err)
		}
	}
	{ // a value JSON cannot carry is refused before anything is sent
		bad := []delivery.PatchOp{{Op: "replace", Path: "/status_line", Value: make(chan int)}}
		if err := g.SendRunUpdate(t.Context(), "run-1", runToken, 5, bad); err == nil || errors.Is(err, ErrGatewayNotConnected) {
			t.Fatalf("SendRunUpdate with an unencodable value: %v", err)
		}
	}
	{ // the connection ends within the window
		ch := send()
		sc.expect(delivery.OpRunUpdate, nil)
		_ = sc.ws.Close(delivery.CloseUnknownError, "unknown_error")
		if err := <-ch; !errors.Is(err, ErrRunUpdateUnconfirmed) {
			t.Fatalf("SendRunUpdate: %v", err)
		}
		h.clock.waitSleep(t, gwTestJitter) // backing off: no session
		if err := g.SendRunUpdate(t.Context(), "run-1", runToken, 5, ops); !errors.Is(err, ErrGatewayNotConnected) {
			t.Fatalf("SendRunUpdate while disconnected: %v", err)
		}
	}
}

func TestGatewayCloseStops(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Close() }()
	sc.expectClose(websocket.StatusNormalClosure)
	<-done
	_, err := g.Receive(t.Context())
	var cr CloseReason
	if !errors.Is(err, ErrGatewayStopped) || !errors.As(err, &cr) || cr.Code != 1000 {
		t.Fatalf("Receive after Close: %v", err)
	}
	if err := g.SendAutocompleteResult(t.Context(), "r", nil); !errors.Is(err, ErrGatewayStopped) {
		t.Fatalf("send after Close: %v", err)
	}
}

func TestGatewayReceiveHonoursContext(t *testing.T) {
	h := newGwHarness(t)
	g, _ := h.dial(gwTestHBms, 60_000)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := g.Receive(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive: %v", err)
	}
}

func TestGatewayUpgradeRefusedStops(t *testing.T) {
	h := newGwHarness(t)
	info := h.info()
	info.URL = "/nowhere"
	_, err := DialGateway(t.Context(), h.srv.srv.URL, info, h.opts)
	if !errors.Is(err, ErrGatewayStopped) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("DialGateway to a 404: %v", err)
	}
}

func TestGatewayURL(t *testing.T) {
	tests := []struct {
		base, gw, want string
	}{
		{"http://127.0.0.1:8080", delivery.GatewayPath, "ws://127.0.0.1:8080" + delivery.GatewayPath},
		{"http://localhost:8080/", "gw", "ws://localhost:8080/gw"},
		{"http://[::1]:9", "/g", "ws://[::1]:9/g"},
		{"https://platform.example.com/base/", delivery.GatewayPath, "wss://platform.example.com" + delivery.GatewayPath},
		{"https://platform.example.com", "wss://gw.example.com/g#frag", "wss://gw.example.com/g"},
		{"https://platform.example.com", "https://gw.example.com/g", "wss://gw.example.com/g"},
		{"http://platform.example.com", "/g", ""},
		{"https://platform.example.com", "ws://gw.example.com/g", ""},
		{"https://platform.example.com", "ftp://gw.example.com/g", ""},
		{"https://platform.example.com", "wss://user:pw@gw.example.com/g", ""},
		{"/relative", "/g", ""},
		{"https://platform.example.com", "", ""},
	}
	for _, tt := range tests {
		got, err := gwURL(tt.base, tt.gw)
		if (err != nil) != (tt.want == "") || got != tt.want {
			t.Errorf("gwURL(%q, %q) = %q, %v; want %q", tt.base, tt.gw, got, err, tt.want)
		}
	}
}

func TestGatewayOptionsRequired(t *testing.T) {
	good := GatewayOptions{AgentID: "a", Consumer: "c", Credentials: Credentials{APIToken: secret.New("t")}}
	tests := map[string]func(*GatewayOptions){
		"agent":    func(o *GatewayOptions) { o.AgentID = "" },
		"consumer": func(o *GatewayOptions) { o.Consumer = "" },
		"token":    func(o *GatewayOptions) { o.Credentials.APIToken = secret.Value{} },
	}
	for name, mutate := range tests {
		o := good
		mutate(&o)
		if _, err := NewGatewaySource("http://127.0.0.1:1", delivery.GatewayInfo{URL: "/g"}, &o); err == nil {
			t.Errorf("%s missing: accepted", name)
		}
	}
	if _, err := NewGatewaySource("http://127.0.0.1:1", delivery.GatewayInfo{URL: "/g"}, nil); err == nil {
		t.Error("nil options accepted")
	}
	if _, err := NewGatewaySource("http://127.0.0.1:1", delivery.GatewayInfo{URL: "/g", ProtocolVersions: []string{"9"}}, &good); err == nil {
		t.Error("a platform without our protocol version accepted")
	}
}

func TestGatewayRetryAfter(t *testing.T) {
	tests := []struct {
		reason string
		want   time.Duration
		ok     bool
	}{
		{"rate_limited retry_after_ms=1500", 1500 * time.Millisecond, true},
		{"retry_after_ms=0", 0, true},
		{"rate_limited retry_after_ms=250 more", 250 * time.Millisecond, true},
		{"rate_limited retry_after_ms=99999999999999", gwMaxRetryAfter, true},
		{"rate_limited retry_after_ms=", 0, false},
		{"rate_limited retry_after_ms=-5", 0, false},
		{"rate_limited retry_after_ms=999999999999999999999", 0, false},
		{"rate_limited", 0, false},
	}
	for _, tt := range tests {
		if got, ok := gwRetryAfter(tt.reason); got != tt.want || ok != tt.ok {
			t.Errorf("gwRetryAfter(%q) = %s, %v; want %s, %v", tt.reason, got, ok, tt.want, tt.ok)
		}
	}
}

func TestGatewayPrintsNoSecrets(t *testing.T) {
	h := newGwHarness(t)
	g, sc := h.dial(gwTestHBms, 60_000)
	src := &GatewaySource{g: g}
	ch := make(chan error, 1)
	go func() { ch <- g.SendRunUpdate(t.Context(), "run-1", secret.New("invocation-token-x"), 1, nil) }()
	var u delivery.GatewayRunUpdate
	sc.expect(delivery.OpRunUpdate, &u)
	sc.send(delivery.OpError, delivery.GatewayError{Op: delivery.OpRunUpdate, Ref: u.Ref, Code: "validation_failed", Status: 400})
	opErr := <-ch
	opts := GatewayOptions{AgentID: gwTestAgent, Consumer: gwTestConsumer, Credentials: Credentials{APIToken: secret.New(gwTestToken), DPoP: h.key}}
	for _, v := range []any{g, src, &opts, opts, opErr, CloseReason{Code: 4004, Reason: "authentication_failed"}} {
		s := fmt.Sprintf("%v %+v %#v %s", v, v, v, v)
		if strings.Contains(s, gwTestToken) || strings.Contains(s, "invocation-token-x") {
			t.Fatalf("%T printed a token: %s", v, s)
		}
	}
}

// FuzzGatewayFrame feeds arbitrary server frames to a ready session:
// none may panic, and no event may come out without a seq (but an
// ephemeral one) or without an id and type.
func FuzzGatewayFrame(f *testing.F) {
	for _, s := range []string{
		`{"op":"event","d":{"id":"e1","seq":1,"type":"agent.invocation","payload":{},"invocation_token":"t"}}`,
		`{"op":"event","d":{"id":"e2","seq":0,"type":"command.autocomplete_requested"}}`,
		`{"op":"event","d":{"id":"e3","seq":-1,"type":"agent.invocation"}}`,
		`{"op":"cursor","d":{"seq":9}}`,
		`{"op":"heartbeat_ack","d":{"interval_ms":-1}}`,
		`{"op":"error","d":{"op":"run.update","ref":"r","code":"base_version_conflict","status":409,"current":{"version":"x"}}}`,
		`{"op":"resync_required","d":{"reason":"x"}}`,
		`{"op":"catchup_complete","d":{"head_seq":3}}`,
		`{"op":"event","d":null}`,
		`{"op":"hello"}`,
		`[]`, `null`, `{"op":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := newGateway("http://127.0.0.1:1", delivery.GatewayInfo{URL: "/g"},
			&GatewayOptions{AgentID: "a", Consumer: "c", Credentials: Credentials{APIToken: secret.New("t")}, Clock: newGwFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		g.gwDispatch(context.Background(), nil, websocket.MessageText, data)
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, ev := range g.queue {
			if ev.ID == "" || ev.Type == "" || ev.Seq < 0 || (ev.Seq == 0 && !delivery.Ephemeral(ev.Type)) {
				t.Fatalf("delivered %v", ev)
			}
		}
		if s := g.gwSettledLocked(); s < 0 {
			t.Fatalf("settled %d", s)
		}
	})
}
