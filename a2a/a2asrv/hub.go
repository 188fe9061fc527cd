package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
)

// A hub is the in-process meeting point of everything that touches one task:
// the live execution (if any), the streams watching it, and every write. Its
// mutex serialises writes with subscriptions, so a subscriber's snapshot and
// the frames after it never overlap or leave a gap.
//
// Lock order: a hub's mu before hubs.mu (start takes the caller's hub
// reference while holding the hub); nothing takes them the other way round.
type hub struct {
	id string
	hs *hubs
	mu sync.Mutex
	// Everything below is guarded by mu.
	scope Scope
	// task is the task as this process last wrote or read it, including
	// pending events; nil until read or written. The hub applies writes
	// to it in place, so it is never handed out: readers get clones.
	task    *a2a.Task
	version Version // of task
	// stored is the version the store holds: version minus the pending
	// events, or 0 while the task exists only here (a deferred create).
	stored Version
	// pending are artifact updates applied to task and published, not yet
	// in the store; flushTimer writes them within the flush interval.
	pending    []*a2a.StreamResponse
	flushTimer *time.Timer
	// appended counts the events stored since the task's body was last
	// written whole, to decide when to compact.
	appended int
	// heldSince is when a deferred create began.
	heldSince time.Time
	exec      *execution
	subs      map[*subscriber]struct{}

	refs int // guarded by hubs.mu

	// unwatch ends the hub's watch of its task's feed (feed.go); set
	// when the hub is made, called when it is dropped.
	unwatch func()
	// changeMu guards the changes the feed reported and the hub has not
	// applied yet, and whether a goroutine is applying them.
	changeMu sync.Mutex
	changes  []TaskChange
	draining bool
}

// hubs are a Handler's hubs, by task id.
type hubs struct {
	store TaskStore
	// feed, when set, reports the writes other processes make (feed.go).
	feed TaskFeed
	log  *slog.Logger
	// flushEvery bounds how long an artifact update may wait for the
	// store (Options.ArtifactFlushInterval).
	flushEvery time.Duration

	mu sync.Mutex
	m  map[string]*hub
}

// acquire returns the hub for task id, creating it; every acquire must be
// paired with a release.
func (hs *hubs) acquire(id string) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = make(map[string]*hub)
	}
	h := hs.m[id]
	if h == nil {
		h = &hub{id: id, hs: hs}
		hs.m[id] = h
		h.watchLocked()
	}
	h.refs++
	return h
}

func (hs *hubs) release(h *hub) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		delete(hs.m, h.id)
		if h.unwatch != nil {
			h.unwatch()
		}
	}
}

// all returns every hub in use.
func (hs *hubs) all() []*hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make([]*hub, 0, len(hs.m))
	for _, h := range hs.m {
		out = append(out, h)
	}
	return out
}

// frame is one item delivered to a subscriber.
type frame struct {
	seq  Version
	resp *a2a.StreamResponse
	// err is an execution's protocol error raised before it wrote anything.
	err *a2a.Error
	// endExec, when non-zero, says that execution ended.
	endExec uint64
}

func (f *frame) final() bool { return f.resp != nil && f.resp.Final() }

// maxQueuedFrames bounds what a slow subscriber may fall behind by; past it
// the subscriber is dropped (its stream closes without a terminal frame and
// the client resubscribes for a fresh snapshot) rather than holding an
// execution's memory hostage.
const maxQueuedFrames = 4096

type subscriber struct {
	execID uint64 // the execution a request stream follows; 0 follows the task
	hub    *hub
	notify chan struct{}

	mu      sync.Mutex
	q       []frame
	dropped bool
}

func newSubscriber(execID uint64) *subscriber {
	return &subscriber{execID: execID, notify: make(chan struct{}, 1)}
}

