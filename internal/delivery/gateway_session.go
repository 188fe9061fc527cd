package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// gwEnd is how a connection ended: the close code either side sent (0
// when it broke without one), and who sent it.
type gwEnd struct {
	code   int
	reason string
	// send: this side sends the close frame; peer: the agent ended it.
	send, peer bool
}

func (e gwEnd) by() string {
	switch {
	case e.code == 0:
		return "none"
	case e.peer:
		return "agent"
	}
	return "platform"
}

// gwConn is one gateway connection. Its reader (serve) handles the
// agent's frames one at a time; its writer writes the queued frames,
// each within Options.GatewayWriteTimeout, and ends with the close
// frame; its pump, once a session is up, sends the consumer's events.
type gwConn struct {
	hub    *gwHub
	s      *Service
	ws     *websocket.Conn
	opened time.Time
	last   atomic.Int64 // Now of the last frame read, in Unix nanoseconds

	// ctx bounds the connection's work (store calls, the pump): it ends
	// when the connection starts closing.
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // wakes the writer
	kick   chan struct{} // wakes the pump
	due    atomic.Int64  // when the pump's sent events fall due (Unix ns on Now's clock), 0 for none

	// The reader's own; set before the pump starts, which reads them.
	started, up bool
	agent       Agent
	tokenHash   []byte
	pumped      chan struct{} // closed when the pump ended; nil without one
	// lost are the events a resume's cursor acknowledged that the session
	// had sent again before: the pump sends them once more first.
	lost []int64

	mu      sync.Mutex
	queue   [][]byte
	queued  int64
	room    chan struct{} // closed when the queue shrinks, or the connection ends
	waiting bool          // an event waits on room
	end     *gwEnd
	sess    *gwSession
}

// errGWFrame: a frame that is not a JSON object with an op.
var errGWFrame = errors.New("delivery: a gateway frame is a JSON object with an op")

// gwDecodeFrame reads one frame of an agent. Members it does not know
// are ignored: a newer agent may send more.
func gwDecodeFrame(data []byte) (delivery.Frame, error) {
	var f delivery.Frame
	if err := json.Unmarshal(data, &f); err != nil || f.Op == "" {
		return delivery.Frame{}, errGWFrame
	}
	return f, nil
}

// gwDecode reads a frame's d into v; an absent d is an empty object.
func gwDecode(d json.RawMessage, v any) error {
	if len(d) == 0 {
		return nil
	}
	return json.Unmarshal(d, v)
}

// gwEncode writes a frame as delivery.Frame marshals it, without a
// second pass over d (an event's payload and token are most of a frame).
func gwEncode(op string, d any) ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("delivery: encode %s: %w", op, err)
	}
	name, _ := json.Marshal(op) // a string always marshals
	b := make([]byte, 0, len(raw)+len(name)+len(`{"op":,"d":}`))
	b = append(append(append(b, `{"op":`...), name...), `,"d":`...)
	return append(append(b, raw...), '}'), nil
}

// serve runs a connection until it ends: hello, then the agent's frames.
func (h *gwHub) serve(ws *websocket.Conn) {
	s := h.s
	ws.SetReadLimit(s.o.GatewayMaxFrameBytes)
	ctx, cancel := context.WithCancel(context.Background())
	c := &gwConn{hub: h, s: s, ws: ws, opened: s.o.Now(), ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), kick: make(chan struct{}, 1), room: make(chan struct{})}
	c.last.Store(c.opened.UnixNano())
	h.mu.Lock()
	closing := h.closing
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	written := make(chan struct{})
	go func() {
		defer close(written)
		c.writeLoop()
	}()
	if closing {
		c.close(delivery.CloseServerRestart)
	}
	c.sendOp(delivery.OpHello, delivery.GatewayHello{HeartbeatIntervalMS: s.o.HeartbeatInterval.Milliseconds(),
		ResumeWindowMS: s.o.ResumeWindow.Milliseconds(), DPoPNonce: s.Nonce(), ProtocolVersions: []string{delivery.ProtocolVersion}})
	for {
		// Never the connection's ctx: an ended context cuts a websocket
		// off without its close frame, which the writer sends.
		typ, data, err := ws.Read(context.Background())
		if err != nil {
			c.finish(gwPeerEnd(err))
			break
		}
		if c.closing() {
			continue // the close handshake is under way: drain until it ends
		}
		c.last.Store(s.o.Now().UnixNano())
		c.handle(typ, data)
	}
	<-written
	if c.pumped != nil {
		<-c.pumped
	}
	c.mu.Lock()
	end := *c.end
	c.mu.Unlock()
	h.remove(c, end)
}

