package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// gwGuard bounds a wait that must end at once: it fails a hung test
// instead of leaving it to the binary's timeout; nothing asserts on it.
const gwGuard = time.Minute

// newGWHarness is the harness with heartbeats an hour apart and a sweep
// that runs only when a test calls it, so that every deadline passes
// when the test moves the clock; the gateway is shut down first at the
// test's end.
func newGWHarness(t testing.TB, o *Options) *harness {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = time.Hour
	}
	if opts.GatewaySweepEvery == 0 {
		opts.GatewaySweepEvery = 24 * time.Hour
	}
	h := newHarness(t, &opts)
	t.Cleanup(func() { _ = h.svc.Shutdown(context.Background()) })
	<-h.st.watched // the service hears of appended events from here on
	return h
}

// gwEnds hears how the gateway's connections end: decided when the end
// is decided, ended when the connection is gone.
type gwEnds struct {
	decided, ended chan gwEnd
}

func watchGateway(h *harness) *gwEnds {
	w := &gwEnds{decided: make(chan gwEnd, 1024), ended: make(chan gwEnd, 1024)}
	h.svc.gw.mu.Lock()
	h.svc.gw.observe = func(_ *gwConn, e gwEnd, final bool) {
		ch := w.decided
		if final {
			ch = w.ended
		}
		select {
		case ch <- e:
		default:
		}
	}
	h.svc.gw.mu.Unlock()
	return w
}

// next waits for the next end on ch.
func (w *gwEnds) next(t testing.TB, ch chan gwEnd) gwEnd {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(gwGuard):
		t.Fatal("no connection ended")
		return gwEnd{}
	}
}

func (h *harness) gwURL() string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + delivery.GatewayPath
}

// gwClock is the adapter's clock in these tests: the service's time,
// and real waits (the intervals the tests set are never reached).
type gwClock struct{ c *fakeClock }

func (k gwClock) Now() time.Time { return k.c.Now() }

func (gwClock) Sleep(ctx context.Context, d time.Duration) error {
	return adapter.SystemClock{}.Sleep(ctx, d)
}

// gwOptions are the real adapter's options for a: no jitter, the
// service's clock, and a run.update error window no test reaches.
func (h *harness) gwOptions(a *agent, consumer string) *adapter.GatewayOptions {
	return &adapter.GatewayOptions{AgentID: a.id, Consumer: consumer,
		Credentials: adapter.Credentials{APIToken: secret.New(a.token), DPoP: a.key},
		Clock:       gwClock{h.clock}, Rand: func() float64 { return 0 }, RunUpdateErrorWait: time.Hour}
}

// dialGateway connects the real adapter until ready.
func (h *harness) dialGateway(t testing.TB, a *agent, consumer string) *adapter.Gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), gwGuard)
	defer cancel()
	g, err := adapter.DialGateway(ctx, h.srv.URL, h.svc.Discovery().Gateway, h.gwOptions(a, consumer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// receive takes events from the adapter until it has n.
func receive(t testing.TB, src interface {
	Receive(context.Context) ([]delivery.Event, error)
}, n int) []delivery.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), gwGuard)
	defer cancel()
	var got []delivery.Event
	for len(got) < n {
		evs, err := src.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, evs...)
	}
	if len(got) != n {
		t.Fatalf("%d events, want %d: %v", len(got), n, got)
	}
	return got
}

// gwRaw is a WebSocket client that speaks the protocol frame by frame.
type gwRaw struct {
	t     testing.TB
	h     *harness
	ws    *websocket.Conn
	hello delivery.GatewayHello
}

func (h *harness) dialRaw(t testing.TB) *gwRaw {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), gwGuard)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.gwURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	r := &gwRaw{t: t, h: h, ws: ws}
	r.expect(delivery.OpHello, &r.hello)
	return r
}

func (r *gwRaw) send(op string, d any) {
	r.t.Helper()
	f, err := gwEncode(op, d)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sendRaw(websocket.MessageText, f)
}

func (r *gwRaw) sendRaw(typ websocket.MessageType, data []byte) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gwGuard)
	defer cancel()
	if err := r.ws.Write(ctx, typ, data); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gwRaw) next() delivery.Frame {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gwGuard)
	defer cancel()
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var f delivery.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		r.t.Fatalf("frame %s: %v", data, err)
	}
	return f
}

func (r *gwRaw) expect(op string, v any) {
	r.t.Helper()
	f := r.next()
	if f.Op != op {
		r.t.Fatalf("got %s %s, want %s", f.Op, f.D, op)
	}
	if v != nil {
		if err := json.Unmarshal(f.D, v); err != nil {
			r.t.Fatalf("%s %s: %v", op, f.D, err)
		}
	}
}

// closed reads (and drops) frames until the platform's close, and
// returns its code and reason.
func (r *gwRaw) closed() (int, string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gwGuard)
	defer cancel()
	for {
		_, _, err := r.ws.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			r.t.Fatalf("the connection ended without a close frame: %v", err)
		}
		return int(ce.Code), ce.Reason
	}
}

