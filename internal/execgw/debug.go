package execgw

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
)

// maxDebugBody bounds a debug action's body: its metadata and the JSON
// around it.
const maxDebugBody = gateway.MaxDebugMetadataBytes + 1<<10

// serveDebug answers POST /api/v1/runs/{id}/debug/{action} with the
// run's debugger after the action.
func (s *Service) serveDebug(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	if err == nil {
		err = p.need(ScopeExecute)
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	action := gateway.DebugAction(r.PathValue("action"))
	if !action.Valid() {
		s.api.Fail(w, r, badRequest("no debug action "+quote(string(action))+": want pause, resume, step or abort"))
		return
	}
	var in gateway.DebugRequest
	// The body is optional: a bare POST (no body, no type) is an action
	// without metadata. Fields besides metadata are left for clients
	// that send more.
	if r.ContentLength != 0 || r.Header.Get("Content-Type") != "" {
		if !s.api.Decode(w, r, &in, httpapi.Body{What: "the debug action", MaxBytes: maxDebugBody, AllowEmpty: true, AllowUnknown: true}) {
			return
		}
	}
	if len(in.Metadata) > 0 {
		if b, err := json.Marshal(in.Metadata); err != nil || len(b) > gateway.MaxDebugMetadataBytes {
			s.api.Fail(w, r, badRequest("metadata is larger than 16 KiB as JSON"))
			return
		}
	}
	d, err := s.debug(r.Context(), p, r.PathValue("id"), action, in.Metadata)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, d)
}

// errUnchanged is an action that leaves the debugger as it is (a pause
// of a paused run): nothing is written.
var errUnchanged = errors.New("execgw: the debugger is in that state already")