// gwPeerEnd classifies a read's error: the agent's close, a frame over
// the read limit (the library closed with 1009), or a broken connection.
func gwPeerEnd(err error) gwEnd {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return gwEnd{code: int(ce.Code), reason: ce.Reason, peer: true}
	case errors.Is(err, websocket.ErrMessageTooBig):
		return gwEnd{code: int(websocket.StatusMessageTooBig), reason: "frame_too_large"}
	}
	return gwEnd{reason: "connection_lost", peer: true}
}

func (c *gwConn) lastFrame() time.Time { return time.Unix(0, c.last.Load()) }

func (c *gwConn) closing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end != nil
}

func (c *gwConn) session() *gwSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// close ends the connection with code and its table reason.
func (c *gwConn) close(code int) {
	c.finish(gwEnd{code: code, reason: delivery.CloseCodes[code].Reason, send: true})
}

// finish records how the connection ends, once, and stops its work; the
// writer then sends the close frame when e says so.
func (c *gwConn) finish(e gwEnd) {
	c.mu.Lock()
	if c.end != nil {
		c.mu.Unlock()
		return
	}
	c.end = &e
	close(c.room)
	c.mu.Unlock()
	c.cancel()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	c.hub.note(c, e, false)
}

// awaitEnd waits until the connection's end is known.
func (c *gwConn) awaitEnd() {
	for {
		c.mu.Lock()
		ended := c.end != nil
		c.mu.Unlock()
		if ended {
			return
		}
		<-c.wake
	}
}

func (c *gwConn) kickPump() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// writeLoop writes the queued frames in order, then the close frame
// (frames still queued then are dropped: events not acknowledged are
// sent again).
func (c *gwConn) writeLoop() {
	for {
		c.mu.Lock()
		if c.end != nil {
			e := *c.end
			c.queue, c.queued = nil, 0
			c.mu.Unlock()
			if e.send {
				_ = c.ws.Close(websocket.StatusCode(e.code), e.reason)
			} else {
				_ = c.ws.CloseNow()
			}
			return
		}
		if len(c.queue) == 0 {
			c.mu.Unlock()
			<-c.wake
			continue
		}
		f := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.queued -= int64(len(f))
		if c.waiting {
			close(c.room)
			c.room, c.waiting = make(chan struct{}), false
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.s.o.GatewayWriteTimeout)
		err := c.ws.Write(ctx, websocket.MessageText, f)
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil && !timedOut && errors.Is(err, net.ErrClosed) {
			// The connection is closed: by the library, most likely,
			// after the agent's close frame, which the read loop is
			// about to report as the end.
			c.awaitEnd()
			continue
		}
		if err != nil {
			// The library cut the connection (a write past its deadline:
			// the agent does not read), or it broke: no close frame
			// can follow.
			reason := "write_failed"
			if timedOut {
				reason = "write_timeout"
			}
			c.finish(gwEnd{reason: reason})
		}
	}
}

// send queues a frame. An event waits while half the buffer is taken;
// any other frame, the answer to one of the agent's, that finds the
// buffer full means the agent does not read: the connection is closed
// 4014. One frame larger than the bound goes when the queue is empty.
func (c *gwConn) send(frame []byte, event bool) bool {
	limit := c.s.o.GatewayMaxBufferedBytes
	if event {
		limit /= 2
	}
	c.mu.Lock()
	for c.end == nil && c.queued > 0 && c.queued+int64(len(frame)) > limit {
		if !event {
			c.mu.Unlock()
			c.close(delivery.CloseBackpressure)
			return false
		}
		c.waiting = true
		room := c.room
		c.mu.Unlock()
		<-room
		c.mu.Lock()
	}
	if c.end != nil {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, frame)
	c.queued += int64(len(frame))
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *gwConn) sendOp(op string, d any) bool {
	f, err := gwEncode(op, d)
	if err != nil {
		c.s.log.Error("delivery: a gateway frame could not be encoded", "op", op, "err", err)
		c.close(delivery.CloseUnknownError)
		return false
	}
	return c.send(f, op == delivery.OpEvent)
}

// fail closes the connection 4000 after a failure of the platform's
// (logged by problemOf under a correlation id, never sent); the agent
// resumes. A failure of a connection that is closing already is its
// closing.
func (c *gwConn) fail(ctx context.Context, err error) {
	if ctx.Err() != nil || c.closing() {
		return
	}
	c.s.problemOf(ctx, err)
	c.close(delivery.CloseUnknownError)
}

