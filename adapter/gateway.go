package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

// Errors of the gateway, matched with errors.Is.
var (
	// ErrGatewayStopped: the gateway will not connect again, because the
	// platform closed with a code an agent stops on (errors.As gives the
	// CloseReason), the session acts for another principal, the
	// platform refused the upgrade, or Close was called.
	ErrGatewayStopped = errors.New("adapter: the gateway stopped")
	// ErrWrongPrincipal: ready named a principal other than the agent.
	ErrWrongPrincipal = errors.New("adapter: the gateway session acts for another principal")
	// ErrGatewayNotConnected: nothing was sent, because no session is up.
	ErrGatewayNotConnected = errors.New("adapter: the gateway is not connected")
	// ErrRunUpdateUnconfirmed: run.update was sent, but the connection
	// ended before its error window passed; load the run to learn its
	// version.
	ErrRunUpdateUnconfirmed = errors.New("adapter: the connection ended before run.update was confirmed")
)

// CloseReason is how the platform (or the adapter itself, with 1000)
// ended the gateway's last connection. It is an error, so that
// errors.As finds it in the error a stopped gateway returns.
type CloseReason struct {
	Code   int
	Reason string
}

func (r CloseReason) Error() string {
	s := "gateway closed with " + strconv.Itoa(r.Code)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// GatewayOpError is the platform's refusal of an operation the adapter
// sent (an error frame): Op and Ref name it, Status and Code are a
// problem's, Current is the run as it is now with base_version_conflict.
type GatewayOpError struct {
	Op      string
	Code    string
	Detail  string
	Ref     string
	Status  int
	Current *delivery.Run
}

func (e *GatewayOpError) Error() string {
	s := "adapter: gateway refused " + e.Op + " (ref " + e.Ref + "): " + strconv.Itoa(e.Status) + " " + e.Code
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// GatewayOptions configure a Gateway. AgentID, Consumer and
// Credentials.APIToken are required; everything else has a default.
type GatewayOptions struct {
	// AgentID is the agent the API token belongs to; a session whose
	// ready names another principal is closed and the gateway stops.
	AgentID string
	// Consumer is the named cursor the session reads (see delivery).
	Consumer string
	// Credentials are the agent's API token, sent in identify and
	// resume, and the key a DPoP-bound token is bound to (nil: a bearer
	// token, and no proof is sent).
	Credentials Credentials

	// Settings: nil means DefaultSettings. The gateway reads
	// ReconnectBackoffBase, ReconnectBackoffCap, WSMaxFrameBytes,
	// AutocompleteMaxChoices and HTTPTimeout (the bound of a dial and
	// its handshake up to ready).
	Settings *Settings
	// Clock decides every wait (heartbeats, backoff, resume window,
	// run.update's error window): nil means SystemClock.
	Clock Clock
	// Rand returns a number in [0, 1) for jitter: nil means math/rand/v2.
	Rand func() float64
	// Heartbeat is called before each heartbeat for the agent's state
	// (the member agent); nil sends heartbeats without it.
	Heartbeat func() delivery.Heartbeat
	// Logger: nil discards. Nothing secret is logged.
	Logger *slog.Logger
	// HTTPClient dials the WebSocket (its Transport's TLS settings, for
	// one): nil means http.DefaultClient.
	HTTPClient *http.Client
	// UserAgent, when set, is sent with the upgrade request.
	UserAgent string
	// RunUpdateErrorWait is how long SendRunUpdate waits for an error
	// frame before it takes silence for success (default 2s).
	RunUpdateErrorWait time.Duration
	// MaxBufferedEvents bounds events read but not yet received (default
	// 1024); when full, the gateway stops reading until Receive.
	MaxBufferedEvents int
}

// Defaults of GatewayOptions.
const (
	DefaultRunUpdateErrorWait = 2 * time.Second
	DefaultMaxBufferedEvents  = 1024
)

// Bounds the gateway puts on what the platform tells it.
const (
	gwMinHeartbeat      = 100 * time.Millisecond // a smaller interval would flood the platform
	gwDefaultHeartbeat  = 30 * time.Second       // when neither hello nor ready names one
	gwMaxRetryAfter     = time.Hour              // the longest wait a 4008 reason may ask for
	gwRetryAfterKey     = "retry_after_ms="
	gwReasonHeartbeat   = "heartbeat_ack_missing"
	gwReasonResync      = "resync_required"
	gwReasonPrincipal   = "principal_mismatch"
	gwReasonClosed      = "closed_by_adapter"
	gwReasonFrameTooBig = "frame_too_large"
)

// Gateway is an agent's session with the platform's WebSocket gateway.
// It keeps the session up across connections: it identifies, resumes
// within the resume window (with the highest sequence the adapter
// settled as cursor), sends heartbeats, and reacts to each close code as
// delivery.ReactionTo says, until a code it stops on or Close.
//
// Events come out of Receive; Ack acknowledges them cumulatively. An
// event is settled, and acknowledged to the platform, only when the
// adapter has acknowledged it; cursor frames settle sequences the
// session sends no event for. Every method is safe for concurrent use.
type Gateway struct {
	url       string // ws or wss
	agentID   string
	consumer  string
	token     secret.Value
	key       *dpop.Key
	settings  Settings
	clock     Clock
	rand      func() float64
	heartbeat func() delivery.Heartbeat
	log       *slog.Logger
	http      *http.Client
	userAgent string
	errWait   time.Duration
	maxQueue  int

	cancel  context.CancelFunc
	done    chan struct{} // closed when the session goroutine ended
	readied chan struct{} // closed at the first ready
	once    sync.Once

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced when the queue or the state changes
	conn         *gwConn       // nil while no session is up
	sessionID    string
	resumeWindow time.Duration
	closedAt     time.Time // when the last connection ended
	queue        []delivery.Event
	queued       map[string]int // event id -> index in queue
	stalled      bool           // the reader waits for room in the queue
	pending      []int64        // sorted: delivered seqs the adapter has not acknowledged
	adapterAck   int64          // highest seq the adapter acknowledged
	cursor       int64          // highest seq a cursor frame settled
	known        int64          // highest seq the platform told of
	lastSeq      int64          // highest event seq received
	waiters      map[string]chan *GatewayOpError
	lastErr      error
	stopErr      error
	reason       *CloseReason
}

// DialGateway connects to the gateway named by info (resolved against
// baseURL; http becomes ws and https wss) and returns once the first
// session is ready. It retries a failed connection as a lost one would
// be, until ctx ends or the platform closes with a code the agent stops
// on; ctx bounds only the dial. Clear text (ws) is allowed only to a
// loopback host. Close the Gateway when done.
func DialGateway(ctx context.Context, baseURL string, info delivery.GatewayInfo, opts *GatewayOptions) (*Gateway, error) {
	g, err := newGateway(baseURL, info, opts)
	if err != nil {
		return nil, err
	}
	g.start()
	select {
	case <-g.readied:
		return g, nil
	case <-g.done:
		return nil, g.Err()
	case <-ctx.Done():
		g.mu.Lock()
		last := g.lastErr
		g.mu.Unlock()
		_ = g.Close()
		if last != nil {
			return nil, fmt.Errorf("adapter: dial gateway: %w (last attempt: %w)", ctx.Err(), last)
		}
		return nil, fmt.Errorf("adapter: dial gateway: %w", ctx.Err())
	}
}

func newGateway(baseURL string, info delivery.GatewayInfo, opts *GatewayOptions) (*Gateway, error) {
	if opts == nil {
		return nil, errors.New("adapter: gateway: options are required (agent, consumer, API token)")
	}
	switch {
	case opts.AgentID == "":
		return nil, errors.New("adapter: gateway: AgentID is required")
	case opts.Consumer == "":
		return nil, errors.New("adapter: gateway: Consumer is required")
	case opts.Credentials.APIToken.IsZero():
		return nil, errors.New("adapter: gateway: Credentials.APIToken is required")
	}
	if len(info.ProtocolVersions) > 0 && !slices.Contains(info.ProtocolVersions, delivery.ProtocolVersion) {
		return nil, fmt.Errorf("adapter: gateway: the platform speaks protocol versions %q, not %q",
			info.ProtocolVersions, delivery.ProtocolVersion)
	}
	u, err := gwURL(baseURL, info.URL)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		url: u, agentID: opts.AgentID, consumer: opts.Consumer, token: opts.Credentials.APIToken, key: opts.Credentials.DPoP,
		settings: DefaultSettings(), clock: opts.Clock, rand: opts.Rand, heartbeat: opts.Heartbeat,
		log: opts.Logger, http: opts.HTTPClient, userAgent: opts.UserAgent,
		errWait: opts.RunUpdateErrorWait, maxQueue: opts.MaxBufferedEvents,
		done: make(chan struct{}), readied: make(chan struct{}), changed: make(chan struct{}),
		queued: map[string]int{}, waiters: map[string]chan *GatewayOpError{},
	}
	if opts.Settings != nil {
		g.settings = *opts.Settings
	}
	def := DefaultSettings()
	if g.settings.WSMaxFrameBytes <= 0 {
		g.settings.WSMaxFrameBytes = def.WSMaxFrameBytes
	}
	if g.settings.ReconnectBackoffBase <= 0 {
		g.settings.ReconnectBackoffBase = def.ReconnectBackoffBase
	}
	if g.settings.ReconnectBackoffCap < g.settings.ReconnectBackoffBase {
		g.settings.ReconnectBackoffCap = max(def.ReconnectBackoffCap, g.settings.ReconnectBackoffBase)
	}
	if g.settings.HTTPTimeout <= 0 {
		g.settings.HTTPTimeout = def.HTTPTimeout
	}
	if g.settings.AutocompleteMaxChoices <= 0 {
		g.settings.AutocompleteMaxChoices = def.AutocompleteMaxChoices
	}
	if g.clock == nil {
		g.clock = SystemClock{}
	}
	if g.rand == nil {
		g.rand = rand.Float64
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.log = g.log.With("agent", g.agentID, "consumer", g.consumer)
	if g.http == nil {
		g.http = http.DefaultClient
	}
	if g.errWait <= 0 {
		g.errWait = DefaultRunUpdateErrorWait
	}
	if g.maxQueue <= 0 {
		g.maxQueue = DefaultMaxBufferedEvents
	}
	return g, nil
}

// gwURL resolves a gateway URL (Discovery.Gateway.URL, maybe
// relative) against the platform's base URL and turns http into ws and
// https into wss. It refuses clear text (http, ws) to any host but a
// loopback one (127.0.0.1, ::1, localhost), so that the API token never
// crosses a network unencrypted.
func gwURL(baseURL, gatewayURL string) (string, error) {
	base, err := url.Parse(baseURL)
	if err != nil || !base.IsAbs() || base.Host == "" {
		return "", errors.New("adapter: gateway: the base URL is not an absolute URL")
	}
	ref, err := url.Parse(gatewayURL)
	if err != nil || gatewayURL == "" {
		return "", errors.New("adapter: gateway: the gateway URL is not a URL")
	}
	u := base.ResolveReference(ref)
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("adapter: gateway: scheme %q is not http(s) or ws(s)", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("adapter: gateway: the gateway URL may not carry user information")
	}
	if u.Scheme == "ws" && !IsLoopbackHost(u.Hostname()) {
		return "", fmt.Errorf("adapter: gateway: clear text to %s: only a loopback host may be reached without TLS", u.Hostname())
	}
	u.Fragment = ""
	return u.String(), nil
}

// String names the gateway; it never shows the token.
func (g *Gateway) String() string {
	return "Gateway{agent=" + g.agentID + " consumer=" + g.consumer + " url=" + g.url + "}"
}

// GoString is String.
func (g *Gateway) GoString() string { return g.String() }

func (g *Gateway) start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go g.gwRun(ctx)
}

// Receive blocks until at least one event arrived and returns every
// event read since the last call (a newer delivery of an event still
// waiting replaces it, with its fresher token). Events arrive across
// reconnects. An ephemeral event (delivery.Ephemeral) may have seq 0;
// every other has a seq. When the gateway stopped, Receive returns an
// error wrapping ErrGatewayStopped, and events not yet received are
// dropped: unacknowledged, the platform delivers them again.
func (g *Gateway) Receive(ctx context.Context) ([]delivery.Event, error) {
	for {
		g.mu.Lock()
		if g.stopErr != nil {
			err := g.stopErr
			g.mu.Unlock()
			return nil, err
		}
		if len(g.queue) > 0 {
			evs := g.queue
			g.queue = nil
			clear(g.queued)
			g.gwNotifyLocked()
			g.mu.Unlock()
			return evs, nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ack acknowledges every event up to and including seq: the adapter has
// settled them (see package doc). It is cumulative (a lower seq than
// before changes nothing) and remembered: the gateway sends it now when
// a session is up, and otherwise resumes from it. The platform learns
// of a seq only up to the first event delivered above the previous ack
// and not yet acknowledged.
func (g *Gateway) Ack(ctx context.Context, seq int64) error {
	if seq < 0 {
		return fmt.Errorf("adapter: gateway: ack of negative seq %d", seq)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	if g.stopErr != nil {
		err := g.stopErr
		g.mu.Unlock()
		return err
	}
	if seq > g.adapterAck {
		g.adapterAck = seq
		i, _ := slices.BinarySearch(g.pending, seq+1)
		g.pending = g.pending[i:]
	}
	g.mu.Unlock()
	g.gwSendAck()
	return nil
}

// SendRunUpdate sends run.update: ops on the run, built on baseVersion,
// with the run's newest invocation token. The platform answers only a
// refusal (an error frame with the update's ref), so SendRunUpdate waits
// RunUpdateErrorWait on the Clock for one: it returns the refusal as a
// *GatewayOpError (with Current on base_version_conflict), and nil when
// none came in time, after which the run's version is baseVersion+1. A
// refusal later than that is logged, and the next update's
// base_version_conflict brings the run back in step. It returns
// ErrGatewayNotConnected when no session is up (nothing was sent), and
// ErrRunUpdateUnconfirmed when the connection ended within the window.
func (g *Gateway) SendRunUpdate(ctx context.Context, runID string, token secret.Value, baseVersion int64, ops []delivery.PatchOp) error {
	if runID == "" {
		return errors.New("adapter: gateway: run.update without a run id")
	}
	ref := NewID()
	ch := make(chan *GatewayOpError, 1)
	g.mu.Lock()
	if g.stopErr != nil {
		err := g.stopErr
		g.mu.Unlock()
		return err
	}
	c := g.conn
	if c == nil {
		g.mu.Unlock()
		return ErrGatewayNotConnected
	}
	g.waiters[ref] = ch
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.waiters, ref)
		g.mu.Unlock()
	}()

	if ops == nil {
		ops = []delivery.PatchOp{}
	}
	frame, err := gwEncode(delivery.OpRunUpdate, delivery.GatewayRunUpdate{Ref: ref, RunID: runID,
		InvocationToken: token.Reveal(), BaseVersion: baseVersion, Ops: ops})
	if err != nil {
		return err
	}
	if err := c.write(frame); err != nil {
		return fmt.Errorf("%w: %w", ErrGatewayNotConnected, err)
	}

	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	elapsed := make(chan struct{})
	go func() {
		if g.clock.Sleep(waitCtx, g.errWait) == nil {
			close(elapsed)
		}
	}()
	select {
	case opErr := <-ch:
		return opErr
	case <-elapsed:
		return nil
	case <-c.done:
		select {
		case opErr := <-ch:
			return opErr
		default:
			return ErrRunUpdateUnconfirmed
		}
	case <-ctx.Done():
		return fmt.Errorf("adapter: gateway: run.update %s: %w", ref, ctx.Err())
	}
}

// SendAutocompleteResult answers a command.autocomplete_requested event
// by its ref. More choices than Settings.AutocompleteMaxChoices is an
// error and sends nothing. A refusal (an error frame) is only logged:
// the platform answers the person with no choices.
func (g *Gateway) SendAutocompleteResult(ctx context.Context, ref string, choices []delivery.SelectOption) error {
	if ref == "" {
		return errors.New("adapter: gateway: autocomplete result without a ref")
	}
	if len(choices) > g.settings.AutocompleteMaxChoices {
		return fmt.Errorf("adapter: gateway: %d autocomplete choices, at most %d", len(choices), g.settings.AutocompleteMaxChoices)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	c, stopErr := g.conn, g.stopErr
	g.mu.Unlock()
	if stopErr != nil {
		return stopErr
	}
	if c == nil {
		return ErrGatewayNotConnected
	}
	if choices == nil {
		choices = []delivery.SelectOption{}
	}
	if err := c.send(delivery.OpAutocompleteResult, delivery.GatewayAutocompleteResult{Ref: ref, Choices: choices}); err != nil {
		return fmt.Errorf("%w: %w", ErrGatewayNotConnected, err)
	}
	return nil
}

// CloseReason reports how the gateway stopped, once it has: the close
// code and reason that stopped it (1000 for Close and for a session of
// another principal). ok is false while it runs, and when it stopped for
// another cause (the platform refused the upgrade).
func (g *Gateway) CloseReason() (reason CloseReason, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason == nil {
		return CloseReason{}, false
	}
	return *g.reason, true
}

// Done is closed when the gateway has stopped and will not connect again.
func (g *Gateway) Done() <-chan struct{} { return g.done }

// Err is nil while the gateway runs, and then why it stopped (an error
// wrapping ErrGatewayStopped).
func (g *Gateway) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopErr
}

// Close ends the session with close code 1000 and stops reconnecting.
// Receive, Ack and the sends then return ErrGatewayStopped.
func (g *Gateway) Close() error {
	g.once.Do(func() {
		g.mu.Lock()
		c := g.conn
		g.mu.Unlock()
		if c != nil {
			c.closeWith(gwEnd{code: delivery.CloseNormal, reason: gwReasonClosed, reaction: delivery.Stop})
		}
		g.cancel()
	})
	<-g.done
	return nil
}

// gwEnd is how one connection ended and what to do next.
type gwEnd struct {
	code     int // a close code, 0 when the connection broke without one
	reason   string
	reaction delivery.Reaction
	err      error // why it ended, for the log and for a stop
	readied  bool  // the connection reached ready or resumed
}

// gwRun is the session goroutine: it connects, serves a connection until
// it ends, and reconnects as the end's reaction says.
func (g *Gateway) gwRun(ctx context.Context) {
	defer close(g.done)
	attempt := 0
	var wait time.Duration
	for {
		if wait > 0 && g.clock.Sleep(ctx, wait) != nil {
			g.gwStop(gwEnd{code: delivery.CloseNormal, reason: gwReasonClosed, reaction: delivery.Stop})
			return
		}
		end := g.gwConnect(ctx)
		if ctx.Err() != nil {
			end = gwEnd{code: delivery.CloseNormal, reason: gwReasonClosed, reaction: delivery.Stop}
		}
		if end.readied {
			attempt = 0
		}
		g.mu.Lock()
		g.lastErr = end.err
		if end.reaction == delivery.Identify {
			g.sessionID = ""
		}
		g.mu.Unlock()
		if end.reaction == delivery.Stop {
			g.gwStop(end)
			return
		}
		switch end.reaction {
		case delivery.ResumeJittered:
			// The platform restarts: spread the reconnects of its agents.
			attempt = 0
			wait = time.Duration(g.rand() * float64(g.settings.ReconnectBackoffBase))
		case delivery.Wait:
			if d, ok := gwRetryAfter(end.reason); ok {
				wait = d
				break
			}
			wait = g.gwBackoff(attempt)
		default:
			wait = g.gwBackoff(attempt)
		}
		attempt++
		g.log.Info("gateway connection ended; reconnecting", "code", end.code, "reason", end.reason,
			"err", end.err, "wait", wait, "attempt", attempt)
	}
}

// gwBackoff is full jitter: uniform in [0, min(cap, base·2^attempt)).
func (g *Gateway) gwBackoff(attempt int) time.Duration {
	d := g.settings.ReconnectBackoffBase
	for i := 0; i < attempt && d < g.settings.ReconnectBackoffCap; i++ {
		d *= 2
	}
	d = min(d, g.settings.ReconnectBackoffCap)
	return time.Duration(g.rand() * float64(d))
}

// gwRetryAfter reads the wait a 4008 close reason names
// ("rate_limited retry_after_ms=<n>").
func gwRetryAfter(reason string) (time.Duration, bool) {
	i := strings.Index(reason, gwRetryAfterKey)
	if i < 0 {
		return 0, false
	}
	digits := reason[i+len(gwRetryAfterKey):]
	if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
		digits = digits[:j]
	}
	ms, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	if ms > gwMaxRetryAfter.Milliseconds() {
		return gwMaxRetryAfter, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

func (g *Gateway) gwStop(end gwEnd) {
	reason := CloseReason{Code: end.code, Reason: end.reason}
	var err error
	switch {
	case end.code == 0 && end.err != nil:
		err = fmt.Errorf("%w: %w", ErrGatewayStopped, end.err)
	case end.err != nil:
		err = fmt.Errorf("%w: %w: %w", ErrGatewayStopped, end.err, reason)
	default:
		err = fmt.Errorf("%w: %w", ErrGatewayStopped, reason)
	}
	g.mu.Lock()
	if end.code != 0 {
		g.reason = &reason
	}
	g.stopErr = err
	g.gwNotifyLocked()
	g.mu.Unlock()
	if end.reason != gwReasonClosed {
		g.log.Warn("gateway stopped", "code", end.code, "reason", end.reason, "err", end.err)
	}
}

func (g *Gateway) gwNotifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// gwConn is one WebSocket connection.
type gwConn struct {
	ws   *websocket.Conn
	done chan struct{} // closed when the connection ended

	mu    sync.Mutex
	local *gwEnd // set by whoever closed the connection on purpose

	interval atomic.Int64 // heartbeat interval, ns
	hbSent   atomic.Int64 // heartbeats sent
	hbAcked  atomic.Int64 // the hbSent an ack last answered

	sentAck int64 // highest ack the platform knows of (guarded by Gateway.mu)
}

// send writes one frame. Writes never take a caller's context: with
// websocket, an ended context closes the connection. A write to a peer
// that stopped reading blocks until the heartbeat check closes it.
func (c *gwConn) send(op string, d any) error {
	frame, err := gwEncode(op, d)
	if err != nil {
		return err
	}
	return c.write(frame)
}

func (c *gwConn) write(frame []byte) error {
	if c == nil || c.ws == nil {
		return ErrGatewayNotConnected
	}
	return c.ws.Write(context.Background(), websocket.MessageText, frame)
}

func gwEncode(op string, d any) ([]byte, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("adapter: gateway: encode %s: %w", op, err)
	}
	return json.Marshal(delivery.Frame{Op: op, D: data})
}

// closeWith closes the connection with a close frame, once, recording
// why; abort does so without the closing handshake (a peer that does
// not answer).
func (c *gwConn) closeWith(end gwEnd) {
	if c.setLocal(end) && c.ws != nil {
		_ = c.ws.Close(websocket.StatusCode(end.code), end.reason)
	}
}

func (c *gwConn) abort(end gwEnd) {
	if c.setLocal(end) && c.ws != nil {
		_ = c.ws.CloseNow()
	}
}

func (c *gwConn) setLocal(end gwEnd) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local != nil {
		return false
	}
	c.local = &end
	return true
}

func (c *gwConn) localEnd() *gwEnd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local
}

// gwAfter calls f after d on clock unless stop is called first; stop
// waits for f when it already runs.
func gwAfter(clock Clock, d time.Duration, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if clock.Sleep(ctx, d) == nil && ctx.Err() == nil {
			f()
		}
	}()
	return func() { cancel(); <-done }
}