func (r *gwRaw) proof(a *agent, url, nonce string) string {
	r.t.Helper()
	if a.key == nil {
		return ""
	}
	p, err := a.key.Proof(dpop.Claims{Method: http.MethodGet, URL: url, AccessToken: a.token, Nonce: nonce, IssuedAt: r.h.clock.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

func (r *gwRaw) sendIdentify(a *agent, consumer string) {
	r.t.Helper()
	r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: r.proof(a, r.h.gwURL(), r.hello.DPoPNonce),
		Consumer: consumer, ProtocolVersion: delivery.ProtocolVersion})
}

func (r *gwRaw) identify(a *agent, consumer string) delivery.GatewayReady {
	r.t.Helper()
	r.sendIdentify(a, consumer)
	var ready delivery.GatewayReady
	r.expect(delivery.OpReady, &ready)
	return ready
}

func (r *gwRaw) sendResume(a *agent, session string, cursor int64) {
	r.t.Helper()
	r.send(delivery.OpResume, delivery.GatewayResume{GatewaySessionID: session, APIToken: a.token,
		DPoP: r.proof(a, r.h.gwURL(), r.hello.DPoPNonce), Cursor: cursor})
}

// events reads n event frames, and the catchup_complete among them when
// one comes (its head, else -1); any other frame fails.
func (r *gwRaw) events(n int) ([]delivery.Event, int64) {
	r.t.Helper()
	var evs []delivery.Event
	catchup := int64(-1)
	for len(evs) < n {
		f := r.next()
		switch f.Op {
		case delivery.OpEvent:
			var e delivery.Event
			if err := json.Unmarshal(f.D, &e); err != nil {
				r.t.Fatal(err)
			}
			evs = append(evs, e)
		case delivery.OpCatchupComplete:
			var cc delivery.GatewayCatchupComplete
			_ = json.Unmarshal(f.D, &cc)
			catchup = cc.HeadSeq
		default:
			r.t.Fatalf("frame %s %s among the events", f.Op, f.D)
		}
	}
	return evs, catchup
}

// sync sends a heartbeat and reads up to its answer: every frame the
// agent sent before was handled. It returns the frames read before the
// answer.
func (r *gwRaw) sync() []delivery.Frame {
	r.t.Helper()
	r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{})
	var before []delivery.Frame
	for {
		f := r.next()
		if f.Op == delivery.OpHeartbeatAck {
			return before
		}
		before = append(before, f)
	}
}