// handle serves one frame of the agent.
func (c *gwConn) handle(typ websocket.MessageType, data []byte) {
	if typ != websocket.MessageText {
		c.close(delivery.CloseDecodeError)
		return
	}
	f, err := gwDecodeFrame(data)
	if err != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	switch f.Op {
	case delivery.OpIdentify, delivery.OpResume:
		if c.started {
			c.close(delivery.CloseAlreadyIdentified)
			return
		}
		c.started = true
		if f.Op == delivery.OpIdentify {
			c.identify(f.D)
		} else {
			c.resume(f.D)
		}
	case delivery.OpHeartbeat, delivery.OpAck, delivery.OpRunUpdate, delivery.OpAutocompleteResult:
		if !c.up {
			c.close(delivery.CloseNotAuthenticated)
			return
		}
		switch f.Op {
		case delivery.OpHeartbeat:
			c.heartbeat(f.D)
		case delivery.OpAck:
			c.ack(f.D)
		case delivery.OpRunUpdate:
			c.runUpdate(f.D)
		default:
			c.autocompleteResult(f.D)
		}
	default:
		c.close(delivery.CloseUnknownOp)
	}
}

// authenticate checks the API token and proof of identify or resume as
// a request to the gateway's URL (GET, the nonce of hello): refused is
// 4004, an instance that no longer pulls 4016.
func (c *gwConn) authenticate(ctx context.Context, token, proof string) (Agent, bool) {
	cred := Credentials{Scheme: "Bearer", Token: secret.New(token), Proof: proof, Method: http.MethodGet,
		URL: c.s.base + delivery.GatewayPath}
	if proof != "" {
		cred.Scheme = "DPoP"
	}
	a, err := c.s.AuthenticateAgent(ctx, cred)
	if err == nil {
		return a, true
	}
	var p *delivery.Problem
	if !errors.As(err, &p) {
		c.fail(ctx, err)
		return Agent{}, false
	}
	c.s.tel.refused.WithLabelValues(p.Code).Inc()
	switch {
	case p.Status == http.StatusForbidden:
		c.close(delivery.CloseAgentDisabled)
	case p.Code == delivery.CodeUseDPoPNonce:
		// The proof's nonce is not current (hello's went stale while it
		// came, or none was sent): the agent connects again, and the new
		// hello's is. 4004 would stop it for good.
		c.close(delivery.CloseNotAuthenticated)
	default:
		c.close(delivery.CloseAuthFailed)
	}
	return Agent{}, false
}

// identify opens a session: the agent takes its consumer over (a
// session holding it before, here or on another replica, is closed
// 4015), is answered ready, and is sent every event after the
// consumer's acknowledged sequence.
func (c *gwConn) identify(d json.RawMessage) {
	var in delivery.GatewayIdentify
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	if in.ProtocolVersion != delivery.ProtocolVersion {
		c.close(delivery.CloseBadVersion)
		return
	}
	if checkConsumer(in.Consumer) != nil {
		c.close(delivery.CloseInvalidConsumer)
		return
	}
	ctx, span := c.s.tel.span(c.ctx, "gateway.identify", "")
	defer span.End()
	a, ok := c.authenticate(ctx, in.APIToken, in.DPoP)
	if !ok {
		return
	}
	span.SetAttributes(attrAgent.String(a.ID))
	sess := &gwSession{id: a2a.NewID(), agentID: a.ID, consumer: in.Consumer}
	cons, prev, err := c.s.gwTakeConsumer(ctx, a, in.Consumer, sess.id)
	if err != nil {
		c.fail(ctx, err)
		return
	}
	head, err := c.s.store.HeadSeq(ctx, a.ID)
	if err != nil {
		c.fail(ctx, err)
		return
	}
	c.agent, c.tokenHash, c.up = a, tokenHash(in.APIToken), true
	for _, v := range c.hub.hold(c, sess, prev) {
		v.close(delivery.CloseTakenOver)
	}
	c.s.log.InfoContext(ctx, "delivery: gateway session ready", "agent_id", a.ID, "consumer", in.Consumer,
		"session", sess.id, "acked_seq", cons.AckedSeq, "head_seq", head, "took_over", prev != "")
	if c.sendOp(delivery.OpReady, delivery.GatewayReady{GatewaySessionID: sess.id,
		Principal: delivery.Principal{ID: a.ID, Kind: "agent"}, Consumer: in.Consumer, AckedSeq: cons.AckedSeq,
		HeadSeq: max(head, cons.AckedSeq), HeartbeatIntervalMS: c.s.o.HeartbeatInterval.Milliseconds(),
		ResumeWindowMS: c.s.o.ResumeWindow.Milliseconds()}) {
		c.startPump(sess)
	}
}