// gwConnect dials, performs the handshake and serves one connection
// until it ends.
func (g *Gateway) gwConnect(ctx context.Context) (end gwEnd) {
	dialCtx, cancelDial := context.WithCancel(ctx)
	defer cancelDial()
	timedOut := atomic.Bool{}
	stopTimer := gwAfter(g.clock, g.settings.HTTPTimeout, func() { timedOut.Store(true); cancelDial() })
	hdr := http.Header{}
	if g.userAgent != "" {
		hdr.Set("User-Agent", g.userAgent)
	}
	ws, resp, err := websocket.Dial(dialCtx, g.url, &websocket.DialOptions{HTTPClient: g.http, HTTPHeader: hdr})
	if err != nil {
		stopTimer()
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 &&
			resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
			return gwEnd{reaction: delivery.Stop,
				err: fmt.Errorf("the platform refused the WebSocket upgrade with HTTP %d", resp.StatusCode)}
		}
		if timedOut.Load() {
			err = fmt.Errorf("no connection within %s", g.settings.HTTPTimeout)
		}
		return gwEnd{reaction: delivery.Reconnect, err: fmt.Errorf("dial: %w", err)}
	}
	ws.SetReadLimit(g.settings.WSMaxFrameBytes)
	c := &gwConn{ws: ws, done: make(chan struct{})}
	stopTimer()
	// The handshake up to ready is bounded like one HTTP attempt.
	stopTimer = gwAfter(g.clock, g.settings.HTTPTimeout, func() {
		c.abort(gwEnd{reaction: delivery.Reconnect, err: fmt.Errorf("no ready within %s", g.settings.HTTPTimeout)})
	})

	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	defer func() {
		stopTimer()
		stopHB()
		_ = ws.CloseNow()
		hb.Wait()
		g.mu.Lock()
		if g.conn == c {
			g.conn = nil
		}
		g.closedAt = g.clock.Now()
		g.mu.Unlock()
		close(c.done)
	}()

	interval, end, ok := g.gwHandshake(ctx, c)
	if !ok {
		return end
	}
	stopTimer()
	c.interval.Store(int64(max(interval, gwMinHeartbeat)))
	hb.Go(func() { g.gwHeartbeats(hbCtx, c) })
	g.gwSendAck()
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			end = g.gwEndOf(c, err)
			end.readied = true
			return end
		}
		if end, ok := g.gwDispatch(ctx, c, typ, data); !ok {
			c.closeWith(end)
			end.readied = true
			return end
		}
	}
}

