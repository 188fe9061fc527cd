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

// runEvents shows the calls made with a run's token in their runs. They
// are queued as the calls end and written a run at a time with the usage
// batches, so that a call writes nothing, and concurrent calls of one run
// do not contend for it. A run that ended, or a failure to write, loses
// its events, not its calls: the usage ledger has them.
type runEvents struct {
	runs Runs
	log  *slog.Logger

	mu      sync.Mutex
	queued  map[runKey][]gateway.Event
	n       int
	dropped int
}

type runKey struct{ tenant, run string }

func newRunEvents(runs Runs, log *slog.Logger) *runEvents {
	return &runEvents{runs: runs, log: log, queued: map[runKey][]gateway.Event{}}
}

// add queues ev, the call of c, for its run.
func (q *runEvents) add(c *caller, ev llm.CallEvent) {
	if q.runs == nil || c.run == "" {
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= maxQueuedEvents {
		q.dropped++
		return
	}
	k := runKey{c.tenant, c.run}
	q.queued[k] = append(q.queued[k], gateway.Event{Type: llm.EventCall, Payload: payload})
	q.n++
}

// flush writes the queued events, each run's in one append.
func (q *runEvents) flush(ctx context.Context) {
	q.mu.Lock()
	queued, dropped := q.queued, q.dropped
	q.queued, q.n, q.dropped = map[runKey][]gateway.Event{}, 0, 0
	q.mu.Unlock()
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