// appendEvents stores n events of type typ with a payload of about size
// bytes for the harness's agent, as Offer would (without runs).
func (h *harness) appendEvents(t testing.TB, n int, typ string, size int) {
	t.Helper()
	events := make([]delivery.StoredEvent, 0, n)
	pad := strings.Repeat("x", size)
	for i := range n {
		run := "run-" + strconv.Itoa(i)
		id := a2a.NewID()
		e := delivery.StoredEvent{AgentID: h.inst.ID, TenantID: testTenant, ID: id, Type: typ}
		if typ == delivery.EventInvocation {
			e.RunID = run
			e.Payload, _ = json.Marshal(delivery.InvocationPayload{TriggerKind: delivery.TriggerMessage, RunID: run, ThreadID: run, MessageID: run + "/1"})
			e.Grant = &delivery.Claims{Issuer: h.srv.URL, Audience: h.inst.ID, Subject: "alex", RunID: run, ThreadID: run, EventID: id,
				MessageID: run + "/1", BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolChat}
		} else {
			e.Payload, _ = json.Marshal(map[string]any{"version": i, "pad": pad})
		}
		events = append(events, e)
	}
	if _, err := h.st.AppendEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) consumer(t testing.TB, name string) delivery.Consumer {
	t.Helper()
	c, err := h.st.GetConsumer(t.Context(), h.inst.ID, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGatewayDelivers: the real adapter identifies (with a bearer token,
// and with a DPoP-bound one and hello's nonce), is sent each event with
// a fresh token recorded as its run's newest, and its ack moves the
// consumer.
func TestGatewayDelivers(t *testing.T) {
	for _, bound := range []bool{false, true} {
		t.Run("bound="+strconv.FormatBool(bound), func(t *testing.T) {
			h := newGWHarness(t, nil)
			ends := watchGateway(h)
			a := h.agent(h.inst, bound)
			g := h.dialGateway(t, a, "alpha")
			runs := []string{h.trigger(h.inst, "one").ID, h.trigger(h.inst, "two").ID}
			evs := receive(t, g, 2)
			for i, e := range evs {
				if e.Type != delivery.EventInvocation || e.Seq != int64(i+1) || e.Redelivered || e.InvocationToken == "" {
					t.Fatalf("event %d: %v", i, e)
				}
				c, err := h.svc.verifyToken(t.Context(), e.InvocationToken, h.inst.ID, runs[i])
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if rec, err := h.st.NewestToken(t.Context(), runs[i]); err != nil || rec.JTI != c.ID || rec.Consumer != "alpha" {
					t.Errorf("newest token of run %d: %+v, %v", i, rec, err)
				}
			}
			if err := g.Ack(t.Context(), 2); err != nil {
				t.Fatal(err)
			}
			_ = g.Close() // after the ack frame: the platform reads it first
			if e := ends.next(t, ends.ended); e.code != delivery.CloseNormal || e.by() != "agent" {
				t.Fatalf("end %+v", e)
			}
			if c := h.consumer(t, "alpha"); c.AckedSeq != 2 || c.SentSeq != 2 {
				t.Errorf("consumer %+v", c)
			}
		})
	}
}

// TestGatewayCatchup: a session gets every event after its consumer's
// acknowledged sequence, then catchup_complete, then new events; an
// acknowledged event is not sent again.
func TestGatewayCatchup(t *testing.T) {
	h := newGWHarness(t, nil)
	a := h.agent(h.inst, true)
	a.open("alpha")
	for i := range 3 {
		h.trigger(h.inst, "run "+strconv.Itoa(i))
	}
	r := h.dialRaw(t)
	ready := r.identify(a, "alpha")
	if ready.Principal != (delivery.Principal{ID: h.inst.ID, Kind: "agent"}) || ready.Consumer != "alpha" || ready.AckedSeq != 0 ||
		ready.HeadSeq != 3 || ready.HeartbeatIntervalMS != time.Hour.Milliseconds() || ready.ResumeWindowMS != DefaultResumeWindow.Milliseconds() ||
		ready.GatewaySessionID == "" {
		t.Fatalf("ready %+v", ready)
	}
	if r.hello.ResumeWindowMS != DefaultResumeWindow.Milliseconds() || r.hello.DPoPNonce == "" ||
		len(r.hello.ProtocolVersions) != 1 || r.hello.ProtocolVersions[0] != "1" {
		t.Fatalf("hello %+v", r.hello)
	}
	evs, catchup := r.events(3)
	if catchup != -1 {
		t.Fatalf("catchup_complete among the events, at %d", catchup)
	}
	var cc delivery.GatewayCatchupComplete
	if r.expect(delivery.OpCatchupComplete, &cc); cc.HeadSeq != 3 {
		t.Fatalf("catchup_complete %+v", cc)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.InvocationToken == "" {
			t.Fatalf("event %v", e)
		}
	}
	r.send(delivery.OpAck, delivery.GatewayAck{Seq: 3})
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("frames %v", extra)
	}
	if c := h.consumer(t, "alpha"); c.AckedSeq != 3 {
		t.Fatalf("consumer %+v", c)
	}
	// Acknowledged: not sent again when its time would have come.
	h.clock.Advance(DefaultAckTimeout)
	h.svc.gw.sweep()
	h.trigger(h.inst, "four")
	if evs, catchup := r.events(1); evs[0].Seq != 4 || evs[0].Redelivered || catchup != -1 {
		t.Fatalf("events %v, catchup %d", evs, catchup)
	}
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("frames %v", extra)
	}
}

// TestGatewayRedelivers: an event not acknowledged within the ack
// timeout comes again over the gateway, redelivered, with a fresh token
// that is now its run's newest.
func TestGatewayRedelivers(t *testing.T) {
	h := newGWHarness(t, nil)
	a := h.agent(h.inst, false)
	g := h.dialGateway(t, a, "alpha")
	run := h.trigger(h.inst, "hello")
	first := receive(t, g, 1)[0]
	h.clock.Advance(DefaultAckTimeout - time.Second)
	h.svc.gw.sweep()
	h.clock.Advance(time.Second)
	h.svc.gw.sweep()
	again := receive(t, g, 1)[0]
	if again.ID != first.ID || again.Seq != first.Seq || !again.Redelivered || again.InvocationToken == first.InvocationToken {
		t.Fatalf("first %v, again %v", first, again)
	}
	c, err := h.svc.verifyToken(t.Context(), again.InvocationToken, h.inst.ID, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := h.st.NewestToken(t.Context(), run.ID); rec.JTI != c.ID {
		t.Errorf("the redelivered token is not the run's newest")
	}
}

// TestGatewayWindow: no more than GatewayMaxInFlight events are out
// beyond the acknowledged sequence; an ack lets more go.
func TestGatewayWindow(t *testing.T) {
	h := newGWHarness(t, &Options{GatewayMaxInFlight: 3})
	a := h.agent(h.inst, false)
	r := h.dialRaw(t)
	r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)
	h.appendEvents(t, 5, delivery.EventConfigChanged, 0)
	if evs, _ := r.events(3); evs[2].Seq != 3 {
		t.Fatalf("events %v", evs)
	}
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("beyond the window: %v", extra)
	}
	r.send(delivery.OpAck, delivery.GatewayAck{Seq: 1})
	if evs, _ := r.events(1); evs[0].Seq != 4 {
		t.Fatalf("events %v", evs)
	}
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("beyond the window: %v", extra)
	}
	r.send(delivery.OpAck, delivery.GatewayAck{Seq: 4})
	if evs, _ := r.events(1); evs[0].Seq != 5 {
		t.Fatalf("events %v", evs)
	}
}

// TestGatewayResume: a dropped session resumed with a cursor gets
// exactly the events after the cursor (none lost, none twice), and the
// cursor is acknowledged.
func TestGatewayResume(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, true)
	r := h.dialRaw(t)
	ready := r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)
	h.appendEvents(t, 5, delivery.EventInvocation, 0)
	first, _ := r.events(5)
	_ = r.ws.CloseNow() // the connection breaks
	if e := ends.next(t, ends.ended); e.code != 0 {
		t.Fatalf("end %+v", e)
	}

	r = h.dialRaw(t)
	r.sendResume(a, ready.GatewaySessionID, 3)
	var resumed delivery.GatewayResumed
	r.expect(delivery.OpResumed, &resumed)
	if resumed != (delivery.GatewayResumed{GatewaySessionID: ready.GatewaySessionID, Cursor: 3, HeadSeq: 5}) {
		t.Fatalf("resumed %+v", resumed)
	}
	evs, catchup := r.events(2)
	if catchup == -1 {
		r.expect(delivery.OpCatchupComplete, nil)
	}
	for i, e := range evs {
		if e.Seq != int64(4+i) || e.ID != first[3+i].ID || !e.Redelivered || e.InvocationToken == first[3+i].InvocationToken {
			t.Fatalf("event %d: %v", i, e)
		}
	}
	if c := h.consumer(t, "alpha"); c.AckedSeq != 3 || c.SessionID != ready.GatewaySessionID {
		t.Fatalf("consumer %+v", c)
	}
	h.appendEvents(t, 1, delivery.EventConfigChanged, 0)
	if evs, _ := r.events(1); evs[0].Seq != 6 || evs[0].Redelivered {
		t.Fatalf("events %v", evs)
	}
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("frames %v", extra)
	}
}