// gwHandshake reads hello, sends identify or resume, and reads until
// ready or resumed; it returns the heartbeat interval.
func (g *Gateway) gwHandshake(ctx context.Context, c *gwConn) (time.Duration, gwEnd, bool) {
	f, end, ok := g.gwReadFrame(ctx, c)
	if !ok {
		return 0, end, false
	}
	var hello delivery.GatewayHello
	if f.Op != delivery.OpHello || gwDecode(f.D, &hello) != nil {
		return 0, g.gwProtocolError(c, "the first frame is not hello"), false
	}

	now := g.clock.Now()
	g.mu.Lock()
	resume := g.sessionID != "" && now.Sub(g.closedAt) < g.resumeWindow
	sessionID, cursor := g.sessionID, g.gwSettledLocked()
	g.mu.Unlock()

	proof := ""
	if g.key != nil {
		var err error
		proof, err = g.key.Proof(dpop.Claims{Method: http.MethodGet, URL: g.url, AccessToken: g.token.Reveal(),
			Nonce: hello.DPoPNonce, IssuedAt: now, ID: NewID()})
		if err != nil {
			end := gwEnd{code: delivery.CloseNormal, reason: "proof_failed", reaction: delivery.Stop, err: err}
			c.closeWith(end)
			return 0, end, false
		}
	}
	var err error
	if resume {
		err = c.send(delivery.OpResume, delivery.GatewayResume{GatewaySessionID: sessionID, APIToken: g.token.Reveal(),
			DPoP: proof, Cursor: cursor})
	} else {
		err = c.send(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: g.token.Reveal(), DPoP: proof,
			Consumer: g.consumer, ProtocolVersion: delivery.ProtocolVersion})
	}
	if err != nil {
		return 0, g.gwEndOf(c, err), false
	}

	for {
		f, end, ok := g.gwReadFrame(ctx, c)
		if !ok {
			return 0, end, false
		}
		switch f.Op {
		case delivery.OpReady:
			var r delivery.GatewayReady
			if gwDecode(f.D, &r) != nil || r.GatewaySessionID == "" {
				return 0, g.gwProtocolError(c, "undecodable ready"), false
			}
			if r.Principal.ID != g.agentID {
				end := gwEnd{code: delivery.CloseNormal, reason: gwReasonPrincipal, reaction: delivery.Stop,
					err: fmt.Errorf("%w: ready names %q, the agent is %q", ErrWrongPrincipal, r.Principal.ID, g.agentID)}
				c.closeWith(end)
				return 0, end, false
			}
			g.mu.Lock()
			g.sessionID = r.GatewaySessionID
			g.resumeWindow = gwMillis(r.ResumeWindowMS, hello.ResumeWindowMS, 0)
			g.known = max(r.HeadSeq, r.AckedSeq)
			if max(g.adapterAck, g.cursor) > g.known {
				// The stream is shorter than the cursor (the platform
				// was reset): take its cursor.
				g.adapterAck, g.cursor, g.pending = r.AckedSeq, r.AckedSeq, nil
			}
			c.sentAck = r.AckedSeq
			g.gwReadyLocked(c)
			g.mu.Unlock()
			g.log.Info("gateway session ready", "session", r.GatewaySessionID, "acked_seq", r.AckedSeq, "head_seq", r.HeadSeq)
			return gwMillis(r.HeartbeatIntervalMS, hello.HeartbeatIntervalMS, gwDefaultHeartbeat), gwEnd{}, true
		case delivery.OpResumed:
			var r delivery.GatewayResumed
			if !resume || gwDecode(f.D, &r) != nil {
				return 0, g.gwProtocolError(c, "unexpected resumed"), false
			}
			g.mu.Lock()
			g.known = max(g.known, r.HeadSeq, r.Cursor)
			c.sentAck = cursor
			g.gwReadyLocked(c)
			g.mu.Unlock()
			g.log.Info("gateway session resumed", "session", sessionID, "cursor", cursor, "head_seq", r.HeadSeq)
			return gwMillis(hello.HeartbeatIntervalMS, 0, gwDefaultHeartbeat), gwEnd{}, true
		case delivery.OpError:
			g.gwOpError(f.D)
		default:
			return 0, g.gwProtocolError(c, "frame "+strconv.Quote(gwShort(f.Op))+" before ready"), false
		}
	}
}

