package agenthost

import (
	"context"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/lease"
)

// Crash recovery. A task whose process died while it ran stays SUBMITTED or
// WORKING in the database, and nothing would ever move it on. The host
// therefore sweeps: once at Start, before the server serves, and then every lease
// Expiry for as long as it runs (with several replicas on one PostgreSQL,
// another one may die at any time; a SQLite file shared by two processes is
// treated the same way). Each sweep settles the tasks whose writer's lease
// has lapsed FAILED, through a2asrv.Recover. Sweeping more often would buy
// nothing: a process that dies leaves orphans only once its lease lapses,
// Expiry after its last renewal, so a sweep every Expiry settles them at
// most one Expiry later, while each sweep reads every unsettled row.
//
// The sweep works on the database's own store, below the per-agent
// partition (partition.go): every stored row already carries its agent's
// partitioned scope, which the settling write keeps, so a settled task
// stays visible through its own agent only, and a task of an agent this
// server no longer hosts is settled too.

// sweepTimeout bounds one sweep, so a stuck database cannot hold Start or
// the sweeper forever.
const sweepTimeout = 2 * time.Minute

// sweep settles what dead processes left running and logs how many.
func (h *Host) sweep(ctx context.Context, r a2asrv.Recoverer) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	n, err := a2asrv.Recover(ctx, r, &a2asrv.RecoverOptions{Logger: h.log})
	if n > 0 {
		h.log.Warn("agenthost: settled tasks left running by a dead process", "tasks", n, "state", "TASK_STATE_FAILED")
	}
	if err != nil {
		h.log.Error("agenthost: settle orphaned tasks", "err", err)
	}
}

// startSweeps starts the ticker that times the sweeps after the first:
// every Deps.SweepEvery, the lease expiry (see the comment at the top).
func (h *Host) startSweeps() {
	every := h.deps.SweepEvery
	if every <= 0 {
		every = lease.DefaultExpiry
	}
	ticker := h.deps.SweepTicker
	if ticker == nil {
		ticker = func(every time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(every)
			return t.C, t.Stop
		}
	}
	h.ticks, h.stopTicks = ticker(every)
}

// sweepEvery sweeps at every tick until ctx ends, cutting a sweep in
// progress short.
func (h *Host) sweepEvery(ctx context.Context, r a2asrv.Recoverer) {
	defer h.stopTicks()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.ticks:
			h.sweep(ctx, r)
		}
	}
}