// gwTakeConsumer makes session id the holder of the agent's consumer
// (opening it at the head when new) and returns it with the session
// that held it before.
func (s *Service) gwTakeConsumer(ctx context.Context, a Agent, name, id string) (delivery.Consumer, string, error) {
	for range maxConsumerTries {
		now := s.o.Now()
		c, err := s.store.OpenConsumer(ctx, a.ID, name, now)
		if err != nil {
			return delivery.Consumer{}, "", err
		}
		prev := c.SessionID
		c.SessionID = id
		stored, err := s.store.UpdateConsumer(ctx, c, now)
		if errors.Is(err, delivery.ErrConflict) {
			continue
		}
		if err != nil {
			return delivery.Consumer{}, "", err
		}
		return stored, prev, nil
	}
	return delivery.Consumer{}, "", fmt.Errorf("delivery: consumer %s of %s: %w after %d tries", name, a.ID, delivery.ErrConflict, maxConsumerTries)
}

// resume takes a dropped session up again on this connection: the same
// agent, the session still holding its consumer (else 4015: another
// connection took it), a cursor no further than the head (else 4007),
// acknowledged when it is ahead of the consumer. Events after it are
// sent again, each with a fresh token. A session this process does not
// remember (another replica's, or past the window) is 4006: identify.
func (c *gwConn) resume(d json.RawMessage) {
	var in delivery.GatewayResume
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	ctx, span := c.s.tel.span(c.ctx, "gateway.resume", "")
	defer span.End()
	sess := c.hub.lookup(in.GatewaySessionID, c.s.o.Now())
	if sess == nil {
		c.close(delivery.CloseInvalidSession)
		return
	}
	a, ok := c.authenticate(ctx, in.APIToken, in.DPoP)
	if !ok {
		return
	}
	span.SetAttributes(attrAgent.String(a.ID))
	if a.ID != sess.agentID {
		c.close(delivery.CloseInvalidSession)
		return
	}
	cons, err := c.s.store.GetConsumer(ctx, a.ID, sess.consumer)
	if errors.Is(err, delivery.ErrNotFound) {
		c.close(delivery.CloseInvalidSession)
		return
	}
	if err != nil {
		c.fail(ctx, err)
		return
	}
	if cons.SessionID != sess.id {
		c.hub.drop(sess)
		c.close(delivery.CloseTakenOver)
		return
	}
	head, err := c.s.store.HeadSeq(ctx, a.ID)
	if err != nil {
		c.fail(ctx, err)
		return
	}
	if in.Cursor < 0 || in.Cursor > head {
		c.close(delivery.CloseInvalidSeq)
		return
	}
	if in.Cursor > cons.AckedSeq {
		st, err := c.s.Ack(ctx, a, sess.consumer, in.Cursor)
		if !c.acked(ctx, err) {
			return
		}
		cons.AckedSeq = st.AckedSeq
	}
	c.lost = c.hub.takeResent(sess, in.Cursor)
	old, ok := c.hub.resume(c, sess)
	if !ok {
		c.close(delivery.CloseInvalidSession)
		return
	}
	if old != nil {
		// A connection of the session still open here: the agent moved
		// on, or someone else used its session id; either way it lost
		// the consumer.
		old.close(delivery.CloseTakenOver)
	}
	c.agent, c.tokenHash, c.up = a, tokenHash(in.APIToken), true
	c.s.log.InfoContext(ctx, "delivery: gateway session resumed", "agent_id", a.ID, "consumer", sess.consumer,
		"session", sess.id, "cursor", in.Cursor, "acked_seq", cons.AckedSeq, "head_seq", head)
	if c.sendOp(delivery.OpResumed, delivery.GatewayResumed{GatewaySessionID: sess.id, Cursor: cons.AckedSeq, HeadSeq: head}) {
		c.startPump(sess)
	}
}

// acked reports whether an acknowledgement went through; one beyond the
// head closes the connection 4007, a failure 4000.
func (c *gwConn) acked(ctx context.Context, err error) bool {
	var p *delivery.Problem
	switch {
	case err == nil:
		return true
	case errors.As(err, &p) && p.Status == http.StatusBadRequest:
		c.close(delivery.CloseInvalidSeq)
	default:
		c.fail(ctx, err)
	}
	return false
}

