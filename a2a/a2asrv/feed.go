package a2asrv

import (
	"context"
	"errors"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
)

// Several processes (replicas) may serve one store. A task's execution runs
// in one of them, but a client may subscribe to the task, resume its stream
// or cancel it through any other. A TaskFeed is how a process learns of the
// writes the others make: every hub in use watches its task's feed, so a
// subscriber follows an execution running elsewhere with the sequence numbers
// the executing process streams, and an execution whose task another process
// cancelled (or took over with a newer message) is stopped. Without a feed a
// Handler assumes it is the task's only writer, as before.

// TaskFeed announces the task writes that other processes sharing the store
// commit. It is implemented next to a store that several processes share (a
// database); see the package doc, Replicas.
type TaskFeed interface {
	// Watch calls fn with the writes to task id committed after Watch
	// returns, each once, in the order the store committed them, until
	// stop is called. fn must not block. A feed may also report the
	// writes of this process, which the Handler recognises by their
	// versions.
	Watch(id string, fn func(TaskChange)) (stop func())
	// CatchUp returns what was written to the task after version after,
	// as one change from after to the task's version: its events when the
	// store still keeps every one of them apart, otherwise the whole task.
	// A change whose Version is not past after means nothing was written.
	// It returns ErrNotFound when the task is gone.
	CatchUp(ctx context.Context, scope Scope, id string, after Version) (TaskChange, error)
}

// TaskChange is one write to a task, as a TaskFeed reports it: the write
// moved the task from version Prev to Version. An append carries its events
// (Version-Prev of them, each the frame of the version it led to); a write
// of the whole task (an update, a settlement by crash recovery) carries the
// task as written. When neither is set, the feed could not carry the write
// (too large for its channel), and the watcher reads it with CatchUp.
type TaskChange struct {
	ID            string
	Prev, Version Version
	Events        []*a2a.StreamResponse
	Task          *a2a.Task
	// Lost says the feed may have missed writes to the task (its
	// connection to the store dropped): the watcher catches up from the
	// store. Prev and Version are then unset.
	Lost bool
}

// whole reports whether c carries its write in full: the task as written,
// or one event for each version it moved the task by.
func (c *TaskChange) whole() bool {
	if c.Task != nil {
		return true
	}
	return c.Events != nil && c.Version-c.Prev == Version(len(c.Events))
}

// maxQueuedChanges bounds the changes a hub holds unprocessed; past it they
// collapse into one catch-up from the store.
const maxQueuedChanges = 1024

// catchUpTimeout bounds one catch-up read of the store.
const catchUpTimeout = 10 * time.Second

// watchLocked starts following the task's writes elsewhere; hubs.mu is
// held.
func (h *hub) watchLocked() {
	if h.hs.feed != nil {
		h.unwatch = h.hs.feed.Watch(h.id, h.onChange)
	}
}

// onChange queues c for the hub; it runs on the feed's goroutine and must
// not block, so the changes are applied by a goroutine of the hub's own.
func (h *hub) onChange(c TaskChange) {
	h.changeMu.Lock()
	if len(h.changes) >= maxQueuedChanges {
		h.changes = append(h.changes[:0], TaskChange{ID: h.id, Lost: true})
	} else {
		h.changes = append(h.changes, c)
	}
	start := !h.draining
	h.draining = true
	h.changeMu.Unlock()
	if start {
		go h.drainChanges()
	}
}

func (h *hub) drainChanges() {
	for {
		h.changeMu.Lock()
		cs := h.changes
		h.changes = nil
		if len(cs) == 0 {
			h.draining = false
			h.changeMu.Unlock()
			return
		}
		h.changeMu.Unlock()
		h.mu.Lock()
		for _, c := range cs {
			h.followLocked(c)
		}
		h.mu.Unlock()
	}
}

// followLocked brings the hub up to date with a write made elsewhere: its
// frames go to the subscribers with the versions the writer gave them, and
// an execution of this process that the write overtook is stopped. Callers
// hold h.mu.
func (h *hub) followLocked(c TaskChange) {
	if h.task == nil || h.heldLocked() {
		return // nothing cached: the next read sees the store as it is
	}
	if !c.Lost && c.Version <= h.stored {
		return // this process's own write, or one already caught up with
	}
	if !c.Lost && c.Prev == h.stored && len(h.pending) == 0 && c.whole() {
		h.applyForeignLocked(c)
		return
	}
	// The change starts past the version held (a report was missed), or
	// does not carry its write whole: applying it would leave the cache
	// short of writes the store has, so read them from the store.
	ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
	defer cancel()
	if err := h.catchUpLocked(ctx); err != nil {
		h.hs.log.Warn("a2asrv: catch up with a task written elsewhere", "task_id", h.id, "err", err)
	}
}