func (g *Gateway) gwReadyLocked(c *gwConn) {
	g.conn = c
	g.stalled = false
	select {
	case <-g.readied:
	default:
		close(g.readied)
	}
	g.gwNotifyLocked()
}

// gwMillis is the first positive of a and b in milliseconds, else def.
func gwMillis(a, b int64, def time.Duration) time.Duration {
	for _, ms := range []int64{a, b} {
		if ms > 0 {
			return time.Duration(min(ms, int64(24*time.Hour/time.Millisecond))) * time.Millisecond
		}
	}
	return def
}

func (g *Gateway) gwReadFrame(ctx context.Context, c *gwConn) (delivery.Frame, gwEnd, bool) {
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return delivery.Frame{}, g.gwEndOf(c, err), false
	}
	if typ != websocket.MessageText {
		return delivery.Frame{}, g.gwProtocolError(c, "a binary frame"), false
	}
	f, err := gwDecodeFrame(data)
	if err != nil {
		return delivery.Frame{}, g.gwProtocolError(c, err.Error()), false
	}
	return f, gwEnd{}, true
}

// gwProtocolError closes a connection whose peer broke the protocol;
// the gateway reconnects.
func (g *Gateway) gwProtocolError(c *gwConn, what string) gwEnd {
	end := gwEnd{code: int(websocket.StatusProtocolError), reason: "protocol_error", reaction: delivery.Reconnect,
		err: errors.New("protocol error: " + what)}
	c.closeWith(end)
	return end
}

