package a2asrv

import (
	"context"
	"errors"
	"sync"

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

	mu      sync.Mutex
	scope   Scope
	task    *a2a.Task // cache of the stored task; nil until read or written
	version Version
	exec    *execution
	subs    map[*subscriber]struct{}

	refs int // guarded by hubs.mu
}

type hubs struct {
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
		h = &hub{id: id}
		hs.m[id] = h
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

// errTaskFinished is returned by a mutation applied to a task that is
// already terminal.
var errTaskFinished = errors.New("a2asrv: task is in a terminal state")

// loadLocked fills the cache from the store. Callers hold h.mu.
func (h *hub) loadLocked(ctx context.Context, store TaskStore) error {
	if h.task != nil {
		return nil
	}
	t, v, err := store.Get(ctx, h.scope, h.id)
	if err != nil {
		return err
	}
	h.task, h.version = t, v
	return nil
}

// applyLocked changes the task through mutate, stores it with an optimistic
// version check (re-reading and re-applying on a conflict with another
// replica) and publishes the frame mutate returns. Callers hold h.mu.
func (h *hub) applyLocked(ctx context.Context, store TaskStore, mutate func(t *a2a.Task) (*a2a.StreamResponse, error)) (*a2a.Task, error) {
	const attempts = 5
	for i := 0; ; i++ {
		if err := h.loadLocked(ctx, store); err != nil {
			return nil, err
		}
		next := h.task.Clone()
		resp, err := mutate(next)
		if err != nil {
			return nil, err
		}
		v, err := store.Update(ctx, h.scope, next, h.version)
		if errors.Is(err, ErrConcurrentModification) && i < attempts {
			h.task = nil
			continue
		}
		if err != nil {
			h.task = nil
			return nil, err
		}
		h.task, h.version = next, v
		h.publishLocked(frame{seq: v, resp: resp})
		return next, nil
	}
}

// createLocked stores a new task and publishes it as a Task frame.
func (h *hub) createLocked(ctx context.Context, store TaskStore, t *a2a.Task) error {
	v, err := store.Create(ctx, h.scope, t)
	if err != nil {
		return err
	}
	h.task, h.version = t, v
	h.publishLocked(frame{seq: v, resp: &a2a.StreamResponse{Task: t}})
	return nil
}