// TestGatewayAdapterResumes: the real adapter, closed 4009 after two
// silent intervals, resumes its session (the same one holds the
// consumer) and goes on receiving.
func TestGatewayAdapterResumes(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, false)
	g := h.dialGateway(t, a, "alpha")
	h.trigger(h.inst, "one")
	if err := g.Ack(t.Context(), receive(t, g, 1)[0].Seq); err != nil {
		t.Fatal(err)
	}
	held := h.consumer(t, "alpha").SessionID
	h.clock.Advance(2 * time.Hour)
	h.svc.gw.sweep()
	if e := ends.next(t, ends.ended); e.code != delivery.CloseSessionTimeout || e.by() != "platform" {
		t.Fatalf("end %+v", e)
	}
	h.trigger(h.inst, "two")
	if e := receive(t, g, 1)[0]; e.Seq != 2 || e.Redelivered {
		t.Fatalf("event %v", e)
	}
	if c := h.consumer(t, "alpha"); c.SessionID != held || c.AckedSeq < 1 {
		t.Fatalf("consumer %+v, held by %s before", c, held)
	}
}

// TestGatewayTakeover: a second connection identifying for the same
// consumer takes it over: the first is closed 4015, and its adapter
// stops there, without connecting again; the second gets the events
// the first did not acknowledge.
func TestGatewayTakeover(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, true)
	a.open("alpha") // the source connects in the background: its consumer is older than the event
	first, err := adapter.NewGatewaySource(h.srv.URL, h.svc.Discovery().Gateway, h.gwOptions(a, "alpha"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })
	h.trigger(h.inst, "hello")
	ev := receive(t, first, 1)[0]

	second := h.dialGateway(t, a, "alpha")
	ctx, cancel := context.WithTimeout(t.Context(), gwGuard)
	defer cancel()
	_, err = first.Receive(ctx)
	var reason adapter.CloseReason
	if !errors.Is(err, adapter.ErrGatewayStopped) || !errors.As(err, &reason) ||
		reason != (adapter.CloseReason{Code: delivery.CloseTakenOver, Reason: "consumer_taken_over"}) {
		t.Fatalf("the first source: %v", err)
	}
	if cr, ok := first.Gateway().CloseReason(); !ok || cr.Code != delivery.CloseTakenOver {
		t.Fatalf("close reason %v %v", cr, ok)
	}
	<-first.Gateway().Done()
	if e := ends.next(t, ends.ended); e.code != delivery.CloseTakenOver || e.by() != "platform" {
		t.Fatalf("end %+v", e)
	}
	again := receive(t, second, 1)[0]
	if again.ID != ev.ID || !again.Redelivered {
		t.Fatalf("the second session got %v", again)
	}
	h.svc.gw.mu.Lock()
	conns, sessions := len(h.svc.gw.conns), len(h.svc.gw.sessions)
	h.svc.gw.mu.Unlock()
	if conns != 1 || sessions != 1 {
		t.Errorf("%d connections, %d sessions; the stopped adapter must not come back", conns, sessions)
	}
	if n := testutil.ToFloat64(h.svc.gw.closes.WithLabelValues("4015")); n != 1 {
		t.Errorf("closes_total{code=4015} = %v", n)
	}
	if n := testutil.ToFloat64(h.svc.gw.live); n != 1 {
		t.Errorf("sessions = %v", n)
	}
}

// TestGatewayResumeRefused: a resume the platform cannot serve.
func TestGatewayResumeRefused(t *testing.T) {
	tests := []struct {
		name string
		// resume returns the agent, session and cursor to resume with,
		// after dropping a session of the harness's agent.
		resume func(t *testing.T, h *harness, a *agent, session string) (*agent, string, int64)
		want   int
	}{
		{"unknown session", func(t *testing.T, h *harness, a *agent, _ string) (*agent, string, int64) {
			return a, a2a.NewID(), 0
		}, delivery.CloseInvalidSession},
		{"past the resume window", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			h.clock.Advance(DefaultResumeWindow)
			return a, s, 0
		}, delivery.CloseInvalidSession},
		{"forgotten by the sweep", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			h.clock.Advance(DefaultResumeWindow)
			h.svc.gw.sweep()
			h.clock.Advance(-time.Second)
			return a, s, 0
		}, delivery.CloseInvalidSession},
		{"another agent", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			return h.agent(h.other, false), s, 0
		}, delivery.CloseInvalidSession},
		{"a session that lost its consumer", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			h.dialRaw(t).identify(a, "alpha")
			return a, s, 0
		}, delivery.CloseTakenOver},
		{"a cursor beyond the head", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			return a, s, 2
		}, delivery.CloseInvalidSeq},
		{"a negative cursor", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			return a, s, -1
		}, delivery.CloseInvalidSeq},
		{"a revoked token", func(t *testing.T, h *harness, a *agent, s string) (*agent, string, int64) {
			rec, err := h.st.FindAPIToken(t.Context(), tokenHash(a.token))
			if err != nil {
				t.Fatal(err)
			}
			if err := h.st.RevokeAPIToken(t.Context(), a.id, rec.ID, h.clock.Now()); err != nil {
				t.Fatal(err)
			}
			return a, s, 0
		}, delivery.CloseAuthFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGWHarness(t, nil)
			ends := watchGateway(h)
			a := h.agent(h.inst, true)
			r := h.dialRaw(t)
			ready := r.identify(a, "alpha")
			h.appendEvents(t, 1, delivery.EventConfigChanged, 0)
			_ = r.ws.CloseNow()
			ends.next(t, ends.ended)
			who, session, cursor := tt.resume(t, h, a, ready.GatewaySessionID)
			r = h.dialRaw(t)
			r.sendResume(who, session, cursor)
			if code, reason := r.closed(); code != tt.want || reason != delivery.CloseCodes[tt.want].Reason {
				t.Fatalf("closed %d %q, want %d", code, reason, tt.want)
			}
		})
	}
}