// gwEndOf classifies a read or write error of a connection.
func (g *Gateway) gwEndOf(c *gwConn, err error) gwEnd {
	if l := c.localEnd(); l != nil {
		return *l
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return gwEnd{code: int(websocket.StatusMessageTooBig), reason: gwReasonFrameTooBig, reaction: delivery.Resume,
			err: fmt.Errorf("a frame over %d bytes", g.settings.WSMaxFrameBytes)}
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return gwEnd{code: int(ce.Code), reason: ce.Reason, reaction: delivery.ReactionTo(int(ce.Code)),
			err: errors.New("closed by the platform")}
	}
	return gwEnd{reaction: delivery.Reconnect, err: err}
}

// gwDecodeFrame decodes one server frame. Unknown members are tolerated.
func gwDecodeFrame(data []byte) (delivery.Frame, error) {
	var f delivery.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return delivery.Frame{}, errors.New("a frame that is not a JSON object")
	}
	if f.Op == "" {
		return delivery.Frame{}, errors.New("a frame without op")
	}
	return f, nil
}

func gwDecode(d json.RawMessage, v any) error {
	if len(d) == 0 {
		d = json.RawMessage("{}")
	}
	return json.Unmarshal(d, v)
}

// gwShort bounds a peer's string in a log line or an error.
func gwShort(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// gwDispatch handles one frame of a ready session; false ends the
// connection with the returned end.
func (g *Gateway) gwDispatch(ctx context.Context, c *gwConn, typ websocket.MessageType, data []byte) (gwEnd, bool) {
	if typ != websocket.MessageText {
		return gwEnd{code: int(websocket.StatusUnsupportedData), reason: "protocol_error", reaction: delivery.Reconnect,
			err: errors.New("protocol error: a binary frame")}, false
	}
	f, err := gwDecodeFrame(data)
	if err != nil {
		return g.gwInvalid(err.Error()), false
	}
	switch f.Op {
	case delivery.OpEvent:
		var ev delivery.Event
		if err := gwDecode(f.D, &ev); err != nil {
			return g.gwInvalid("undecodable event"), false
		}
		// An event the adapter cannot settle must not be skipped: a later
		// cumulative ack would pass it. Reconnect, and get it again.
		if ev.ID == "" || ev.Type == "" || ev.Seq < 0 || (ev.Seq == 0 && !delivery.Ephemeral(ev.Type)) {
			return g.gwInvalid("an event without id, type or seq"), false
		}
		return gwEnd{}, g.gwEnqueue(ctx, ev)
	case delivery.OpHeartbeatAck:
		var a delivery.GatewayHeartbeatAck
		if gwDecode(f.D, &a) != nil {
			return g.gwInvalid("undecodable heartbeat_ack"), false
		}
		if a.IntervalMS > 0 && c != nil {
			c.interval.Store(int64(max(gwMillis(a.IntervalMS, 0, 0), gwMinHeartbeat)))
		}
		if c != nil {
			c.hbAcked.Store(c.hbSent.Load())
		}
	case delivery.OpCursor:
		var cur delivery.GatewayCursor
		if gwDecode(f.D, &cur) != nil || cur.Seq < 0 {
			return g.gwInvalid("undecodable cursor"), false
		}
		g.mu.Lock()
		g.cursor = max(g.cursor, cur.Seq)
		g.known = max(g.known, cur.Seq)
		g.mu.Unlock()
		g.gwSendAck()
	case delivery.OpCatchupComplete:
		var cc delivery.GatewayCatchupComplete
		if gwDecode(f.D, &cc) == nil {
			g.mu.Lock()
			g.known = max(g.known, cc.HeadSeq)
			g.mu.Unlock()
		}
	case delivery.OpResyncRequired:
		var r delivery.GatewayResyncRequired
		_ = gwDecode(f.D, &r)
		g.log.Info("gateway asks for a resync; identifying anew", "reason", gwShort(r.Reason))
		return gwEnd{code: delivery.CloseNormal, reason: gwReasonResync, reaction: delivery.Identify,
			err: errors.New("resync required")}, false
	case delivery.OpError:
		g.gwOpError(f.D)
	default:
		// hello, ready, resumed again, or an op of a newer platform.
		g.log.Debug("gateway frame ignored", "op", gwShort(f.Op))
	}
	return gwEnd{}, true
}

func (g *Gateway) gwInvalid(what string) gwEnd {
	return gwEnd{code: int(websocket.StatusInvalidFramePayloadData), reason: "protocol_error", reaction: delivery.Reconnect,
		err: errors.New("protocol error: " + what)}
}

// gwEnqueue hands an event to Receive, waiting for room; false when the
// gateway is closed meanwhile.
func (g *Gateway) gwEnqueue(ctx context.Context, ev delivery.Event) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if i, ok := g.queued[ev.ID]; ok {
			g.queue[i] = ev
			break
		}
		if len(g.queue) < g.maxQueue {
			g.queued[ev.ID] = len(g.queue)
			g.queue = append(g.queue, ev)
			break
		}
		g.stalled = true
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.stalled = false
		if ctx.Err() != nil || g.stopErr != nil {
			return false
		}
	}
	if ev.Seq > 0 {
		g.lastSeq = max(g.lastSeq, ev.Seq)
		g.known = max(g.known, ev.Seq)
		if !delivery.Ephemeral(ev.Type) && ev.Seq <= max(g.adapterAck, g.cursor) {
			// The platform sends again what was settled: it lost the
			// acknowledgement (a restore, a rewind). The event is
			// acknowledged again once the adapter has it.
			g.adapterAck, g.cursor = min(g.adapterAck, ev.Seq-1), min(g.cursor, ev.Seq-1)
			if g.conn != nil {
				g.conn.sentAck = min(g.conn.sentAck, ev.Seq-1)
			}
		}
		if !delivery.Ephemeral(ev.Type) && ev.Seq > g.adapterAck {
			if i, found := slices.BinarySearch(g.pending, ev.Seq); !found {
				g.pending = slices.Insert(g.pending, i, ev.Seq)
			}
		}
	}
	g.gwNotifyLocked()
	return true
}