func (s *subscriber) push(f frame) {
	s.mu.Lock()
	if len(s.q) >= maxQueuedFrames {
		s.dropped = true
	} else if !s.dropped {
		s.q = append(s.q, f)
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the queued frames and whether the subscriber was dropped.
func (s *subscriber) take(buf []frame) ([]frame, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf[:0], s.q...)
	clear(s.q)
	s.q = s.q[:0]
	return buf, s.dropped
}

// publishLocked delivers f to every subscriber. Callers hold h.mu.
func (h *hub) publishLocked(f frame) {
	for s := range h.subs {
		s.push(f)
	}
}

func (h *hub) subscribeLocked(s *subscriber) {
	if h.subs == nil {
		h.subs = make(map[*subscriber]struct{})
	}
	s.hub = h
	h.subs[s] = struct{}{}
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// Limits of the write path.
const (
	// compactAfter is how many stored events a task may carry before its
	// final write stores it whole again, so reading a finished task does
	// not replay a long stream chunk by chunk.
	compactAfter = 32
	// maxPending bounds the artifact updates held for one flush: past it
	// the writer waits for the store, which is the back-pressure a fast
	// executor meets.
	maxPending = 512
	// maxHold is how long a deferred create may keep a running task out of
	// the store, so long executions still show up in listings.
	maxHold = time.Second
	// conflictRetries bounds re-reads after another process wrote the task.
	conflictRetries = 5
)

// loadLocked fills the cache from the store. Callers hold h.mu.
func (h *hub) loadLocked(ctx context.Context) error {
	if h.task != nil {
		return nil
	}
	t, v, err := h.hs.store.Get(ctx, h.scope, h.id)
	if err != nil {
		return err
	}
	overtaken := h.hs.feed != nil && h.stored > 0 && v > h.stored
	h.task, h.version, h.stored, h.appended = t, v, v, 0
	if overtaken {
		// Another process wrote the task since this one last held it
		// (the write that made this one's fail): what it wrote reaches
		// the subscribers here, as the whole task, since the feed's
		// report of it finds the hub already past it.
		h.publishLocked(frame{seq: v, resp: &a2a.StreamResponse{Task: t.Clone()}})
		h.overtakenLocked()
	}
	return nil
}

// dropLocked forgets the cache after a failed write: what the store holds
// is read again on the next write. Pending events are lost with it; their
// frames were sent, so a stream may have seen updates the store never got.
func (h *hub) dropLocked(ctx context.Context, err error) {
	if n := len(h.pending); n > 0 {
		h.hs.log.ErrorContext(ctx, "a2asrv: artifact updates not stored", "task_id", h.id, "count", n, "err", err)
	}
	h.stopFlushLocked()
	h.task, h.pending = nil, nil
}

func (h *hub) stopFlushLocked() {
	if h.flushTimer != nil {
		h.flushTimer.Stop()
		h.flushTimer = nil
	}
}

// snapshotLocked returns a copy of the task a reader may keep; nil when
// the task is not cached. Callers hold h.mu.
func (h *hub) snapshotLocked() *a2a.Task { return h.task.Clone() }

// createLocked stores a new task and publishes it as a Task frame.
func (h *hub) createLocked(ctx context.Context, t *a2a.Task) error {
	v, err := h.hs.store.Create(ctx, h.scope, t)
	if err != nil {
		return err
	}
	h.task, h.version, h.stored, h.appended = t, v, v, 0
	h.publishLocked(frame{seq: v, resp: &a2a.StreamResponse{Task: t.Clone()}})
	return nil
}

// holdLocked keeps a new task in the hub only: a deferred create, for a
// task nobody else can name yet (a blocking SendMessage's new task, whose
// id the caller learns from the answer). Its writes cost no store round
// trip until it reaches a state the caller is answered with; see
// [Handler] (Write path).
func (h *hub) holdLocked(t *a2a.Task) {
	h.task, h.version, h.stored, h.appended = t, 1, 0, 0
	h.heldSince = time.Now()
}

// held reports a deferred create in progress.
func (h *hub) heldLocked() bool { return h.task != nil && h.stored == 0 }

// releaseHeldLocked stores a held task as it stands.
func (h *hub) releaseHeldLocked(ctx context.Context) error {
	t := h.task
	h.task = nil
	if err := h.createLocked(ctx, t); err != nil {
		return err
	}
	return nil
}

// appendLocked applies ev (a status or artifact update) to the task,
// publishes it, and stores it: at once, with the pending events before it,
// when durable; otherwise within the flush interval. Callers hold h.mu
// and have loaded the task.
func (h *hub) appendLocked(ctx context.Context, ev *a2a.StreamResponse, durable bool) error {
	if err := ApplyEvent(h.task, ev); err != nil {
		return err
	}
	h.version++
	if h.heldLocked() {
		h.publishLocked(frame{resp: ev})
		return nil
	}
	if !durable {
		h.pending = append(h.pending, ev)
		h.publishLocked(frame{seq: h.version, resp: ev})
		switch {
		case len(h.pending) >= maxPending:
			return h.flushLocked(ctx)
		case h.flushTimer == nil:
			h.flushTimer = time.AfterFunc(h.hs.flushEvery, h.timedFlush)
		}
		return nil
	}
	batch := append(h.pending, ev)
	var compact *a2a.Task
	if st, _ := eventState(ev); st.State.Terminal() && h.appended+len(batch) > compactAfter {
		compact = h.task
	}
	v, err := h.hs.store.Append(ctx, h.scope, h.id, h.stored, batch, compact)
	if err != nil {
		h.dropLocked(ctx, err)
		return err
	}
	h.stopFlushLocked()
	h.pending = nil
	h.version, h.stored = v, v
	if compact != nil {
		h.appended = 0
	} else {
		h.appended += len(batch)
	}
	h.publishLocked(frame{seq: v, resp: ev})
	return nil
}

// flushLocked stores the pending events. Callers hold h.mu.
func (h *hub) flushLocked(ctx context.Context) error {
	h.stopFlushLocked()
	if len(h.pending) == 0 {
		return nil
	}
	v, err := h.hs.store.Append(ctx, h.scope, h.id, h.stored, h.pending, nil)
	if err != nil {
		h.dropLocked(ctx, err)
		return fmt.Errorf("a2asrv: store artifact updates: %w", err)
	}
	h.appended += len(h.pending)
	h.pending = nil
	h.stored = v
	return nil
}

// timedFlush is the flush timer's: it stores what the executor left
// pending when it went quiet.
func (h *hub) timedFlush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushTimer = nil
	_ = h.flushLocked(context.Background())
}

// applyLocked changes the whole task through mutate and stores it with an
// optimistic version check (re-reading and re-applying on a conflict with
// another replica), then publishes the frame mutate returns. It is the
// write path of the rare whole-task changes (CancelTask, a continuation's
// first write); it returns a snapshot the caller may keep. Callers hold
// h.mu.
func (h *hub) applyLocked(ctx context.Context, mutate func(t *a2a.Task) (*a2a.StreamResponse, error)) (*a2a.Task, error) {
	if h.heldLocked() {
		if err := h.releaseHeldLocked(ctx); err != nil {
			return nil, err
		}
	}
	if err := h.flushLocked(ctx); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		if err := h.loadLocked(ctx); err != nil {
			return nil, err
		}
		next := h.task.Clone()
		resp, err := mutate(next)
		if err != nil {
			return nil, err
		}
		v, err := h.hs.store.Update(ctx, h.scope, next, h.stored)
		if errors.Is(err, ErrConcurrentModification) && i < conflictRetries {
			h.task = nil
			continue
		}
		if err != nil {
			h.task = nil
			return nil, err
		}
		h.task, h.version, h.stored, h.appended = next, v, v, 0
		if resp.Task != nil {
			resp = &a2a.StreamResponse{Task: next.Clone()}
		}
		h.publishLocked(frame{seq: v, resp: resp})
		return next.Clone(), nil
	}
}