// TestGatewayCloseCodes: every code this side closes with for what an
// agent sends or stops being.
func TestGatewayCloseCodes(t *testing.T) {
	identified := func(t *testing.T, h *harness, a *agent, r *gwRaw) {
		r.identify(a, "alpha")
		r.expect(delivery.OpCatchupComplete, nil)
	}
	noLongerPulls := func(t *testing.T, h *harness) {
		inst, err := h.runs.GetInstance(t.Context(), testTenant, h.inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		inst.Delivery = gateway.DeliveryPush
		if _, err := h.runs.UpdateInstance(t.Context(), inst, inst.Version, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		bound bool
		opts  *Options
		run   func(t *testing.T, h *harness, a *agent, r *gwRaw)
		want  int
	}{
		{"unknown op", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send("subscribe", map[string]string{})
		}, delivery.CloseUnknownOp},
		{"a platform's op from the agent", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.send(delivery.OpReady, delivery.GatewayReady{})
		}, delivery.CloseUnknownOp},
		{"not JSON", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendRaw(websocket.MessageText, []byte(`{"op":`))
		}, delivery.CloseDecodeError},
		{"a binary frame", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendRaw(websocket.MessageBinary, []byte(`{"op":"heartbeat"}`))
		}, delivery.CloseDecodeError},
		{"no op", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendRaw(websocket.MessageText, []byte(`{"d":{}}`))
		}, delivery.CloseDecodeError},
		{"an identify of the wrong shape", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendRaw(websocket.MessageText, []byte(`{"op":"identify","d":5}`))
		}, delivery.CloseDecodeError},
		{"an ack of the wrong shape", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.sendRaw(websocket.MessageText, []byte(`{"op":"ack","d":{"seq":"one"}}`))
		}, delivery.CloseDecodeError},
		{"a heartbeat before identify", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{})
		}, delivery.CloseNotAuthenticated},
		{"no identify in time", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			h.clock.Advance(DefaultGatewayIdentifyTimeout - time.Millisecond)
			h.svc.gw.sweep()
			h.clock.Advance(time.Millisecond)
			h.svc.gw.sweep()
		}, delivery.CloseNotAuthenticated},
		{"an unknown token", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			a.token = APITokenPrefix + "unknown"
			r.sendIdentify(a, "alpha")
		}, delivery.CloseAuthFailed},
		{"a bound token without a proof", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, Consumer: "alpha", ProtocolVersion: "1"})
		}, delivery.CloseAuthFailed},
		// A proof without a current nonce is use_dpop_nonce: the agent
		// connects again, and the new hello's nonce is current.
		{"a proof without hello's nonce", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: r.proof(a, h.gwURL(), ""),
				Consumer: "alpha", ProtocolVersion: "1"})
		}, delivery.CloseNotAuthenticated},
		{"hello's nonce gone stale", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			nonce := r.hello.DPoPNonce
			h.clock.Advance(2 * DefaultNonceWindow)
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: r.proof(a, h.gwURL(), nonce),
				Consumer: "alpha", ProtocolVersion: "1"})
		}, delivery.CloseNotAuthenticated},
		{"a proof of another URL", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: r.proof(a, h.srv.URL+delivery.DiscoveryPath, r.hello.DPoPNonce),
				Consumer: "alpha", ProtocolVersion: "1"})
		}, delivery.CloseAuthFailed},
		{"a proof used twice", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			p := r.proof(a, h.gwURL(), r.hello.DPoPNonce)
			first := h.dialRaw(t)
			first.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: p, Consumer: "beta", ProtocolVersion: "1"})
			first.expect(delivery.OpReady, nil)
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, DPoP: p, Consumer: "alpha", ProtocolVersion: "1"})
		}, delivery.CloseAuthFailed},
		{"a second identify", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.sendIdentify(a, "alpha")
		}, delivery.CloseAlreadyIdentified},
		{"a resume after identify", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.sendResume(a, a2a.NewID(), 0)
		}, delivery.CloseAlreadyIdentified},
		{"an unknown session", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendResume(a, a2a.NewID(), 0)
		}, delivery.CloseInvalidSession},
		{"an ack beyond the head", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.send(delivery.OpAck, delivery.GatewayAck{Seq: 1})
		}, delivery.CloseInvalidSeq},
		{"two silent intervals", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			h.clock.Advance(2 * time.Hour)
			h.svc.gw.sweep()
		}, delivery.CloseSessionTimeout},
		{"a consumer name out of form", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.sendIdentify(a, "Alpha Consumer")
		}, delivery.CloseInvalidConsumer},
		{"another protocol version", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			r.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, Consumer: "alpha", ProtocolVersion: "2"})
		}, delivery.CloseBadVersion},
		{"an instance that no longer pulls, at identify", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			noLongerPulls(t, h)
			r.sendIdentify(a, "alpha")
		}, delivery.CloseAgentDisabled},
		{"an instance that no longer pulls, at its next event", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			noLongerPulls(t, h)
			h.appendEvents(t, 1, delivery.EventConfigChanged, 0)
		}, delivery.CloseAgentDisabled},
		{"an instance that no longer pulls, at a heartbeat", false, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			noLongerPulls(t, h)
			r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{})
		}, delivery.CloseAgentDisabled},
		{"a token revoked while connected", true, nil, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			rec, err := h.st.FindAPIToken(t.Context(), tokenHash(a.token))
			if err != nil {
				t.Fatal(err)
			}
			if err := h.st.RevokeAPIToken(t.Context(), a.id, rec.ID, h.clock.Now()); err != nil {
				t.Fatal(err)
			}
			r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{})
		}, delivery.CloseTokenRevoked},
		{"a frame over the read limit", false, &Options{GatewayMaxFrameBytes: 1024}, func(t *testing.T, h *harness, a *agent, r *gwRaw) {
			identified(t, h, a, r)
			r.send(delivery.OpHeartbeat, map[string]string{"pad": strings.Repeat("x", 1024)})
		}, int(websocket.StatusMessageTooBig)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGWHarness(t, tt.opts)
			ends := watchGateway(h)
			a := h.agent(h.inst, tt.bound)
			r := h.dialRaw(t)
			tt.run(t, h, a, r)
			code, reason := r.closed()
			if code != tt.want {
				t.Fatalf("closed %d %q, want %d", code, reason, tt.want)
			}
			if row, ok := delivery.CloseCodes[code]; ok && reason != row.Reason {
				t.Errorf("reason %q, want %q", reason, row.Reason)
			}
			if strings.Contains(reason, a.token) {
				t.Error("the reason names the token")
			}
			for {
				e := ends.next(t, ends.ended)
				if e.code == tt.want {
					if e.by() != "platform" {
						t.Errorf("end %+v", e)
					}
					break
				}
			}
		})
	}
}

