package platformtest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// FakeClock is a clock that moves only when told: Advance wakes every
// sleeper whose deadline passed, in deadline order. It serves as the
// adapter's Clock and as the fake server's time, so a test decides when
// a token expires, a heartbeat is due or an acknowledgement is late.
type FakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*sleeper
	changed  chan struct{} // closed and replaced when sleepers change
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

// NewFakeClock returns a clock at start (a fixed instant when zero).
func NewFakeClock(start time.Time) *FakeClock {
	if start.IsZero() {
		start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep waits until the clock passed d from now, or ctx ends.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.notify()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		for i, x := range c.sleepers {
			if x == s {
				c.sleepers = append(c.sleepers[:i], c.sleepers[i+1:]...)
				break
			}
		}
		c.notify()
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock on by d and wakes the sleepers it passed, the
// earliest deadline first.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.SliceStable(c.sleepers, func(i, j int) bool { return c.sleepers[i].until.Before(c.sleepers[j].until) })
	keep := c.sleepers[:0]
	for _, s := range c.sleepers {
		if !s.until.After(c.now) {
			close(s.wake)
			continue
		}
		keep = append(keep, s)
	}
	c.sleepers = keep
	c.notify()
}

// notify tells WaitForSleepers that the sleepers changed; c.mu is held.
func (c *FakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Sleepers is how many sleep on the clock now.
func (c *FakeClock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// WaitForSleepers waits until at least n sleep on the clock, so a test
// advances it only once what it waits for is asleep.
func (c *FakeClock) WaitForSleepers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		got, ch := len(c.sleepers), c.changed
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SpedUpClock is an adapter's Clock for long tests against a platform
// on a FakeClock: it tells Base's time, which moves only when the test
// moves it, and sleeps each wait Factor times faster in real time. The
// adapter's retries, backoffs, heartbeats and throttles go on as they
// would, only sooner, while tokens age and acknowledgements fall due
// only when the test lets time pass. A test's outcome must not depend
// on how long those sleeps take: they pace the adapter, they are not
// what the test waits on.
type SpedUpClock struct {
	// Base tells the time: the platform's FakeClock, or any clock that
	// is the platform's.
	Base interface{ Now() time.Time }
	// Factor divides every wait (1 or less: waits are real).
	Factor int
}

// Now is Base's time.
func (c SpedUpClock) Now() time.Time { return c.Base.Now() }

// Sleep waits d divided by Factor in real time, or until ctx ends.
func (c SpedUpClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.Factor > 1 {
		d /= time.Duration(c.Factor)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
