package app

import (
	"time"
)

// sweepTicker times the hosted agents' background sweeps for tasks of
// dead processes; tests replace it to drive them.
var sweepTicker = func(every time.Duration) (ticks <-chan time.Time, stop func()) {
	t := time.NewTicker(every)
	return t.C, t.Stop
}