// catchUpLocked reads from the store what was written after the version
// the hub holds, and follows it. Callers hold h.mu.
func (h *hub) catchUpLocked(ctx context.Context) error {
	c, err := h.hs.feed.CatchUp(ctx, h.scope, h.id, h.stored)
	if errors.Is(err, ErrNotFound) {
		h.dropLocked(ctx, err)
		return nil // deleted: nothing more will be written
	}
	if err != nil {
		return err
	}
	if c.Version <= h.stored {
		return nil
	}
	if n := len(h.pending); n > 0 {
		// Chunks this process streamed but had not stored yet lose to
		// the write that overtook them, as they would to a crash.
		h.hs.log.Warn("a2asrv: artifact updates overtaken by a write elsewhere", "task_id", h.id, "count", n)
		h.stopFlushLocked()
		h.pending = nil
		if c.Task == nil {
			// The cached task has those chunks applied: the events
			// that overtook them would land on top of them, so take
			// the task whole from the store instead.
			t, v, err := h.hs.store.Get(ctx, h.scope, h.id)
			if err != nil {
				h.dropLocked(ctx, err)
				return err
			}
			c = TaskChange{ID: h.id, Prev: h.stored, Version: v, Task: t}
		}
	}
	h.applyForeignLocked(c)
	return nil
}

// applyForeignLocked applies c, a write made elsewhere that follows the
// version the hub holds, and publishes its frames. Callers hold h.mu.
func (h *hub) applyForeignLocked(c TaskChange) {
	if c.Task != nil {
		resp := wholeWriteFrame(h.task, c.Task)
		h.task, h.appended = c.Task, 0
		h.version, h.stored = c.Version, c.Version
		h.publishLocked(frame{seq: c.Version, resp: resp})
	} else {
		if !c.whole() {
			// Only a catch-up gets here with such a change (followLocked
			// catches up instead): a store answering so is broken, and
			// the next read starts over from what it holds.
			h.dropLocked(context.Background(), errors.New("a2asrv: a change's events do not match its versions"))
			return
		}
		for i, ev := range c.Events {
			if err := ApplyEvent(h.task, ev); err != nil {
				h.dropLocked(context.Background(), err)
				return
			}
			h.version, h.stored = c.Prev+Version(i+1), c.Prev+Version(i+1)
			h.publishLocked(frame{seq: h.version, resp: ev})
		}
		h.appended += len(c.Events)
	}
	h.overtakenLocked()
}

// overtakenLocked stops this process's execution of the task after another
// process wrote it: that process cancelled the task, settled it, or runs a
// newer message, and owns what comes next. Callers hold h.mu.
func (h *hub) overtakenLocked() {
	ex := h.exec
	if ex == nil || !ex.upd.landed {
		return
	}
	ex.upd.revoked = true
	cause := ErrSuperseded
	if h.task != nil && h.task.Status.State.Terminal() {
		cause = ErrCanceled
	}
	ex.cancel(cause)
}

// wholeWriteFrame is the frame a process that writes a task whole streams
// for the write, recovered from the task before and after it: a change of
// status alone (CancelTask) is a status update, anything more (a
// continuation, a settlement) the whole task.
func wholeWriteFrame(before, after *a2a.Task) *a2a.StreamResponse {
	if before != nil && len(before.History) == len(after.History) && len(before.Artifacts) == len(after.Artifacts) {
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
			TaskID: after.ID, ContextID: after.ContextID, Status: after.Status,
		}}
	}
	return &a2a.StreamResponse{Task: after.Clone()}
}

// Watchers is the registry of watches a TaskFeed implementation keeps:
// Watch adds one, Announce reports a write to the watches of its task. The
// zero value is ready to use.
type Watchers struct {
	mu sync.Mutex
	m  map[string]map[*watch]struct{}
}

type watch struct{ fn func(TaskChange) }

// Watch implements TaskFeed.Watch.
func (w *Watchers) Watch(id string, fn func(TaskChange)) (stop func()) {
	wt := &watch{fn: fn}
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[string]map[*watch]struct{})
	}
	set := w.m[id]
	if set == nil {
		set = make(map[*watch]struct{}, 1)
		w.m[id] = set
	}
	set[wt] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set := w.m[id]; set != nil {
			delete(set, wt)
			if len(set) == 0 {
				delete(w.m, id)
			}
		}
	}
}

// Announce reports a write to task id to its watches, each with a change of
// its own from change (watchers apply what they are given in place, so they
// must not share it). Calls for one task must be made in commit order.
func (w *Watchers) Announce(id string, change func() TaskChange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := range w.m[id] {
		wt.fn(change())
	}
}

// AnnounceLost tells every watch that writes may have been missed.
func (w *Watchers) AnnounceLost() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, set := range w.m {
		for wt := range set {
			wt.fn(TaskChange{ID: id, Lost: true})
		}
	}
}
