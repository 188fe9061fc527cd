package execgw

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runsse"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// parseCursor reads an SSE id the gateway issued (a sequence) for run.
func parseCursor(v string, run *gateway.Run) (int64, error) {
	n, ok := runsse.ParseCursor(v, run.LastSequence)
	if !ok {
		return 0, &problem.Problem{Type: gateway.ProblemInvalidCursor, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "the Last-Event-ID is not an event id of this run"}
	}
	return n, nil
}

// readableRun returns the run p may read.
func (s *Service) readableRun(ctx context.Context, p principal, id string) (*gateway.Run, error) {
	if err := p.need(ScopeRead); err != nil {
		return nil, err
	}
	run, err := s.store.GetRun(ctx, p.tenant, id)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !p.owns(&run) {
		return nil, runNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &run, nil
}

// serveEvents streams a run's events as SSE: every event after the
// Last-Event-ID (all of them without one), then each new one as it is
// committed, until the run's stream ends (done or error), the client
// goes, or the server shuts down.
func (s *Service) serveEvents(w http.ResponseWriter, r *http.Request) {
	src, after, ok := s.openEvents(w, r)
	if !ok {
		return
	}
	defer s.hub.unfollow(src.f)
	wake := src.f.wake
	if src.ended {
		wake = nothingToWaitFor // an ended run has no news: read on to its end
	}
	runsse.Stream(w, r, src, after, runsse.Options{KeepAlive: s.o.KeepAlive, Wake: wake, Closing: s.hub.closing,
		OnError: src.readFailed})
}

// nothingToWaitFor is a closed channel: a wake-up that is always there.
var nothingToWaitFor = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// openEvents checks an event stream's request and registers its
// follower, or answers the request and returns false. It is apart from
// serveEvents so that its frame is off the stack of an open stream,
// which then rests in less than a quarter of its stack and is shrunk.
func (s *Service) openEvents(w http.ResponseWriter, r *http.Request) (*runSource, int64, bool) {
	p, err := principalOf(r, false)
	if err != nil {
		s.api.Fail(w, r, err)
		return nil, 0, false
	}
	run, err := s.readableRun(r.Context(), p, r.PathValue("runId"))
	if err != nil {
		s.api.Fail(w, r, err)
		return nil, 0, false
	}
	cursorText := r.Header.Get("Last-Event-ID")
	if cursorText == "" {
		cursorText = r.URL.Query().Get("last_event_id")
	}
	after, err := parseCursor(cursorText, run)
	if err != nil {
		s.api.Fail(w, r, err)
		return nil, 0, false
	}
	if run.Status.Terminal() && after >= run.LastSequence {
		// Nothing follows the end a client has read: 204, the SSE way of
		// saying "do not reconnect".
		w.WriteHeader(http.StatusNoContent)
		return nil, 0, false
	}
	f, ok := s.hub.follow(run.ID)
	if !ok {
		w.Header().Set("Retry-After", "5")
		httpapi.WriteProblem(w, r, &problem.Problem{Type: problem.TypeOverloaded, Status: http.StatusServiceUnavailable,
			Title: "Service Unavailable", Detail: "too many event streams are open; retry later"})
		return nil, 0, false
	}
	// Only the id is kept while the stream is open: the run itself (its
	// input, output and artifacts) is let go.
	return &runSource{s: s, id: run.ID, f: f, ended: run.Status.Terminal()}, after, true
}

// runSource reads one run's events: from its follower's tail when that
// continues where the stream is, else from the store.
type runSource struct {
	s  *Service
	id string
	f  *follower
	// caughtUp is whether a read of the store found no more than it
	// returned: the store holds nothing the stream has not been sent
	// except what was announced to the follower since.
	caughtUp bool
	// read is whether the last Events went to the store.
	read bool
	// ended is whether the run had ended when the stream opened: the
	// store holds all there will be.
	ended bool
}

func (rs *runSource) Events(ctx context.Context, after int64, limit int) ([]gateway.Event, error) {
	rs.read = false
	if events := rs.f.take(after, limit); len(events) > 0 {
		return events, nil
	}
	if !rs.ended && rs.caughtUp && !rs.f.lost.Swap(false) && rs.f.last.Load() <= after {
		// Woken for events the stream has sent already (news of this
		// process's own commits coming back from the store).
		return nil, nil
	}
	events, err := rs.s.store.Events(ctx, rs.id, after, limit)
	rs.read, rs.caughtUp = true, err == nil && len(events) < limit
	return events, err
}

func (rs *runSource) readFailed(err error) {
	rs.s.log.Error("gateway: reading run events failed", "run_id", rs.id, "err", err)
}

// Ended reads the run only when the store was just read and had nothing
// new: a stream that has sent every event announced is not at an end it
// has not been told of. (Every ending records done or error, which ends
// a stream before it asks; this is for a run whose record says otherwise.)
func (rs *runSource) Ended(ctx context.Context, after int64) (bool, error) {
	if rs.ended {
		return true, nil // and the store, just read, had no more
	}
	if !rs.read {
		return false, nil
	}
	return rs.s.endedAt(ctx, rs.id, after)
}

// endedAt reports whether the run has ended with no event after the
// given one: a follower caught up with an ended run has nothing to wait
// for.
func (s *Service) endedAt(ctx context.Context, id string, after int64) (bool, error) {
	r, err := s.store.GetRun(ctx, "", id)
	if err != nil {
		return false, err
	}
	return r.Status.Terminal() && r.LastSequence <= after, nil
}

// serveStreamingHealth answers whether event streams can be served.
func (s *Service) serveStreamingHealth(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.hub.closing:
		httpapi.WriteJSON(w, r, http.StatusServiceUnavailable, map[string]any{"healthy": false, "status": "shutting down"})
	default:
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"healthy": true, "status": "ok", "streams": s.hub.streams()})
	}
}

