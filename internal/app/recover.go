package app

import (
	"time"

	"novaos.dev/novaos/store/lease"
)

// sweepTicker times the hosted agents' background sweeps for tasks of
// dead processes; tests replace it to drive them.
var sweepTicker = func(every time.Duration) (ticks <-chan time.Time, stop func()) {
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// sweepInterval is the lease Expiry: a process that dies leaves orphans
// only once its lease lapses, so sweeping more often buys nothing.
func (s *Server) sweepInterval() time.Duration {
	lo, err := s.leaseOptions().Resolve()
	if err != nil { // New checked the options
		return lease.DefaultExpiry
	}
	return lo.Expiry
}
