package adapter

import (
	"testing"
	"time"
)

// An outbox option left zero (or negative) keeps its default even when
// others are set, and a set one is used as given, down to 1.
func TestOutboxOptionsResolve(t *testing.T) {
	const defBusy, defBody = 5 * time.Second, 1 << 20
	tests := []struct {
		name  string
		opts  *OutboxOptions
		busy  time.Duration
		body  int
		clock Clock
	}{
		{"nil", nil, defBusy, defBody, SystemClock{}},
		{"zero", &OutboxOptions{}, defBusy, defBody, SystemClock{}},
		{"negative", &OutboxOptions{BusyTimeout: -1, MaxBodyBytes: -1}, defBusy, defBody, SystemClock{}},
		{"smallest", &OutboxOptions{BusyTimeout: 1, MaxBodyBytes: 1}, 1, 1, SystemClock{}},
		{"only busy", &OutboxOptions{BusyTimeout: time.Second}, time.Second, defBody, SystemClock{}},
		{"only body", &OutboxOptions{MaxBodyBytes: 8}, defBusy, 8, SystemClock{}},
		{"all", &OutboxOptions{Clock: resolveClock{n: 2}, BusyTimeout: 1500 * time.Millisecond, MaxBodyBytes: 4096},
			1500 * time.Millisecond, 4096, resolveClock{n: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.opts.resolve()
			if c.busy != tc.busy || c.maxBody != tc.body || c.clock != tc.clock {
				t.Errorf("busy %v, max body %d, clock %v; want %v, %d, %v", c.busy, c.maxBody, c.clock, tc.busy, tc.body, tc.clock)
			}
		})
	}
}

// Mutants left (scripts/mutate ./adapter outbox_store.go): none.
