package delivery

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/instrument"
)

// Defaults of the gateway's Options.
const (
	// DefaultResumeWindow is how long a dropped gateway session may be
	// resumed.
	DefaultResumeWindow = 2 * time.Minute
	// DefaultGatewayMaxFrameBytes bounds a frame the gateway reads: an
	// agent's largest frame is a run.update of a full patch.
	DefaultGatewayMaxFrameBytes = 1 << 20
	// DefaultGatewayIdentifyTimeout is how long a connection has to
	// identify after hello.
	DefaultGatewayIdentifyTimeout = 10 * time.Second
	// DefaultGatewayMaxInFlight bounds the events sent to a consumer and
	// not yet acknowledged.
	DefaultGatewayMaxInFlight = 1000
	// DefaultGatewayMaxBufferedBytes bounds the frames waiting to be
	// written to one connection.
	DefaultGatewayMaxBufferedBytes = 4 << 20
	// DefaultGatewayWriteTimeout bounds the write of one frame.
	DefaultGatewayWriteTimeout = 10 * time.Second
	// DefaultGatewaySweepEvery is how often deadlines are checked.
	DefaultGatewaySweepEvery = time.Second
)

func (v *Options) gatewayDefaults() {
	defaults.Positive(&v.ResumeWindow, DefaultResumeWindow)
	defaults.Positive(&v.GatewayMaxFrameBytes, DefaultGatewayMaxFrameBytes)
	defaults.Positive(&v.GatewayIdentifyTimeout, DefaultGatewayIdentifyTimeout)
	defaults.Positive(&v.GatewayMaxInFlight, DefaultGatewayMaxInFlight)
	defaults.Positive(&v.GatewayMaxBufferedBytes, DefaultGatewayMaxBufferedBytes)
	defaults.Positive(&v.GatewayWriteTimeout, DefaultGatewayWriteTimeout)
	defaults.Positive(&v.GatewaySweepEvery, DefaultGatewaySweepEvery)
}

// gwHub keeps the gateway's connections and the sessions they serve.
// A session outlives its connection by the resume window, in this
// process's memory; which session holds a consumer is the store's
// (Consumer.SessionID), so that a takeover on another replica is seen
// here when the session next reads its consumer.
//
// Lock order: gwHub.mu before gwConn.mu.
type gwHub struct {
	s   *Service
	log *slog.Logger

	live   prometheus.Gauge
	closes *prometheus.CounterVec

	mu       sync.Mutex
	conns    map[*gwConn]struct{}
	sessions map[string]*gwSession
	// held are the sessions remembered for each consumer: the one that
	// holds it, and the dropped one that lost it last (remembered so that
	// its resume is answered 4015), so that a consumer keeps at most two
	// however often it is taken over.
	held     map[gwConsumerKey]*gwHeld
	closing  bool
	handlers sync.WaitGroup

	// observe, when set (by tests), hears how each connection ends: when
	// its end is decided, and again (final) when it is gone.
	observe func(c *gwConn, end gwEnd, final bool)
}

type gwConsumerKey struct{ agent, consumer string }

type gwHeld struct{ holder, lost string }

// gwSession is a gateway session: an agent's hold on one consumer. conn
// is nil while it waits, dropped, to be resumed.
type gwSession struct {
	id       string
	agentID  string
	consumer string

	// Guarded by gwHub.mu.
	conn      *gwConn
	droppedAt time.Time
	// resent holds the events the session sent again (redelivered, each
	// with a fresh token that became its run's newest) since it last
	// resumed: the agent may have settled one from its earlier delivery
	// and never read the later, which its cursor would then acknowledge.
	resent map[int64]struct{}
}

// maxResent bounds the events a session remembers having sent again.
const maxResent = 4096

// noteResent remembers that sess sent the event seq again.
func (h *gwHub) noteResent(sess *gwSession, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sess.resent == nil {
		sess.resent = map[int64]struct{}{}
	}
	if len(sess.resent) < maxResent {
		sess.resent[seq] = struct{}{}
	}
}

// takeResent returns, in order, the events sess sent again up to cursor,
// and forgets them all (those after it are sent again anyway).
func (h *gwHub) takeResent(sess *gwSession, cursor int64) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for seq := range sess.resent {
		if seq <= cursor {
			out = append(out, seq)
		}
	}
	sess.resent = nil
	slices.Sort(out)
	return out
}