// TestGatewayShutdown: the server's shutdown closes every connection,
// identified or not, with 4013, and refuses new ones.
func TestGatewayShutdown(t *testing.T) {
	h := newGWHarness(t, nil)
	a := h.agent(h.inst, false)
	idle := h.dialRaw(t)
	session := h.dialRaw(t)
	session.identify(a, "alpha")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.svc.Shutdown(context.Background())
	}()
	for _, r := range []*gwRaw{idle, session} {
		if code, reason := r.closed(); code != delivery.CloseServerRestart || reason != "server_restart" {
			t.Fatalf("closed %d %q", code, reason)
		}
	}
	<-done
	_, resp, err := websocket.Dial(t.Context(), h.gwURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a connection after shutdown: %v", err)
	}
}

// TestGatewayBackpressure: an agent that sends but does not read is
// closed 4014 once the answers it asked for find its buffer full.
func TestGatewayBackpressure(t *testing.T) {
	h := newGWHarness(t, &Options{GatewayMaxBufferedBytes: 8 << 10})
	ends := watchGateway(h)
	a := h.agent(h.inst, false)
	r := h.dialRaw(t)
	r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)
	// More than the socket buffers hold: the writer blocks.
	h.appendEvents(t, 400, delivery.EventConfigChanged, 64<<10)
	decided := false
	for i := 0; !decided; i++ {
		if i == 1_000_000 {
			t.Fatal("never closed")
		}
		r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{})
		select {
		case e := <-ends.decided:
			if e.code != delivery.CloseBackpressure {
				t.Fatalf("end %+v", e)
			}
			decided = true
		default:
		}
	}
	if code, reason := r.closed(); code != delivery.CloseBackpressure || reason != "backpressure" {
		t.Fatalf("closed %d %q", code, reason)
	}
}