// gwSettledLocked is the highest seq up to which everything is settled:
// acknowledged by the adapter or settled by a cursor frame, below the
// first delivered event the adapter has not acknowledged, and no higher
// than the platform told of.
func (g *Gateway) gwSettledLocked() int64 {
	s := max(g.adapterAck, g.cursor)
	if len(g.pending) > 0 {
		s = min(s, g.pending[0]-1)
	}
	return min(s, g.known)
}

// gwSendAck tells the platform the settled seq when it moved.
func (g *Gateway) gwSendAck() {
	g.mu.Lock()
	c := g.conn
	if c == nil {
		g.mu.Unlock()
		return
	}
	s := g.gwSettledLocked()
	if s <= c.sentAck {
		g.mu.Unlock()
		return
	}
	c.sentAck = s
	g.mu.Unlock()
	if err := c.send(delivery.OpAck, delivery.GatewayAck{Seq: s}); err != nil {
		// The next session resumes from the cursor, or acks after ready.
		g.log.Debug("gateway ack not sent", "seq", s, "err", err)
	}
}

// gwOpError routes an error frame to the SendRunUpdate waiting on its ref.
func (g *Gateway) gwOpError(d json.RawMessage) {
	var ge delivery.GatewayError
	if gwDecode(d, &ge) != nil {
		g.log.Warn("gateway sent an undecodable error frame")
		return
	}
	e := &GatewayOpError{Op: ge.Op, Code: ge.Code, Detail: ge.Detail, Ref: ge.Ref, Status: ge.Status}
	if len(ge.Current) > 0 && string(ge.Current) != "null" {
		var run delivery.Run
		if json.Unmarshal(ge.Current, &run) == nil {
			e.Current = &run
		}
	}
	g.mu.Lock()
	ch := g.waiters[ge.Ref]
	if ge.Ref == "" {
		ch = nil
	}
	g.mu.Unlock()
	if ch != nil {
		select {
		case ch <- e:
			return
		default:
		}
	}
	g.log.Warn("gateway refused an operation", "op", gwShort(e.Op), "ref", gwShort(e.Ref), "status", e.Status,
		"code", gwShort(e.Code))
}