func newGWHub(s *Service) *gwHub {
	h := &gwHub{s: s, log: s.log, conns: map[*gwConn]struct{}{}, sessions: map[string]*gwSession{},
		held: map[gwConsumerKey]*gwHeld{}}
	h.live = instrument.Register(s.deps.Metrics, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "novaos_delivery_gateway_sessions",
		Help: "Gateway connections of this process with a session (identified or resumed).",
	}), s.log)
	h.closes = instrument.Register(s.deps.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "novaos_delivery_gateway_closes_total",
		Help: "Gateway connections ended, by the close code either side sent (none: the connection broke; other: a code outside the table).",
	}, []string{"code"}), s.log)
	return h
}

// gwCodeLabel bounds the close codes a peer may send to the table's and
// the protocol's own.
func gwCodeLabel(code int) string {
	if _, ok := delivery.CloseCodes[code]; ok || code >= 1000 && code <= 1015 {
		return strconv.Itoa(code)
	}
	if code == 0 {
		return "none"
	}
	return "other"
}

// serveGateway upgrades an agent's connection. Agents are not browsers:
// an Origin other than the server's own is a page of another site
// trying to use a visitor's network position, and is refused before the
// upgrade.
func (s *Service) serveGateway(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeProblem(w, newProblem(http.StatusMethodNotAllowed, "method_not_allowed", "", "the gateway is a WebSocket upgrade: use GET"))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !httpapi.OwnOrigin(r, origin) {
		s.tel.refused.WithLabelValues(delivery.CodeForbidden).Inc()
		writeProblem(w, forbidden("a WebSocket from a page of another site is refused; agents connect without an Origin"))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		writeProblem(w, newProblem(http.StatusUpgradeRequired, "upgrade_required", "", "the gateway speaks WebSocket only"))
		return
	}
	if !s.gw.enter() {
		p := newProblem(http.StatusServiceUnavailable, delivery.CodeUnavailable, "", "the server is shutting down")
		p.RetryAfter = 1
		writeProblem(w, p)
		return
	}
	defer s.gw.handlers.Done()
	// The Origin was checked above by the server's own names, which
	// Accept's check (the Host only) does not know.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the request
	}
	s.gw.serve(ws)
}

// enter counts a connection in, unless the server is shutting down.
func (h *gwHub) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.handlers.Add(1)
	return true
}

// run checks the deadlines every Options.GatewaySweepEvery until ctx
// ends.
func (h *gwHub) run(ctx context.Context) {
	t := time.NewTicker(h.s.o.GatewaySweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.sweep()
		}
	}
}

// sweep closes the connections that did not identify in time (4003) and
// the sessions whose agent went silent for two heartbeat intervals
// (4009), forgets the dropped sessions past the resume window, and
// wakes the sessions whose sent events fell due: every deadline is
// Now's, which need not be the timers' clock (tests move it by hand).
func (h *gwHub) sweep() {
	now := h.s.o.Now()
	silent := 2 * h.s.o.HeartbeatInterval
	var late, quiet, due []*gwConn
	h.mu.Lock()
	for c := range h.conns {
		if d := c.due.Load(); d != 0 && now.UnixNano() >= d {
			due = append(due, c)
		}
		c.mu.Lock()
		identified := c.sess != nil
		c.mu.Unlock()
		switch {
		case !identified && now.Sub(c.opened) >= h.s.o.GatewayIdentifyTimeout:
			late = append(late, c)
		case identified && now.Sub(c.lastFrame()) >= silent:
			quiet = append(quiet, c)
		}
	}
	for id, sess := range h.sessions {
		if sess.conn == nil && now.Sub(sess.droppedAt) >= h.s.o.ResumeWindow {
			h.forgetLocked(id)
		}
	}
	h.mu.Unlock()
	for _, c := range late {
		c.close(delivery.CloseNotAuthenticated)
	}
	for _, c := range quiet {
		c.close(delivery.CloseSessionTimeout)
	}
	for _, c := range due {
		c.kickPump()
	}
}

// forgetLocked drops a session from memory.
func (h *gwHub) forgetLocked(id string) {
	sess, ok := h.sessions[id]
	if !ok {
		return
	}
	delete(h.sessions, id)
	k := gwConsumerKey{sess.agentID, sess.consumer}
	if held := h.held[k]; held != nil {
		if held.holder == id {
			held.holder = ""
		}
		if held.lost == id {
			held.lost = ""
		}
		if *held == (gwHeld{}) {
			delete(h.held, k)
		}
	}
}

