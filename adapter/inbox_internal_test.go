package adapter

import (
	"testing"
	"time"
)

// resolveClock is a clock options can be told apart by.
type resolveClock struct {
	SystemClock
	n int
}

// An inbox option left zero (or negative) keeps its default even when
// others are set, and a set one is used as given, down to 1.
func TestInboxOptionsResolve(t *testing.T) {
	const defBusy, defEnv, defBatch = 5 * time.Second, 1 << 20, 1024
	tests := []struct {
		name            string
		opts            *InboxOptions
		busy            time.Duration
		envelope, batch int
		clock           Clock
		observe         bool
	}{
		{"nil", nil, defBusy, defEnv, defBatch, SystemClock{}, false},
		{"zero", &InboxOptions{}, defBusy, defEnv, defBatch, SystemClock{}, false},
		{"negative", &InboxOptions{BusyTimeout: -1, MaxEnvelopeBytes: -1, MaxBatch: -1}, defBusy, defEnv, defBatch, SystemClock{}, false},
		{"smallest", &InboxOptions{BusyTimeout: 1, MaxEnvelopeBytes: 1, MaxBatch: 1}, 1, 1, 1, SystemClock{}, false},
		{"only busy", &InboxOptions{BusyTimeout: time.Second}, time.Second, defEnv, defBatch, SystemClock{}, false},
		{"only batch", &InboxOptions{MaxBatch: 8}, defBusy, defEnv, 8, SystemClock{}, false},
		{"all", &InboxOptions{Clock: resolveClock{n: 1}, BusyTimeout: 1500 * time.Millisecond, MaxEnvelopeBytes: 4096, MaxBatch: 64,
			ObserveCommit: func(int) {}}, 1500 * time.Millisecond, 4096, 64, resolveClock{n: 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.opts.resolve()
			if c.busy != tc.busy || c.maxEnvelope != tc.envelope || c.maxBatch != tc.batch {
				t.Errorf("busy %v, max envelope %d, max batch %d; want %v, %d, %d",
					c.busy, c.maxEnvelope, c.maxBatch, tc.busy, tc.envelope, tc.batch)
			}
			if c.clock != tc.clock || (c.observe != nil) != tc.observe || c.sealer != nil {
				t.Errorf("clock %v, observe set %v, sealer %v; want clock %v, observe set %v, no sealer",
					c.clock, c.observe != nil, c.sealer, tc.clock, tc.observe)
			}
		})
	}
}

// Mutants left (scripts/mutate ./adapter inbox.go): none.