// gwHeartbeats sends a heartbeat after a random part of the interval and
// then every interval; a heartbeat still unanswered when the next is due
// closes the connection with 1001, unless the adapter's backlog keeps
// the gateway from reading (then the answer may be waiting unread).
func (g *Gateway) gwHeartbeats(ctx context.Context, c *gwConn) {
	var sends sync.WaitGroup
	defer sends.Wait()
	d := time.Duration(g.rand() * float64(c.interval.Load()))
	for {
		if g.clock.Sleep(ctx, d) != nil {
			return
		}
		g.mu.Lock()
		stalled, lastSeq := g.stalled, g.lastSeq
		g.mu.Unlock()
		if n := c.hbSent.Load(); n > 0 && c.hbAcked.Load() < n && !stalled {
			c.closeWith(gwEnd{code: delivery.CloseGoingAway, reason: gwReasonHeartbeat, reaction: delivery.Resume,
				err: errors.New("no heartbeat_ack within the interval")})
			return
		}
		hb := delivery.GatewayHeartbeat{LastSeq: lastSeq}
		if g.heartbeat != nil {
			a := g.heartbeat()
			hb.Agent = &a
		}
		c.hbSent.Add(1)
		// An interval the answer to this heartbeat names applies from
		// the next one on.
		d = time.Duration(c.interval.Load())
		// A write to a peer that stopped reading blocks; the next tick
		// must still find the missing answer.
		sends.Go(func() {
			if err := c.send(delivery.OpHeartbeat, hb); err != nil {
				g.log.Debug("gateway heartbeat not sent", "err", err)
			}
		})
	}
}
