package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"novaos.dev/novaos/gateway"
)

// A run its agent started is leased to the agent (gateway.PullLeaseOwner)
// until its last sign of life plus Options.RunStaleAfter. The execution
// gateway claims a RUNNING run whose lease lapsed and, for a started
// pull run, ends it stale: its adapter died and did not come back (one
// that restarts ends its old runs interrupted itself). Signs of life
// are the writes of the run its agent makes anyway (start, resume,
// patch, a message in it) and heartbeats that list the run in
// active_runs; a heartbeat writes a run only when its lease has less
// than three quarters of the window left, so a run is written about
// once per quarter window at most, and not at all while patches keep
// its lease fresh. Every such write is a compare-and-set of the run
// like any other, so of a claim and a sign of life that race exactly
// one wins: the claim (the run ends stale) or the sign (the lease is the
// agent's again, and the claim's ending writes nothing).

// StaleAfter is Options.RunStaleAfter: how long a started run's agent
// may go without a sign of life of it.
func (s *Service) StaleAfter() time.Duration { return s.o.RunStaleAfter }

// refreshBelow is the lease left under which a heartbeat extends it.
func (s *Service) refreshBelow() time.Duration { return s.o.RunStaleAfter - s.o.RunStaleAfter/4 }

// alive leases r to its agent for the stale window from now, when r is a
// started run that runs (a waiting run is claimed by no one, and its
// lease is set afresh when it is resumed). It is called inside the
// writes of the run that its agent makes.
func (s *Service) alive(r *gateway.Run, now time.Time) {
	if r.Status == gateway.StatusRunning && starts(r) > 0 {
		r.LeaseOwner, r.LeaseUntil = gateway.PullLeaseOwner, now.Add(s.o.RunStaleAfter)
	}
}

// noted remembers the lease of a run as a write or read left it.
func (s *Service) noted(r gateway.Run) {
	if r.Status == gateway.StatusRunning && starts(&r) > 0 && r.LeaseOwner == gateway.PullLeaseOwner {
		s.leases.note(r.ID, r.LeaseUntil, s.o.Now())
	}
}

// errLeaseFresh: the run's lease needs no extension (another replica
// extended it meanwhile).
var errLeaseFresh = errors.New("delivery: the run's lease is fresh")

// keepAliveWorkers bounds the runs one heartbeat writes at once: the
// writes of a heartbeat that finds many runs due share the store's
// commits (SQLite's group commit, PostgreSQL's pipelining of the pool)
// instead of waiting on one another.
const keepAliveWorkers = 8

// keepAlive extends the leases of the runs a heartbeat of agent a lists
// as active: only its own runs (of its tenant, of its instance), only
// started ones that run, and only those whose lease has less than
// refreshBelow left. A run this process saw with a fresh lease is not
// read at all; the work of one heartbeat is bounded by the heartbeat's
// own bound on active_runs (delivery.MaxHeartbeatActiveRuns). A store
// failure stops the pass (the next heartbeat tries again) and is
// logged, never answered: the heartbeat itself was taken.
func (s *Service) keepAlive(ctx context.Context, a Agent, ids []string) {
	if len(ids) == 0 {
		return
	}
	below := s.refreshBelow()
	if due := s.leases.due(ids, s.o.Now(), below); len(due) > 0 {
		s.keepDueAlive(ctx, a, due, below)
	}
}

// keepDueAlive is keepAlive of the runs due, keepAliveWorkers at once.
func (s *Service) keepDueAlive(ctx context.Context, a Agent, due []string, below time.Duration) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(keepAliveWorkers, len(due)) {
		wg.Go(func() {
			for id := range work {
				if err := s.keepRunAlive(ctx, a, id, below); err != nil {
					stop(err)
				}
			}
		})
	}
	for _, id := range due {
		if ctx.Err() != nil {
			break
		}
		work <- id
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		s.log.WarnContext(ctx, "delivery: a heartbeat's runs could not be kept alive", "agent_id", a.ID, "err", err)
	}
}

// keepRunAlive extends the lease of agent a's run id when it is a
// started run that runs and its lease has less than below left.
func (s *Service) keepRunAlive(ctx context.Context, a Agent, id string, below time.Duration) error {
	run, err := s.runs.GetRun(ctx, a.TenantID, id)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if run.InstanceID != a.ID || run.Status != gateway.StatusRunning || starts(&run) == 0 {
		return nil // another agent's, or not running: nothing to keep
	}
	if run.LeaseOwner == gateway.PullLeaseOwner && run.LeaseUntil.Sub(s.o.Now()) >= below {
		s.noted(run)
		return nil
	}
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		if r.Status != gateway.StatusRunning || starts(r) == 0 {
			return nil, errRunMovedOn
		}
		if r.LeaseOwner == gateway.PullLeaseOwner && r.LeaseUntil.Sub(now) >= below {
			return nil, errLeaseFresh
		}
		s.alive(r, now)
		return nil, nil
	})
	switch {
	case errors.Is(err, errRunMovedOn) || errors.Is(err, errLeaseFresh):
		return nil
	case err != nil:
		return fmt.Errorf("run %s: %w", id, err)
	}
	s.noted(stored)
	return nil
}

// maxLeaseNotes bounds the runs whose leases a process remembers.
const maxLeaseNotes = 1 << 16

// leaseNotes remembers, for a bounded number of runs, the latest lease
// this process saw a started run hold. A run's lease only moves on while
// the run is started and runs (it is claimed only once it lapsed), so
// a note that is still fresh says the run needs no extension; a note is
// never taken for anything else (which agent's the run is is read from
// the store), so one that is wrong costs a read, never an ending.
type leaseNotes struct {
	mu  sync.Mutex
	m   map[string]time.Time
	max int
}

func newLeaseNotes(max int) *leaseNotes { return &leaseNotes{m: map[string]time.Time{}, max: max} }

// due returns the runs of ids, each once, whose lease may have less
// than below left at now: those not noted, or whose note says so.
func (n *leaseNotes) due(ids []string, now time.Time, below time.Duration) []string {
	var out []string
	var seen map[string]bool
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		if until, ok := n.m[id]; ok && until.Sub(now) >= below || seen[id] {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool, len(ids))
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// note remembers the run's lease (the later of two). Full, it forgets
// the leases lapsed at now (their runs ended, or their agents went
// away), and, when that frees nothing, every one (they are read again).
func (n *leaseNotes) note(id string, until, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.m[id]; !ok && len(n.m) >= n.max {
		for k, v := range n.m {
			if !v.After(now) {
				delete(n.m, k)
			}
		}
		if len(n.m) >= n.max {
			clear(n.m)
		}
	}
	if n.m[id].Before(until) {
		n.m[id] = until
	}
}