// standing checks that a session may go on: its API token is not
// revoked (else 4017), its instance still pulls (else 4016), and it
// still holds its consumer (else 4015).
func (c *gwConn) standing(ctx context.Context) bool {
	tok, err := c.s.store.FindAPIToken(ctx, c.tokenHash)
	switch {
	case errors.Is(err, delivery.ErrNotFound) || err == nil && !tok.RevokedAt.IsZero():
		c.close(delivery.CloseTokenRevoked)
		return false
	case err != nil:
		c.fail(ctx, err)
		return false
	}
	if !c.pulls(ctx) {
		return false
	}
	_, ok := c.holds(ctx)
	return ok
}

// pulls checks that the agent's instance is still installed for pull
// delivery, else closes 4016.
func (c *gwConn) pulls(ctx context.Context) bool {
	inst, err := c.s.runs.GetInstance(ctx, c.agent.TenantID, c.agent.ID)
	switch {
	case errors.Is(err, gateway.ErrNotFound) || err == nil && !inst.Pulls():
		c.close(delivery.CloseAgentDisabled)
		return false
	case err != nil:
		c.fail(ctx, err)
		return false
	}
	return true
}

// holds reads the session's consumer and checks that the session still
// holds it, else closes 4015 (another session, maybe on another
// replica, took it over).
func (c *gwConn) holds(ctx context.Context) (delivery.Consumer, bool) {
	sess := c.session()
	cons, err := c.s.store.GetConsumer(ctx, c.agent.ID, sess.consumer)
	if err != nil {
		c.fail(ctx, err)
		return cons, false
	}
	if cons.SessionID != sess.id {
		c.hub.drop(sess)
		c.close(delivery.CloseTakenOver)
		return cons, false
	}
	return cons, true
}

// heartbeat stores the agent's heartbeat (a refused one is answered with
// an error frame; the connection stays) and answers heartbeat_ack,
// after checking that the session may go on.
func (c *gwConn) heartbeat(d json.RawMessage) {
	var in struct {
		LastSeq int64           `json:"last_seq"`
		Agent   json.RawMessage `json:"agent"`
	}
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	if !c.standing(c.ctx) {
		return
	}
	if len(in.Agent) > 0 && string(in.Agent) != "null" {
		h, errs := delivery.DecodeHeartbeat(in.Agent)
		var err error
		if errs != nil {
			err = validationFailed("the heartbeat's agent member breaks its rules", errs...)
		} else {
			_, err = c.s.Heartbeat(c.ctx, c.agent, h)
		}
		if err != nil && !c.opError(c.ctx, delivery.OpHeartbeat, "", err) {
			return
		}
	}
	c.sendOp(delivery.OpHeartbeatAck, delivery.GatewayHeartbeatAck{IntervalMS: c.s.o.HeartbeatInterval.Milliseconds()})
}

// ack acknowledges the consumer's events up to seq, cumulatively.
func (c *gwConn) ack(d json.RawMessage) {
	var in delivery.GatewayAck
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	_, err := c.s.Ack(c.ctx, c.agent, c.session().consumer, in.Seq)
	if c.acked(c.ctx, err) {
		c.kickPump() // room in the window
	}
}

// runUpdate applies a run.update; only a refusal is answered.
func (c *gwConn) runUpdate(d json.RawMessage) {
	var in delivery.GatewayRunUpdate
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	ctx, span := c.s.tel.span(c.ctx, "gateway.run.update", c.agent.ID)
	defer span.End()
	_, err := c.s.UpdateRun(ctx, c.agent, in.RunID, in.InvocationToken, delivery.RunPatch{BaseVersion: in.BaseVersion, Ops: in.Ops})
	if err != nil {
		c.opError(ctx, delivery.OpRunUpdate, in.Ref, err)
	}
}

// autocompleteResult answers a result: this platform asks for none yet,
// so no request waits for its ref.
func (c *gwConn) autocompleteResult(d json.RawMessage) {
	var in delivery.GatewayAutocompleteResult
	if gwDecode(d, &in) != nil {
		c.close(delivery.CloseDecodeError)
		return
	}
	c.opError(c.ctx, delivery.OpAutocompleteResult, in.Ref, notFound("no autocomplete request waits for this ref"))
}

