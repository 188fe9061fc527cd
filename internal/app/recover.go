package app

import (
	"context"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/lease"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// Crash recovery. A task whose process died while it ran stays SUBMITTED or
// WORKING in the database, and nothing would ever move it on. The server
// therefore sweeps: once at Start, before it serves, and then every lease
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

// recoverable is what a database offers for crash recovery.
type recoverable interface {
	Recoverer() a2asrv.Recoverer
}

var (
	_ recoverable = (*sqlite.DB)(nil)
	_ recoverable = (*postgres.DB)(nil)
)

// sweepTimeout bounds one sweep, so a stuck database cannot hold Start or
// the sweeper forever.
const sweepTimeout = 2 * time.Minute

// recoverer is the server's Recoverer: the database's, or a custom
// TaskStore's when it implements one; nil when there is nothing to recover
// (the in-memory store keeps nothing across a crash).
func (s *Server) recoverer() a2asrv.Recoverer {
	if r, ok := s.db.(recoverable); ok {
		return r.Recoverer()
	}
	if r, ok := s.tasks.(a2asrv.Recoverer); ok {
		return r
	}
	return nil
}

// leaseOptions are the lease times Options ask for.
func (s *Server) leaseOptions() *lease.Options {
	return &lease.Options{Heartbeat: s.opts.LeaseHeartbeat, Expiry: s.opts.LeaseExpiry}
}

// sweep settles what dead processes left running and logs how many.
func (s *Server) sweep(ctx context.Context, r a2asrv.Recoverer) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	n, err := a2asrv.Recover(ctx, r, &a2asrv.RecoverOptions{Logger: s.log})
	if n > 0 {
		s.log.Warn("app: settled tasks left running by a dead process", "tasks", n, "state", "TASK_STATE_FAILED")
	}
	if err != nil {
		s.log.Error("app: settle orphaned tasks", "err", err)
	}
}

// firstSweep claims the sweeper for one Start and runs its first sweep,
// bounded by ctx and cut short by Shutdown. The caller does not hold s.mu:
// a slow database must not stall Addr, URL or Shutdown meanwhile. It
// returns ErrStarted if the server was started, shut down or is starting.
//
// The caller calls the returned func once, holding s.mu: with serving set
// it starts the background sweeps, else it releases the sweeper (the start
// failed, or Shutdown came first).
func (s *Server) firstSweep(ctx context.Context) (func(serving bool), error) {
	s.mu.Lock()
	if s.started || s.shutdown || s.sweeperStop != nil {
		s.mu.Unlock()
		return nil, ErrStarted
	}
	bg, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.sweeperStop, s.sweeperDone = stop, done
	s.mu.Unlock()

	r := s.recoverer()
	if r != nil {
		first, cancel := context.WithCancel(ctx)
		unlink := context.AfterFunc(bg, cancel) // Shutdown cuts it short
		s.sweep(first, r)
		unlink()
		cancel()
	}
	return func(serving bool) {
		if !serving || r == nil {
			stop()
			close(done)
			if s.sweeperDone == done {
				s.sweeperStop, s.sweeperDone = nil, nil
			}
			return
		}
		ticks, stopTicks := sweepTicker(s.sweepInterval())
		go func() {
			defer close(done)
			defer stopTicks()
			for {
				select {
				case <-bg.Done():
					return
				case <-ticks:
					s.sweep(bg, r)
				}
			}
		}()
	}, nil
}

// sweepTicker makes the ticker that times the background sweeps; tests
// replace it to drive them.
var sweepTicker = func(every time.Duration) (ticks <-chan time.Time, stop func()) {
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// sweepInterval is the lease Expiry: see the comment at the top.
func (s *Server) sweepInterval() time.Duration {
	lo, err := s.leaseOptions().Resolve()
	if err != nil { // New checked the options
		return lease.DefaultExpiry
	}
	return lo.Expiry
}

// stopSweeper ends the background sweeps, cutting one in progress short.
func (s *Server) stopSweeper() {
	s.mu.Lock()
	stop, done := s.sweeperStop, s.sweeperDone
	s.sweeperStop = nil
	s.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}