// TestGatewayRunUpdate: run.update changes the run with no answer; a
// refusal is an error frame with the update's ref, and the run with
// base_version_conflict — for the real adapter too.
func TestGatewayRunUpdate(t *testing.T) {
	h := newGWHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	run := h.trigger(h.inst, "hello")
	r := h.dialRaw(t)
	r.identify(a, "alpha")
	evs, caughtUp := r.events(1)
	if caughtUp < 0 {
		// The catch-up's end is sent by the event pump, a heartbeat's
		// answer by the reader: read it now, or it may come after the
		// sync's answer.
		r.expect(delivery.OpCatchupComplete, nil)
	}
	tok := evs[0].InvocationToken
	started := decodeAs[delivery.Run](t, a.call("POST", delivery.StartRunPath(run.ID), startBody(), tok, newKey()))
	v := started.Version

	status := []delivery.PatchOp{{Op: "replace", Path: "/status_line", Value: json.RawMessage(`"Reading the files"`)}}
	r.send(delivery.OpRunUpdate, delivery.GatewayRunUpdate{Ref: "u1", RunID: run.ID, InvocationToken: tok, BaseVersion: v, Ops: status})
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("frames after a good update: %v", extra)
	}
	if got := h.run(run.ID); got.Version != v+1 || got.Pull.Progress.StatusLine != "Reading the files" {
		t.Fatalf("run version %d, status %q", got.Version, got.Pull.Progress.StatusLine)
	}

	tests := []struct {
		name   string
		update delivery.GatewayRunUpdate
		code   string
		status int
	}{
		{"a stale base", delivery.GatewayRunUpdate{Ref: "u2", RunID: run.ID, InvocationToken: tok, BaseVersion: v, Ops: status},
			delivery.CodeBaseVersionConflict, http.StatusConflict},
		{"a forbidden path", delivery.GatewayRunUpdate{Ref: "u3", RunID: run.ID, InvocationToken: tok, BaseVersion: v + 1,
			Ops: []delivery.PatchOp{{Op: "replace", Path: "/state", Value: json.RawMessage(`"completed"`)}}},
			delivery.CodeValidationFailed, http.StatusBadRequest},
		{"a forged token", delivery.GatewayRunUpdate{Ref: "u4", RunID: run.ID, InvocationToken: "not.a.token", BaseVersion: v + 1, Ops: status},
			delivery.CodeInvocationTokenInvalid, http.StatusForbidden},
		{"another agent's run", delivery.GatewayRunUpdate{Ref: "u5", RunID: "run-of-nobody", InvocationToken: tok, BaseVersion: v + 1, Ops: status},
			delivery.CodeInvocationTokenInvalid, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.send(delivery.OpRunUpdate, tt.update)
			var ge delivery.GatewayError
			r.expect(delivery.OpError, &ge)
			if ge.Op != delivery.OpRunUpdate || ge.Ref != tt.update.Ref || ge.Code != tt.code || ge.Status != tt.status {
				t.Fatalf("error %+v", ge)
			}
			if strings.Contains(ge.Detail, tok) || strings.Contains(string(ge.Current), tok) {
				t.Error("the error frame names the token")
			}
			if tt.code == delivery.CodeBaseVersionConflict {
				var cur delivery.Run
				if err := json.Unmarshal(ge.Current, &cur); err != nil || cur.Version != v+1 || cur.StatusLine != "Reading the files" {
					t.Fatalf("current %s: %v", ge.Current, err)
				}
			}
		})
	}

	t.Run("the real adapter", func(t *testing.T) {
		g := h.dialGateway(t, a, "beta")
		err := g.SendRunUpdate(t.Context(), run.ID, secret.New(tok), v, status)
		var opErr *adapter.GatewayOpError
		if !errors.As(err, &opErr) || opErr.Code != delivery.CodeBaseVersionConflict || opErr.Status != http.StatusConflict ||
			opErr.Current == nil || opErr.Current.Version != v+1 {
			t.Fatalf("SendRunUpdate: %v", err)
		}
	})
}

// TestGatewayHeartbeat: a heartbeat is answered heartbeat_ack with the
// interval, and its agent member stored; a refused member is an error
// frame and the connection stays; any frame keeps a session alive, two
// silent intervals end it.
func TestGatewayHeartbeat(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, false)
	r := h.dialRaw(t)
	r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)

	r.send(delivery.OpHeartbeat, map[string]any{"last_seq": 0, "agent": map[string]any{"status": "ok",
		"details": map[string]any{"active_runs": []string{}, "adapter": map[string]string{"name": "novaos-go", "version": "1.0"}}}})
	var ack delivery.GatewayHeartbeatAck
	r.expect(delivery.OpHeartbeatAck, &ack)
	if ack.IntervalMS != time.Hour.Milliseconds() {
		t.Fatalf("ack %+v", ack)
	}
	if beat, ok := h.svc.LastHeartbeatOf(h.inst.ID); !ok || beat.Heartbeat.Status != delivery.HeartbeatOK || !beat.At.Equal(h.clock.Now()) {
		t.Fatalf("heartbeat %+v %v", beat, ok)
	}

	for _, bad := range []string{`{"status":"fine"}`, `{"status":"ok","api_key":"x"}`, `[1]`} {
		r.sendRaw(websocket.MessageText, []byte(`{"op":"heartbeat","d":{"last_seq":0,"agent":`+bad+`}}`))
		var ge delivery.GatewayError
		r.expect(delivery.OpError, &ge)
		if ge.Op != delivery.OpHeartbeat || ge.Code != delivery.CodeValidationFailed || ge.Status != http.StatusBadRequest {
			t.Fatalf("error %+v", ge)
		}
		if strings.Contains(ge.Detail, `"x"`) {
			t.Errorf("the detail repeats a value: %s", ge.Detail)
		}
		r.expect(delivery.OpHeartbeatAck, nil)
	}

	h.clock.Advance(time.Hour + time.Hour/2)
	h.svc.gw.sweep()
	r.sync() // a frame: the session lives another two intervals
	h.clock.Advance(time.Hour + time.Hour/2)
	h.svc.gw.sweep()
	r.sync()
	h.clock.Advance(2 * time.Hour)
	h.svc.gw.sweep()
	if code, _ := r.closed(); code != delivery.CloseSessionTimeout {
		t.Fatalf("closed %d", code)
	}
	if e := ends.next(t, ends.ended); e.code != delivery.CloseSessionTimeout {
		t.Fatalf("end %+v", e)
	}
}

// TestGatewayAutocompleteResult: no autocomplete is asked for, so none
// waits for a result.
func TestGatewayAutocompleteResult(t *testing.T) {
	h := newGWHarness(t, nil)
	a := h.agent(h.inst, false)
	r := h.dialRaw(t)
	r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)
	r.send(delivery.OpAutocompleteResult, delivery.GatewayAutocompleteResult{Ref: "ac-1", Choices: []delivery.SelectOption{}})
	var ge delivery.GatewayError
	r.expect(delivery.OpError, &ge)
	if ge.Op != delivery.OpAutocompleteResult || ge.Ref != "ac-1" || ge.Code != delivery.CodeNotFound || ge.Status != http.StatusNotFound ||
		ge.Detail == "" || ge.Current != nil {
		t.Fatalf("error %+v", ge)
	}
}