// indexEvent is one event of the run event index.
type indexEvent struct {
	EventID   string          `json:"event_id,omitempty"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	Timestamp string          `json:"timestamp"`
	Sequence  int64           `json:"sequence"`
	TraceID   string          `json:"trace_id,omitempty"`
	SpanID    string          `json:"span_id,omitempty"`
}

func toIndex(e gateway.Event, withID bool) indexEvent {
	ie := indexEvent{Type: e.Type, Data: e.Payload, Timestamp: e.At.UTC().Format(time.RFC3339Nano), Sequence: e.Sequence,
		TraceID: e.TraceID, SpanID: e.SpanID}
	if withID {
		ie.EventID = e.RunID + ":" + strconv.FormatInt(e.Sequence, 10)
	}
	return ie
}

// userIndexPage is the fixed page of the user route of the event index.
const userIndexPage = 100

// serveServiceRunEvents is the event index for service accounts (and
// the operator): a page after the cursor, with the next cursor.
func (s *Service) serveServiceRunEvents(w http.ResponseWriter, r *http.Request) {
	p, run, ok := s.serviceRun(w, r)
	if !ok {
		return
	}
	_ = p
	q := r.URL.Query()
	after, err := parseCursor(q.Get("after"), run)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	limit, err := limitParam(q.Get("limit"), userIndexPage, gateway.MaxPage)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	events, err := s.store.Events(r.Context(), run.ID, after, limit)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	out := struct {
		Events     []indexEvent `json:"events"`
		NextCursor *string      `json:"next_cursor"`
		RequestID  string       `json:"request_id"`
	}{Events: make([]indexEvent, 0, len(events)), RequestID: newOwner()}
	for _, e := range events {
		out.Events = append(out.Events, toIndex(e, true))
	}
	if n := len(events); n == limit && events[n-1].Sequence < run.LastSequence {
		next := strconv.FormatInt(events[n-1].Sequence, 10)
		out.NextCursor = &next
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

// serveUserRunEvents is the event index of a user's own run: a fixed page
// after the "after" sequence.
func (s *Service) serveUserRunEvents(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	run, err := s.readableRun(r.Context(), p, r.PathValue("id"))
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	after, err := parseCursor(r.URL.Query().Get("after"), run)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	events, err := s.store.Events(r.Context(), run.ID, after, userIndexPage)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	out := struct {
		Events []indexEvent `json:"events"`
	}{Events: make([]indexEvent, 0, len(events))}
	for _, e := range events {
		out.Events = append(out.Events, toIndex(e, false))
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}
