package platformtest

import (
	"context"
	"testing"
	"time"
)

func TestFakeClockWakesInDeadlineOrder(t *testing.T) {
	c := NewFakeClock(time.Time{})
	ctx := context.Background()
	order := make(chan time.Duration, 3)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		go func() {
			if err := c.Sleep(ctx, d); err == nil {
				order <- d
			}
		}()
	}
	if err := c.WaitForSleepers(ctx, 3); err != nil {
		t.Fatal(err)
	}
	c.Advance(1500 * time.Millisecond)
	if got := <-order; got != time.Second {
		t.Fatalf("woke %v first", got)
	}
	if c.Sleepers() != 2 {
		t.Fatalf("%d sleepers after waking one", c.Sleepers())
	}
	c.Advance(5 * time.Second)
	a, b := <-order, <-order
	if a+b != 5*time.Second {
		t.Fatalf("woke %v and %v", a, b)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.Sleep(cctx, time.Hour) }()
	_ = c.WaitForSleepers(ctx, 1)
	cancel()
	if err := <-done; err == nil || c.Sleepers() != 0 {
		t.Fatalf("a cancelled sleep: %v, %d sleepers", err, c.Sleepers())
	}
}