// TestGatewayUpgrade: what the gateway answers before a WebSocket: an
// Origin that is not the server's own is refused (a page of another
// site), a plain GET is told to upgrade, another method is refused.
func TestGatewayUpgrade(t *testing.T) {
	h := newGWHarness(t, nil)
	for _, tt := range []struct {
		name, origin string
		want         int
	}{
		{"no Origin", "", http.StatusSwitchingProtocols},
		{"the server's own", h.srv.URL, http.StatusSwitchingProtocols},
		{"another site", "https://evil.example", http.StatusForbidden},
		{"another port of the host", "http://127.0.0.1:1", http.StatusForbidden},
		{"null", "null", http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := http.Header{}
			if tt.origin != "" {
				hdr.Set("Origin", tt.origin)
			}
			ws, resp, err := websocket.Dial(t.Context(), h.gwURL(), &websocket.DialOptions{HTTPHeader: hdr})
			if resp == nil || resp.StatusCode != tt.want {
				t.Fatalf("answer %v: %v", resp, err)
			}
			if err == nil {
				_ = ws.CloseNow()
			}
			if tt.want == http.StatusForbidden && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("content type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	if ans := h.do("GET", delivery.GatewayPath, nil, nil); ans.status != http.StatusUpgradeRequired || ans.problem(t).Code != "upgrade_required" {
		t.Errorf("a plain GET: %d %s", ans.status, ans.body)
	}
	if ans := h.do("POST", delivery.GatewayPath, []byte(`{}`), nil); ans.status != http.StatusMethodNotAllowed || ans.header.Get("Allow") != "GET" {
		t.Errorf("a POST: %d %s", ans.status, ans.body)
	}
}

// TestGatewayRemembersFewSessions: however often a consumer is taken
// over, this process remembers two of its sessions: the holder, and the
// one that lost it last (its resume is 4015); an older one is gone (4006).
func TestGatewayRemembersFewSessions(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, false)
	var ids []string
	for range 5 {
		r := h.dialRaw(t)
		ids = append(ids, r.identify(a, "alpha").GatewaySessionID)
		_ = r.ws.CloseNow()
		ends.next(t, ends.ended)
	}
	h.svc.gw.mu.Lock()
	n := len(h.svc.gw.sessions)
	h.svc.gw.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d sessions remembered", n)
	}
	for _, tt := range []struct {
		session string
		want    int
	}{{ids[2], delivery.CloseInvalidSession}, {ids[3], delivery.CloseTakenOver}} {
		r := h.dialRaw(t)
		r.sendResume(a, tt.session, 0)
		if code, _ := r.closed(); code != tt.want {
			t.Errorf("resume of %s: %d, want %d", tt.session, code, tt.want)
		}
	}
	r := h.dialRaw(t)
	r.sendResume(a, ids[4], 0)
	r.expect(delivery.OpResumed, nil)
}

// TestGatewayResumeResendsLostRedeliveries: an event the agent settled
// from its first delivery is sent again on a connection that breaks
// before the agent reads it, with a fresh token that becomes the run's
// newest; the agent resumes with a cursor past the event. The resumed
// session sends that event once more, with a newer token still, so that
// the agent holds its run's newest token: otherwise every start it
// makes is superseded, and no delivery is left to bring a newer one.
func TestGatewayResumeResendsLostRedeliveries(t *testing.T) {
	h := newGWHarness(t, nil)
	ends := watchGateway(h)
	a := h.agent(h.inst, true)
	r := h.dialRaw(t)
	ready := r.identify(a, "alpha")
	r.expect(delivery.OpCatchupComplete, nil)
	h.appendEvents(t, 1, delivery.EventInvocation, 0)
	first, _ := r.events(1)
	_ = r.ws.CloseNow() // settled by the agent, not acknowledged
	ends.next(t, ends.ended)

	r = h.dialRaw(t)
	r.sendResume(a, ready.GatewaySessionID, 0)
	r.expect(delivery.OpResumed, nil)
	again, _ := r.events(1) // sent again: the agent never reads it
	if !again[0].Redelivered || again[0].InvocationToken == first[0].InvocationToken {
		t.Fatalf("sent again %v", again[0])
	}
	_ = r.ws.CloseNow()
	ends.next(t, ends.ended)

	r = h.dialRaw(t)
	r.sendResume(a, ready.GatewaySessionID, 1)
	r.expect(delivery.OpResumed, nil)
	evs, catchup := r.events(1)
	if catchup == -1 {
		r.expect(delivery.OpCatchupComplete, nil)
	}
	e := evs[0]
	if e.Seq != 1 || !e.Redelivered || e.InvocationToken == first[0].InvocationToken || e.InvocationToken == again[0].InvocationToken {
		t.Fatalf("after the resume %v", e)
	}
	rec, err := h.st.NewestToken(t.Context(), "run-0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.svc.verifyToken(t.Context(), e.InvocationToken, h.inst.ID, "run-0")
	if err != nil || rec.JTI != c.ID {
		t.Fatalf("the newest token is not the one sent last (%v)", err)
	}
	if extra := r.sync(); len(extra) != 0 {
		t.Fatalf("frames %v", extra)
	}
}