// opError answers a refused operation with an error frame: the
// problem's code, status and detail (the fields at fault named in it),
// and the run with base_version_conflict.
func (c *gwConn) opError(ctx context.Context, op, ref string, err error) bool {
	p := c.s.problemOf(ctx, err)
	c.s.tel.refused.WithLabelValues(p.Code).Inc()
	detail := p.Detail
	if len(p.Errors) > 0 {
		ptrs := make([]string, 0, len(p.Errors))
		for _, fe := range p.Errors {
			ptrs = append(ptrs, fe.Pointer+" "+fe.Code)
		}
		detail += " (" + strings.Join(ptrs, ", ") + ")"
	}
	if p.CorrelationID != "" {
		detail = strings.TrimSpace(detail + " correlation_id " + p.CorrelationID)
	}
	return c.sendOp(delivery.OpError, delivery.GatewayError{Op: op, Ref: ref, Code: p.Code, Status: p.Status, Detail: detail,
		Current: p.Current})
}

// sendLost sends the events of c.lost once more, each with a fresh
// token: the run's newest is then one the agent reads (unless this
// connection breaks too, and the next resume sends them again).
func (c *gwConn) sendLost(sess *gwSession) bool {
	s, ctx := c.s, c.ctx
	for _, seq := range c.lost {
		stored, err := s.store.ReadEvents(ctx, c.agent.ID, seq-1, 1)
		if err != nil {
			c.fail(ctx, err)
			return false
		}
		if len(stored) == 0 || stored[0].Seq != seq {
			continue
		}
		events, err := s.deliver(ctx, sess.consumer, stored, seq, s.o.Now())
		if err != nil {
			c.fail(ctx, err)
			return false
		}
		for _, e := range events {
			if !c.sendOp(delivery.OpEvent, e) {
				return false
			}
			c.hub.noteResent(sess, e.Seq)
		}
	}
	return true
}

func (c *gwConn) startPump(sess *gwSession) {
	c.pumped = make(chan struct{})
	go func() {
		defer close(c.pumped)
		c.pump(sess)
	}()
}

// pump sends the consumer's events: first every event after its
// acknowledged sequence (those sent before to another connection again,
// marked redelivered), then catchup_complete, then new events as they
// are stored, and again those not acknowledged within the ack timeout.
// At most Options.GatewayMaxInFlight events are out beyond the
// acknowledged sequence. It wakes on the store's news of the agent
// (checking then that the agent still pulls), on the session's acks, on
// the redelivery's due time and on every sweep.
func (c *gwConn) pump(sess *gwSession) {
	s, ctx := c.s, c.ctx
	window := int64(s.o.GatewayMaxInFlight)
	resend, caughtUp, woken := true, false, false
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if !c.sendLost(sess) {
		return
	}
	for {
		news := s.watch.wait(c.agent.ID)
		if woken && !c.pulls(ctx) {
			return
		}
		cons, ok := c.holds(ctx)
		if !ok {
			return
		}
		now := s.o.Now()
		out := cons.SentSeq - cons.AckedSeq
		var due time.Time
		limit := min(delivery.MaxPage, window-out)
		if out > 0 {
			due = cons.SentAt.Add(s.o.AckTimeout)
		}
		if resend || out > 0 && !now.Before(due) {
			limit, due = min(delivery.MaxPage, window), time.Time{}
		}
		if limit > 0 {
			page, err := s.NextEvents(ctx, c.agent, sess.consumer, Batch{Limit: int(limit), Resend: resend})
			if err != nil {
				c.fail(ctx, err)
				return
			}
			resend = false
			for _, e := range page.Events {
				if !c.sendOp(delivery.OpEvent, e) {
					return
				}
				if e.Redelivered {
					c.hub.noteResent(sess, e.Seq)
				}
			}
			n := len(page.Events)
			if !caughtUp && (n == 0 || page.Events[n-1].Seq >= page.HeadSeq) {
				caughtUp = true
				if !c.sendOp(delivery.OpCatchupComplete, delivery.GatewayCatchupComplete{HeadSeq: page.HeadSeq}) {
					return
				}
			}
			if n > 0 {
				continue
			}
		}
		var fire <-chan time.Time
		c.due.Store(0)
		if !due.IsZero() {
			// A sweep that looked before the store would miss it: the
			// time it saw is looked at here.
			if c.due.Store(due.UnixNano()); !s.o.Now().Before(due) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(due.Sub(now))
			} else {
				timer.Reset(due.Sub(now))
			}
			fire = timer.C
		}
		woken = false
		select {
		case <-ctx.Done():
			return
		case <-news:
			woken = true
		case <-c.kick:
		case <-fire:
		}
	}
}
