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

// SetRequestTelemetry turns the per-request span, metrics and access log
// on or off for the servers started afterwards; it returns a func that
// restores the setting.
func SetRequestTelemetry(on bool) (restore func()) {
	old := requestTelemetry
	requestTelemetry = on
	return func() { requestTelemetry = old }
}