// debug applies action to the debugger of the run p may see, records it
// as a debug.<action> event, and returns the debugger as it then is.
func (s *Service) debug(ctx context.Context, p principal, id string, action gateway.DebugAction, meta map[string]any) (*gateway.DebugSession, error) {
	if err := p.need(ScopeExecute); err != nil {
		return nil, err
	}
	run, err := s.readableRun(ctx, p, id)
	if err != nil {
		return nil, err
	}
	var out gateway.DebugSession
	_, _, err = s.mutate(ctx, run, run.ID, func(x *gateway.Run) ([]gateway.Event, error) {
		if x.Status.Terminal() {
			return nil, conflict(gateway.ProblemRunEnded, "the run has ended: "+string(x.Status))
		}
		now := s.o.Now()
		cur := x.Debug
		if cur == nil {
			cur = &gateway.DebugSession{SessionID: a2a.NewID(), RunID: x.ID, BreakpointState: gateway.BreakpointRunning}
		}
		next, err := applyDebug(*cur, action, x.Debug == nil)
		if errors.Is(err, errUnchanged) {
			out = *cur
			out.Action = action
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		next.Action, next.Actor, next.UpdatedAt = action, p.subject, now
		x.Debug = &next
		out = next
		events := []gateway.Event{newEvent(gateway.EventDebugPrefix+string(action), gateway.DebugPayload{
			SessionID: next.SessionID, Action: action, BreakpointState: next.BreakpointState, Actor: p.subject, Metadata: meta})}
		if action == gateway.DebugAbort {
			events = append(events, end(x, gateway.StatusCancelled, "aborted by "+p.subject, now)...)
		}
		return events, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return nil, err
	}
	if action == gateway.DebugStep || action == gateway.DebugResume {
		s.dispatch.kick() // a queued run it held may be claimed now
	}
	return &out, nil
}

// applyDebug is the debugger d after action; fresh is set when the run
// had no debugger, which the action then starts.
func applyDebug(d gateway.DebugSession, action gateway.DebugAction, fresh bool) (gateway.DebugSession, error) {
	switch action {
	case gateway.DebugPause:
		if d.BreakpointState == gateway.BreakpointPaused {
			return d, errUnchanged
		}
		// A pause while stepping drops the steps not taken.
		d.BreakpointState, d.Steps = gateway.BreakpointPaused, 0
	case gateway.DebugStep:
		switch d.BreakpointState {
		case gateway.BreakpointPaused:
			d.BreakpointState, d.Steps = gateway.BreakpointStepping, 1
		case gateway.BreakpointStepping:
			d.Steps++ // each step lets one more event through
		default:
			return d, conflict(gateway.ProblemRunNotPaused, "the run is not paused: pause it before stepping")
		}
	case gateway.DebugResume:
		if d.BreakpointState == gateway.BreakpointRunning && !fresh {
			return d, errUnchanged
		}
		d.BreakpointState, d.Steps = gateway.BreakpointRunning, 0
	case gateway.DebugAbort:
		d.BreakpointState, d.Steps = gateway.BreakpointAborted, 0
	}
	return d, nil
}

// errHeld is a delivery's write the run's debugger holds back: the
// delivery waits for the debugger to let it through.
var errHeld = errors.New("execgw: the run's debugger holds it")

// pass returns how many of n events the run's debugger lets through
// now, taking the steps they use from r (a run the debugger does not
// hold lets them all through).
func pass(r *gateway.Run, n int, now time.Time) int {
	d := r.Debug
	switch {
	case d.Holds():
		return 0
	case d == nil || d.BreakpointState != gateway.BreakpointStepping:
		return n
	}
	// r is a copy of the stored run, which shares d: change a copy of d.
	next := *d
	k := min(n, next.Steps)
	if next.Steps -= k; next.Steps <= 0 {
		next.BreakpointState, next.Steps = gateway.BreakpointPaused, 0
	}
	next.UpdatedAt = now
	r.Debug = &next
	return k
}

// record writes the agent's events waiting in pending as the run's
// debugger lets them through, and waits while it holds them; pending
// keeps what was not written when it fails. set adds to the run what the
// turn learned (its task).
func (dl *delivery) record(ctx context.Context, pending *[]gateway.Event, set func(*gateway.Run)) error {
	for len(*pending) > 0 {
		var n int
		err := dl.try(ctx, func(r *gateway.Run) ([]gateway.Event, error) {
			if n = pass(r, len(*pending), dl.s.o.Now()); n == 0 {
				return nil, errHeld
			}
			set(r)
			return (*pending)[:n], nil
		})
		switch {
		case err == nil:
			*pending = (*pending)[n:]
		case !errors.Is(err, errHeld):
			return err
		default:
			if err := dl.park(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeHeld is write for the write that settles a turn (its ending, its
// pause, a retry): the debugger lets it through as one event.
func (dl *delivery) writeHeld(ctx context.Context, change func(r *gateway.Run) []gateway.Event) error {
	for {
		err := dl.try(ctx, func(r *gateway.Run) ([]gateway.Event, error) {
			if pass(r, 1, dl.s.o.Now()) == 0 {
				return nil, errHeld
			}
			return change(r), nil
		})
		if !errors.Is(err, errHeld) {
			return err
		}
		if err := dl.park(ctx); err != nil {
			return err
		}
	}
}

// park waits, while the run's debugger holds it, for news of the run
// (follow's), or for the delivery to stop. The agent's stream is not read
// meanwhile: the frames it sends wait in the pipe, and then the agent
// waits to send more.
func (dl *delivery) park(ctx context.Context) error {
	if h := dl.s.onPark; h != nil {
		h(dl.current())
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-dl.news:
		return nil
	}
}

// learn takes a newer copy of the run that follow read, and wakes a
// parked delivery to look at its debugger again.
func (dl *delivery) learn(r *gateway.Run) {
	dl.mu.Lock()
	if r.Version > dl.run.Version {
		dl.run = r
	}
	dl.mu.Unlock()
	select {
	case dl.news <- struct{}{}:
	default:
	}
}
