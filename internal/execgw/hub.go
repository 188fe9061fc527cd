package execgw

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"novaos.dev/novaos/gateway"
)

// hub wakes the followers of a run when its events are committed, in this
// process or (through the store's WatchEvents) in another. A follower
// reads the events from the store itself: a wake-up carries no data, so
// one that is missed or merged with the next loses nothing.
type hub struct {
	store gateway.Store
	log   *slog.Logger
	max   int
	// onEvents, when set, hears of every run with new events ("" for
	// all) before its followers are woken.
	onEvents func(run string)

	mu          sync.Mutex
	runs        map[string]map[*follower]struct{}
	streamsOpen int // followers that are event streams
	closed      bool
	closing     chan struct{}
}

// follower is one reader of a run's events.
type follower struct {
	run    string
	wake   chan struct{} // capacity 1: a pending wake-up is enough
	stream bool          // an event stream, counted against the limit
	// last is the highest sequence a wake-up announced; lost is set when
	// notifications may have been missed.
	last atomic.Int64
	lost atomic.Bool
}

func newHub(s gateway.Store, max int, log *slog.Logger) *hub {
	return &hub{store: s, log: log, max: max, runs: map[string]map[*follower]struct{}{}, closing: make(chan struct{})}
}

// follow registers a follower of run; false when the hub is at its limit
// or closed.
func (h *hub) follow(run string) (*follower, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.streamsOpen >= h.max {
		return nil, false
	}
	h.streamsOpen++
	f := h.add(run)
	f.stream = true
	return f, true
}

// add registers a follower; h.mu is held.
func (h *hub) add(run string) *follower {
	f := &follower{run: run, wake: make(chan struct{}, 1)}
	set := h.runs[run]
	if set == nil {
		set = map[*follower]struct{}{}
		h.runs[run] = set
	}
	set[f] = struct{}{}
	return f
}

func (h *hub) unfollow(f *follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.runs[f.run]
	if _, ok := set[f]; !ok {
		return
	}
	delete(set, f)
	if len(set) == 0 {
		delete(h.runs, f.run)
	}
	if f.stream {
		h.streamsOpen--
	}
}

// notify wakes the followers of run, or every follower for run "".
func (h *hub) notify(run string, last int64) {
	if h.onEvents != nil {
		h.onEvents(run)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if run == "" {
		for _, set := range h.runs {
			wakeAll(set, -1)
		}
		return
	}
	wakeAll(h.runs[run], last)
}

// wakeAll wakes the followers in set, telling them how far the run's
// events go (-1: notifications may have been lost).
func wakeAll(set map[*follower]struct{}, last int64) {
	for f := range set {
		if last < 0 {
			f.lost.Store(true)
		} else {
			for cur := f.last.Load(); last > cur && !f.last.CompareAndSwap(cur, last); cur = f.last.Load() {
			}
		}
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// streams is the number of open event streams.
func (h *hub) streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streamsOpen
}

// run watches the store until ctx ends.
func (h *hub) run(ctx context.Context) {
	if err := h.store.WatchEvents(ctx, h.notify); err != nil && ctx.Err() == nil {
		h.log.Error("gateway: watching run events failed; followers fall back to polling", "err", err)
	}
}

// close refuses new followers and tells the open ones to end.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
}

// watch registers a follower of run for the gateway's own use (a
// delivery watching for a cancel): outside the limit on streams.
func (h *hub) watch(run string) *follower {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.add(run)
}
