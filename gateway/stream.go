package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
)

// EventChunk is the Type a [StreamEvent] has for a "message.delta" event:
// a piece of the agent's answer, as the NovaOS SDKs name it.
const EventChunk = "chunk"

// ErrMalformedEvent is matched (errors.Is) by the error of a frame that is
// not the gateway's: an "event: message" whose data is not a JSON object
// with a type, or whose fields have the wrong JSON kinds.
var ErrMalformedEvent = errors.New("gateway: malformed event")

// ErrStreamIdle is matched by the error of an event stream on which
// nothing, not even a keepalive comment, arrived for the client's
// StreamIdleTimeout: a connection that died without a word. It is
// retryable.
var ErrStreamIdle = errors.New("gateway: event stream idle")

// ErrStreamEnded is matched by the error of an event stream that ended
// (cleanly or cut) before the run's terminal event. It is retryable:
// [Client.EventsWithReconnect] resumes after the last id it saw.
var ErrStreamEnded = errors.New("gateway: event stream ended before the run ended")

// StreamEvent is one event of a run's event stream, as [ParseSSE] reads
// it and [Client.Events] yields it.
//
// Branch on [StreamEvent.IsTerminal] and [StreamEvent.IsFailure] to learn
// whether and how a run ended, never on Type alone: a run that fails
// after its agent returned ends with a "status" event, not "error".
type StreamEvent struct {
	// Type is what the event is: "chunk" for a "message.delta" (a piece
	// of the answer), and otherwise the type as the gateway sent it:
	// "message.final", "status", "hitl", "done", "error",
	// "connector.oauth_required", "tool.write_confirmation_required",
	// "tool.call", "tool.result", "artifact", or any type a later gateway
	// or an agent adds.
	Type string
	// WireType is the type exactly as it arrived ("message.delta" where
	// Type says "chunk"; the SSE event name in the legacy form).
	WireType string
	// Content is the event's text: the first non-empty string member of
	// the payload among "content", "text", "delta", "message", "reason"
	// and "error" (or "error"."message"), in that order; a payload that
	// is a JSON string is the content itself. A legacy frame whose data
	// is not JSON is its content.
	Content string
	// Timestamp is when the gateway recorded the event, in milliseconds
	// since the epoch, as the decimal text it arrived as ("" when the
	// frame had none).
	Timestamp string
	// Status is the run lifecycle status a "status" event's payload
	// names, exactly as sent, and empty for every other type and for an
	// agent's progress update ({"message": …}). It may be a value outside
	// the six statuses; only those three [Status.Terminal] accepts end a
	// stream.
	Status Status
	// ID is the SSE id the event arrived with: the cursor a reconnect
	// sends back as Last-Event-ID. It is not Sequence: resume from ID,
	// and treat Sequence as ordering metadata only.
	ID string
	// Payload is the event's payload as sent (nil when it had none), for
	// the types whose shape Content does not capture: hitl, artifact,
	// tool calls, message.final's parts.
	Payload json.RawMessage
	// RunID and Sequence are the frame body's run_id and sequence.
	RunID    string
	Sequence int64
}

// IsTerminal reports whether no further events will arrive for the run:
// a "done" or "error" event, or a "status" event naming COMPLETED, FAILED
// or CANCELLED. A WAITING_USER status is a pause, not an ending, and a
// status value outside the platform's vocabulary (an agent's own word)
// ends nothing.
func (e StreamEvent) IsTerminal() bool {
	switch e.Type {
	case EventDone, EventError:
		return true
	case EventStatus:
		return e.Status.Terminal()
	}
	return false
}

// IsFailure reports whether the event says the run did not succeed: an
// "error" event, a "status" event naming FAILED or CANCELLED, or a "done"
// event whose payload names FAILED or CANCELLED (the gateway sends "error"
// for those, but a run that did not succeed must never read as a success
// whatever closed its stream).
func (e StreamEvent) IsFailure() bool {
	switch e.Type {
	case EventError:
		return true
	case EventStatus:
		return e.Status.Failure()
	case EventDone:
		return payloadStatus(e.Payload).Failure()
	}
	return false
}

