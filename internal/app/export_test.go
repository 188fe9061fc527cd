package app

import "time"

// SetSweepTicker makes the servers started afterwards time their
// background sweeps with f, which is told the interval; it returns a func
// that restores the real ticker.
func SetSweepTicker(f func(every time.Duration) (ticks <-chan time.Time, stop func())) (restore func()) {
	old := sweepTicker
	sweepTicker = f
	return func() { sweepTicker = old }
}