// hold registers a new session of c on a consumer the store now says it
// holds, and returns the connections of the sessions it took the
// consumer from in this process, prev (the store's holder before) and
// the one remembered as holder, to be closed 4015. A dropped one is
// remembered as the consumer's lost session until its window passes or
// the next takeover, so that its resume is answered 4015 too.
func (h *gwHub) hold(c *gwConn, sess *gwSession, prev string) []*gwConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := gwConsumerKey{sess.agentID, sess.consumer}
	held := h.held[k]
	if held == nil {
		held = &gwHeld{}
		h.held[k] = held
	}
	if held.lost != "" {
		h.forgetLocked(held.lost)
	}
	var victims []*gwConn
	lost := ""
	for _, id := range []string{prev, held.holder} {
		old, ok := h.sessions[id]
		switch {
		case !ok || id == sess.id:
		case old.conn != nil:
			if !slices.Contains(victims, old.conn) {
				victims = append(victims, old.conn)
			}
		case lost == "" || lost == id:
			lost = id
		default:
			h.forgetLocked(id)
		}
	}
	sess.conn = c
	h.sessions[sess.id] = sess
	if held = h.held[k]; held == nil { // forgetLocked dropped an emptied entry
		held = &gwHeld{}
		h.held[k] = held
	}
	held.holder, held.lost = sess.id, lost
	h.attachLocked(c, sess)
	return victims
}

// lookup returns the session id names, if this process remembers it and
// it is live or dropped within the resume window.
func (h *gwHub) lookup(id string, now time.Time) *gwSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[id]
	if !ok {
		return nil
	}
	if sess.conn == nil && now.Sub(sess.droppedAt) >= h.s.o.ResumeWindow {
		h.forgetLocked(id)
		return nil
	}
	return sess
}

// resume moves sess to c; it returns the connection that served it
// still (closed 4015: another connection took its consumer), and false
// when the session was taken over or forgotten meanwhile.
func (h *gwHub) resume(c *gwConn, sess *gwSession) (*gwConn, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[sess.id] != sess {
		return nil, false
	}
	old := sess.conn
	sess.conn, sess.droppedAt = c, time.Time{}
	h.attachLocked(c, sess)
	return old, true
}

func (h *gwHub) attachLocked(c *gwConn, sess *gwSession) {
	c.mu.Lock()
	c.sess = sess
	c.mu.Unlock()
	h.live.Inc()
}

// drop forgets the session of an agent that stops on its close (a
// takeover, a refusal): it is not resumed.
func (h *gwHub) drop(sess *gwSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[sess.id] == sess {
		h.forgetLocked(sess.id)
	}
}

// remove takes an ended connection out: its session is remembered for
// a resume when the agent resumes after such an end, else forgotten.
func (h *gwHub) remove(c *gwConn, end gwEnd) {
	now := h.s.o.Now()
	h.mu.Lock()
	delete(h.conns, c)
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	if sess != nil {
		h.live.Dec()
		if sess.conn == c {
			sess.conn = nil
			if gwResumable(end.code) {
				sess.droppedAt = now
			} else {
				h.forgetLocked(sess.id)
			}
		}
	}
	h.mu.Unlock()
	h.closes.WithLabelValues(gwCodeLabel(end.code)).Inc()
	attrs := []any{"code", end.code, "reason", end.reason, "by", end.by()}
	if sess != nil {
		attrs = append(attrs, "agent_id", sess.agentID, "consumer", sess.consumer, "session", sess.id)
	}
	h.log.Info("delivery: gateway connection ended", attrs...)
	h.note(c, end, true)
}

func (h *gwHub) note(c *gwConn, end gwEnd, final bool) {
	h.mu.Lock()
	observe := h.observe
	h.mu.Unlock()
	if observe != nil {
		observe(c, end, final)
	}
}

// gwResumable: the agent resumes after a connection that broke, or was
// closed with a code it resumes or reconnects on.
func gwResumable(code int) bool {
	if code == 0 {
		return true
	}
	r := delivery.ReactionTo(code)
	return r != delivery.Stop && r != delivery.Identify
}

// shutdown closes every connection with 4013 and waits, until ctx ends,
// for their handlers; then it cuts the rest off.
func (h *gwHub) shutdown(ctx context.Context) {
	h.mu.Lock()
	h.closing = true
	conns := make([]*gwConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.close(delivery.CloseServerRestart)
	}
	done := make(chan struct{})
	go func() {
		h.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		h.mu.Lock()
		conns = conns[:0]
		for c := range h.conns {
			conns = append(conns, c)
		}
		h.mu.Unlock()
		for _, c := range conns {
			_ = c.ws.CloseNow()
		}
	}
}