// frameBody is the JSON body of an "event: message" frame. Timestamp is
// kept raw so that both a number (what the gateway sends) and a string
// are read.
type frameBody struct {
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	RunID     string          `json:"run_id"`
	Sequence  int64           `json:"sequence"`
	Timestamp json.RawMessage `json:"timestamp"`
}

// payloadFields are the members of a payload Content and Status are read
// from; the rest is left in Payload. A member that is not a string is
// skipped (encoding/json reports it and decodes the others).
type payloadFields struct {
	Content string          `json:"content"`
	Text    string          `json:"text"`
	Delta   string          `json:"delta"`
	Message string          `json:"message"`
	Reason  string          `json:"reason"`
	Error   json.RawMessage `json:"error"`
	Status  string          `json:"status"`
}

// ParseSSE reads one server-sent event of a run's stream: the SSE event
// name (eventType; "" is the SSE default, "message") and its data. The
// event's ID is not part of the data: [Client.Events] sets it from the
// frame's id line.
//
// The gateway's form is "event: message" with a JSON object
// {type, payload, run_id, sequence, timestamp}; a "message.delta" becomes
// Type "chunk", every other type keeps its name. Data that is not such an
// object is an error matching ErrMalformedEvent. Any other event name is
// the legacy form ("event: chunk", "done", "error", …): the name is the
// type, and the data is a JSON object read like a payload, a JSON string,
// or plain text taken as the content.
func ParseSSE(eventType, data string) (StreamEvent, error) {
	return parseSSE(eventType, []byte(data))
}

// parseSSE is ParseSSE on the bytes an event reader returns, which are
// the caller's to give away: the event may share them.
func parseSSE(eventType string, data []byte) (StreamEvent, error) {
	if eventType == "" || eventType == SSEEventName {
		return parseFrame(data)
	}
	return parseLegacy(eventType, data), nil
}

func parseFrame(data []byte) (StreamEvent, error) {
	var f frameBody
	if err := json.Unmarshal(data, &f); err != nil {
		return StreamEvent{}, fmt.Errorf("%w: %s", ErrMalformedEvent, rest.DescribeJSONError(err))
	}
	if f.Type == "" {
		return StreamEvent{}, fmt.Errorf("%w: no type", ErrMalformedEvent)
	}
	ts, err := timestampText(f.Timestamp)
	if err != nil {
		return StreamEvent{}, err
	}
	e := StreamEvent{
		Type:      f.Type,
		WireType:  f.Type,
		Timestamp: ts,
		RunID:     f.RunID,
		Sequence:  f.Sequence,
	}
	if len(f.Payload) > 0 && !bytes.Equal(f.Payload, []byte("null")) {
		e.Payload = f.Payload
	}
	if e.Type == EventMessageDelta {
		e.Type = EventChunk
	}
	e.Content, e.Status = readPayload(e.Type, e.Payload)
	return e, nil
}

func parseLegacy(eventType string, data []byte) StreamEvent {
	e := StreamEvent{Type: eventType, WireType: eventType}
	if e.Type == EventMessageDelta {
		e.Type = EventChunk
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '"') && json.Valid(trimmed) {
		e.Payload = json.RawMessage(trimmed)
		e.Content, e.Status = readPayload(e.Type, e.Payload)
		if trimmed[0] == '{' {
			var f struct {
				Timestamp json.RawMessage `json:"timestamp"`
			}
			if json.Unmarshal(trimmed, &f) == nil {
				e.Timestamp, _ = timestampText(f.Timestamp)
			}
		}
		return e
	}
	e.Content = string(data)
	return e
}

