package execgw

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"novaos.dev/novaos/gateway"
)

// hub wakes the followers of a run when its events are committed, in this
// process or (through the store's WatchEvents) in another. A wake-up says
// how far the run's events go; events committed in this process also
// wait in each event stream's tail, so a stream that follows a run
// delivered here reads them without a trip to the store. The store stays
// the truth: a stream reads it whenever its tail does not continue
// exactly where it is, so a wake-up missed or merged loses nothing.
type hub struct {
	store gateway.Store
	log   *slog.Logger
	max   int
	// onEvents, when set, hears of every run with new events ("" for
	// all, last -1) before its followers are woken.
	onEvents func(run string, last int64)

	mu   sync.Mutex
	runs map[string]map[*follower]struct{}
	// writing are the runs this process is writing: the store's news of
	// their commits waits for the write's own, which carries the events.
	writing     map[string]*inflight
	streamsOpen int // followers that are event streams
	closed      bool
	closing     chan struct{}
}

// inflight counts a run's writes in progress here, and keeps the last
// sequence the store announced meanwhile.
type inflight struct {
	n    int
	last int64
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

	tailMu sync.Mutex
	// tail holds events committed in this process that an event stream
	// has not taken yet, oldest first (maxTail at most).
	tail []gateway.Event
}

// maxTail bounds an event stream's tail: a stream that falls further
// behind reads the store.
const maxTail = 256

// take returns the tail's events that continue exactly after the
// sequence after (limit at most), dropping those at or before it; nil
// when the tail does not continue there.
func (f *follower) take(after int64, limit int) []gateway.Event {
	f.tailMu.Lock()
	defer f.tailMu.Unlock()
	i := 0
	for i < len(f.tail) && f.tail[i].Sequence <= after {
		i++
	}
	rest := f.tail[i:]
	n := 0
	for n < len(rest) && n < limit && rest[n].Sequence == after+int64(n)+1 {
		n++
	}
	out := slices.Clone(rest[:n])
	if left := rest[n:]; len(left) > 0 {
		f.tail = slices.Clone(left)
	} else {
		f.tail = nil // an idle stream keeps no buffer
	}
	return out
}

// keep adds committed events to the tail.
func (f *follower) keep(events []gateway.Event) {
	f.tailMu.Lock()
	defer f.tailMu.Unlock()
	if len(f.tail)+len(events) > maxTail {
		f.tail = nil // behind: the stream reads the store
		if len(events) > maxTail {
			return
		}
	}
	f.tail = append(f.tail, events...)
}

func newHub(s gateway.Store, max int, log *slog.Logger) *hub {
	return &hub{store: s, log: log, max: max, runs: map[string]map[*follower]struct{}{},
		writing: map[string]*inflight{}, closing: make(chan struct{})}
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

// notify wakes the followers of run, or every follower for run "" (last
// -1): the store's news of events committed, here or elsewhere. News of
// a run this process is writing waits for the write to end, onEvents's
// too: the news is most often of that very write, which the writer has
// told onEvents's listener of by then.
func (h *hub) notify(run string, last int64) {
	h.mu.Lock()
	if w := h.writing[run]; run != "" && w != nil {
		w.last = max(w.last, last)
		h.mu.Unlock()
		return
	}
	if run == "" {
		for _, set := range h.runs {
			wakeAll(set, -1, nil)
		}
	} else {
		wakeAll(h.runs[run], last, nil)
	}
	h.mu.Unlock()
	if h.onEvents != nil {
		h.onEvents(run, last)
	}
}

// writeBegins says this process starts writing run; writeEnds must
// follow.
func (h *hub) writeBegins(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.writing[run]
	if w == nil {
		w = &inflight{}
		h.writing[run] = w
	}
	w.n++
}

// writeEnds wakes the followers of run with the events a write of this
// process committed (none if it failed), which event streams keep in
// their tails, and with the news of the store that waited for it.
func (h *hub) writeEnds(run string, events []gateway.Event) {
	h.mu.Lock()
	var last, news int64
	if w := h.writing[run]; w != nil {
		last = w.last
		if w.n--; w.n == 0 {
			delete(h.writing, run)
			news = w.last // told once, when the last write ends
		}
	}
	if n := len(events); n > 0 {
		last = max(last, events[n-1].Sequence)
	}
	if last > 0 {
		wakeAll(h.runs[run], last, events)
	}
	h.mu.Unlock()
	if news > 0 && h.onEvents != nil {
		h.onEvents(run, news)
	}
}

// wakeAll wakes the followers in set, telling them how far the run's
// events go (-1: notifications may have been lost) and giving the event
// streams among them the events, if known.
func wakeAll(set map[*follower]struct{}, last int64, events []gateway.Event) {
	for f := range set {
		if f.stream && len(events) > 0 {
			f.keep(events)
		}
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
