package llmgw

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/llm"
)

// maxQueuedEvents bounds the run events waiting to be written; past it a
// call's event is dropped (the usage ledger still counts the call).
const maxQueuedEvents = 1 << 16

// runEvents shows the calls made with a run's token in their runs. A call
// ends only once its event is written (commit), so that an agent that
// finishes its run on the answer finds the call in it: a run that ended
// takes no more events. The events of calls ending together are written
// in one append per run (group commit), so concurrent calls of one run do
// not contend for it. A failure to write loses the events, not the calls:
// the usage ledger has them.
type runEvents struct {
	runs Runs
	log  *slog.Logger

	// flushing is held by the one flush writing at a time.
	flushing sync.Mutex

	mu      sync.Mutex
	queued  map[runKey][]gateway.Event
	written chan struct{} // closed once the queued events are written
	n       int
	dropped int
}

type runKey struct{ tenant, run string }

func newRunEvents(runs Runs, log *slog.Logger) *runEvents {
	return &runEvents{runs: runs, log: log, queued: map[runKey][]gateway.Event{}}
}

// commit writes ev, the call of c, to its run, with whatever other calls'
// events are waiting: the first caller to find no flush running writes
// them all, the others wait for it.
func (q *runEvents) commit(ctx context.Context, c *caller, ev llm.CallEvent) {
	written := q.add(c, ev)
	if written == nil {
		return
	}
	q.flushing.Lock()
	defer q.flushing.Unlock()
	select {
	case <-written: // the flush this one waited for wrote it
	default:
		q.flushLocked(context.WithoutCancel(ctx))
	}
}

// add queues ev for its run and returns what is closed once it is
// written; nil when it is not queued.
func (q *runEvents) add(c *caller, ev llm.CallEvent) <-chan struct{} {
	if q.runs == nil || c.run == "" {
		return nil
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= maxQueuedEvents {
		q.dropped++
		return nil
	}
	k := runKey{c.tenant, c.run}
	q.queued[k] = append(q.queued[k], gateway.Event{Type: llm.EventCall, Payload: payload})
	q.n++
	if q.written == nil {
		q.written = make(chan struct{})
	}
	return q.written
}

// flush writes the queued events, each run's in one append.
func (q *runEvents) flush(ctx context.Context) {
	q.flushing.Lock()
	defer q.flushing.Unlock()
	q.flushLocked(ctx)
}

func (q *runEvents) flushLocked(ctx context.Context) {
	q.mu.Lock()
	queued, dropped, written := q.queued, q.dropped, q.written
	q.queued, q.n, q.dropped, q.written = map[runKey][]gateway.Event{}, 0, 0, nil
	q.mu.Unlock()
	if written != nil {
		defer close(written)
	}
	if dropped > 0 {
		q.log.WarnContext(ctx, "llmgw: run events dropped: too many waiting to be written", "dropped", dropped)
	}
	for k, evs := range queued {
		err := q.runs.AppendEvents(ctx, k.tenant, k.run, evs...)
		if err != nil && !errors.Is(err, gateway.ErrNotFound) && ctx.Err() == nil {
			q.log.WarnContext(ctx, "llmgw: show calls in their run", "run", k.run, "events", len(evs), "err", err)
		}
	}
}