// readPayload returns the content of a payload and, for a "status" event,
// the status it names.
func readPayload(typ string, p json.RawMessage) (string, Status) {
	if len(p) == 0 {
		return "", ""
	}
	switch p[0] {
	case '"':
		var s string
		if json.Unmarshal(p, &s) == nil {
			return s, ""
		}
		return "", ""
	case '{':
	default:
		return "", ""
	}
	var f payloadFields
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(p, &f); err != nil && !errors.As(err, &te) {
		return "", ""
	}
	var content string
	for _, s := range [...]string{f.Content, f.Text, f.Delta, f.Message, f.Reason, jsonString(f.Error)} {
		if s != "" {
			content = s
			break
		}
	}
	if content == "" && len(f.Error) > 0 && f.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(f.Error, &inner) == nil {
			content = jsonString(inner.Message)
		}
	}
	var st Status
	if typ == EventStatus {
		st = Status(f.Status)
	}
	return content, st
}

// payloadStatus is the "status" member of a payload object, if it is a
// string.
func payloadStatus(p json.RawMessage) Status {
	if len(p) == 0 || p[0] != '{' {
		return ""
	}
	var f struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(p, &f) != nil {
		return ""
	}
	return Status(jsonString(f.Status))
}

// jsonString returns raw's value if it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// timestampText renders a frame's timestamp: a JSON integer as its digits,
// a JSON string as itself, absent or null as "".
func timestampText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: timestamp: %s", ErrMalformedEvent, rest.DescribeJSONError(err))
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("%w: timestamp is not a number or a string", ErrMalformedEvent)
	}
	if _, err := n.Int64(); err != nil {
		return "", fmt.Errorf("%w: timestamp %s is not whole milliseconds", ErrMalformedEvent, clip(n.String(), 32))
	}
	return n.String(), nil
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// readEvents reads a run's event stream from r and hands each event to
// yield, until the run's terminal event has been handed over (nil), yield
// returns false (nil, and stopped is true), or the stream fails. A stream
// that ends before the terminal event is ErrStreamEnded, joined with
// io.ErrUnexpectedEOF when it was cut inside a frame. A frame that names
// another run is ErrMalformedEvent: a proxy or a server that mixed
// streams up must not go unnoticed.
func readEvents(r io.Reader, runID string, yield func(StreamEvent) bool) (stopped bool, err error) {
	er := a2a.NewEventReader(r, a2a.DefaultMaxEventSize)
	for {
		raw, err := er.Next()
		switch {
		case errors.Is(err, io.EOF):
			return false, ErrStreamEnded
		case errors.Is(err, io.ErrUnexpectedEOF):
			return false, errors.Join(ErrStreamEnded, io.ErrUnexpectedEOF)
		case err != nil:
			return false, err
		}
		ev, err := parseSSE(raw.Event, raw.Data)
		if err != nil {
			return false, frameError(raw.ID, err)
		}
		if ev.RunID != "" && runID != "" && ev.RunID != runID {
			return false, frameError(raw.ID, fmt.Errorf("%w: frame of run %q on the stream of run %q", ErrMalformedEvent, clip(ev.RunID, 64), clip(runID, 64)))
		}
		ev.ID = raw.ID
		if !yield(ev) {
			return true, nil
		}
		if ev.IsTerminal() {
			return false, nil
		}
	}
}

func frameError(id string, err error) error {
	if id == "" {
		return err
	}
	return fmt.Errorf("frame id %s: %w", clip(strings.ToValidUTF8(id, "?"), 64), err)
}

// Events follows a run's events (GET /api/v1/events/{runId}) and yields
// each, the terminal one included, and then stops: iteration ends on the
// first event for which IsTerminal holds, so check IsFailure on the last
// event to learn how the run ended. lastEventID, when set, resumes after
// that event: pass the ID (never the Sequence) of the last event a
// previous stream yielded.
//
// A 204 No Content answer, which in server-sent events tells a client not
// to reconnect, ends the iteration without an event or an error: nothing
// follows lastEventID.
//
// A failure is yielded as the last element, with a zero StreamEvent: an
// *Error for an answer other than the stream (404 for a run the caller
// may not see, 400 for a Last-Event-ID the run never issued), and
// ErrStreamEnded when the stream ended before the run did.
// EventsWithReconnect resumes through such failures.
func (c *Client) Events(ctx context.Context, runID, lastEventID string) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		_, err := c.streamOnce(ctx, runID, lastEventID, func(ev StreamEvent) bool {
			return yield(ev, nil)
		})
		if err != nil {
			yield(StreamEvent{}, fmt.Errorf("gateway: events %s: %w", runID, err))
		}
	}
}

// streamOnce opens one event stream and reads it to the run's end, to the
// consumer's stop (stopped), or to a failure.
func (c *Client) streamOnce(ctx context.Context, runID, lastEventID string, yield func(StreamEvent) bool) (stopped bool, err error) {
	if err := validID("run_id", runID); err != nil {
		return false, err
	}
	if strings.ContainsAny(lastEventID, "\r\n\x00") {
		return false, invalid("last_event_id", "must be one line")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The idle timer runs while the client waits for the gateway, never
	// while the consumer handles an event.
	var idle *time.Timer
	if c.idle > 0 {
		idle = time.AfterFunc(c.idle, func() { cancel(ErrStreamIdle) })
		defer idle.Stop()
	}
	wasIdle := func(err error) error {
		if errors.Is(context.Cause(ctx), ErrStreamIdle) {
			return fmt.Errorf("%w: no byte for %v", ErrStreamIdle, c.idle)
		}
		return err
	}
	req, tok, err := c.api.NewRequest(ctx, http.MethodGet, c.base+EventsPath+url.PathEscape(runID), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.api.HTTP.Do(req)
	if err != nil {
		return false, wasIdle(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		// The SSE answer that says "do not reconnect": nothing will
		// follow lastEventID (the run ended with it).
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, c.api.ErrorOf(resp, tok)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false, fmt.Errorf("%w: event stream answered with content type %q", ErrProtocol, clip(mt, 64))
	}
	var body io.Reader = resp.Body
	if idle != nil {
		body = &idleReader{r: resp.Body, t: idle, d: c.idle}
		next := yield
		yield = func(ev StreamEvent) bool {
			idle.Stop()
			defer idle.Reset(c.idle)
			return next(ev)
		}
	}
	stopped, err = readEvents(body, runID, yield)
	if err != nil {
		return stopped, wasIdle(err)
	}
	if !stopped {
		drain(resp.Body, cancel)
	}
	return stopped, nil
}

// maxDrainBytes bounds the drain after a run's terminal event.
const maxDrainBytes = 64 << 10

// maxDrainTime bounds the drain in time; a variable so that a test on a
// busy machine can wait longer.
var maxDrainTime = 250 * time.Millisecond

// drain reads what follows a run's terminal event (the gateway's done or
// error, then the end of the stream) so that the connection can carry
// the next request, for at most maxDrainTime: a server that keeps the
// stream open costs that once, and its connection is dropped.
func drain(body io.Reader, cancel context.CancelCauseFunc) {
	t := time.AfterFunc(maxDrainTime, func() { cancel(nil) })
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, maxDrainBytes)
}

// idleReader restarts the idle timer whenever bytes arrive: a keepalive
// comment counts, so a gateway that keeps a paused run's stream alive is
// never taken for a dead one.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}

// Defaults of ReconnectOptions: the NovaOS SDKs'.
const (
	DefaultMaxRetries     = 5
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
)

// ReconnectOptions tune EventsWithReconnect; nil or zero fields mean the
// defaults.
type ReconnectOptions struct {
	// MaxRetries bounds the reconnects in a row that bring no event
	// (0: DefaultMaxRetries; negative: none). Every event received resets
	// the count, so a long stream may reconnect any number of times.
	MaxRetries int
	// InitialBackoff is the wait before the first reconnect after an
	// event (0: DefaultInitialBackoff); each further reconnect in a row
	// doubles it, up to MaxBackoff (0: DefaultMaxBackoff). Each wait is
	// multiplied by a random factor in [0.5, 1.5), so that clients cut
	// off together do not come back together, and then held to
	// MaxBackoff. A longer Retry-After from the gateway is honoured, up
	// to MaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// LastEventID resumes after this event instead of from the start.
	LastEventID string
	// Sleep waits d or until ctx ends (nil: a timer); Rand returns the
	// jitter draw in [0, 1) (nil: math/rand/v2). Tests replace them.
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
}

func (o *ReconnectOptions) initial() time.Duration {
	if o.InitialBackoff <= 0 {
		return DefaultInitialBackoff
	}
	return o.InitialBackoff
}

func (o *ReconnectOptions) limit() time.Duration {
	if o.MaxBackoff <= 0 {
		return DefaultMaxBackoff
	}
	return o.MaxBackoff
}

// backoff is the wait before reconnect n (1-based) of a row, with jitter
// draw r in [0, 1).
func (o *ReconnectOptions) backoff(n int, r float64) time.Duration {
	initial, limit := o.initial(), o.limit()
	p := resilience.Policy{Base: initial, Max: limit, NoJitter: true}
	d := time.Duration(float64(p.Delay(n)) * (0.5 + r))
	return min(max(d, 0), limit)
}

// EventsWithReconnect follows a run's events like Events and, when the
// stream fails in a way that may pass (IsRetryable: a dropped connection,
// a stream that ended before the run, 429, 502, 503, 504), reconnects
// after a backoff, resuming after the ID of the last event it yielded, so
// every event is yielded exactly once and in order, across any number of
// reconnects. A stream on which nothing arrives for the client's
// StreamIdleTimeout counts as dropped. Any other failure (401, 403, 404,
// a malformed frame) is yielded at once and ends the iteration, as does
// running out of reconnects (the last failure is yielded); a 204 ends it
// quietly, as in Events.
//
// An event stream without SSE ids cannot be resumed without replaying
// it: a failure after such events ends the iteration instead.
func (c *Client) EventsWithReconnect(ctx context.Context, runID string, o *ReconnectOptions) iter.Seq2[StreamEvent, error] {
	var opts ReconnectOptions
	if o != nil {
		opts = *o
	}
	o = &opts
	maxRetries := o.MaxRetries
	if maxRetries == 0 {
		maxRetries = DefaultMaxRetries
	}
	sleep := o.Sleep
	if sleep == nil {
		sleep = resilience.Sleep
	}
	draw := o.Rand
	if draw == nil {
		draw = rand.Float64
	}
	return func(yield func(StreamEvent, error) bool) {
		last := o.LastEventID
		failures := 0
		for {
			got, noID := false, false
			stopped, err := c.streamOnce(ctx, runID, last, func(ev StreamEvent) bool {
				got = true
				if ev.ID != "" {
					last, noID = ev.ID, false
				} else {
					noID = true
				}
				return yield(ev, nil)
			})
			if stopped || err == nil {
				return
			}
			err = fmt.Errorf("gateway: events %s: %w", runID, err)
			if got {
				failures = 0
			}
			if noID {
				yield(StreamEvent{}, fmt.Errorf("%w (events without an id cannot be resumed)", err))
				return
			}
			if !IsRetryable(err) || ctx.Err() != nil {
				yield(StreamEvent{}, err)
				return
			}
			failures++
			if failures > maxRetries {
				yield(StreamEvent{}, fmt.Errorf("%w (gave up after %d reconnects without an event)", err, failures-1))
				return
			}
			d := o.backoff(failures, draw())
			var ra resilience.RetryAfterer
			if errors.As(err, &ra) && ra.RetryAfter() > d {
				d = min(ra.RetryAfter(), o.limit())
			}
			if serr := sleep(ctx, d); serr != nil {
				yield(StreamEvent{}, errors.Join(err, serr))
				return
			}
		}
	}
}
