package schedsvc

import (
	"sync"
	"time"
)

// Clock tells the time and wakes the scheduler at a time. Tests give a
// clock they move by hand, so no test waits for a real minute to pass.
type Clock interface {
	Now() time.Time
	// At returns a channel that is closed once the clock reaches t (at
	// once when it has), and a function that releases the wait early.
	At(t time.Time) (<-chan struct{}, func())
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) At(t time.Time) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	tm := time.AfterFunc(time.Until(t), func() { close(ch) })
	return ch, func() { tm.Stop() }
}

// ManualClock is a Clock that moves only when it is Set, so a test fires
// a schedule without waiting for its minute to come.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	waits  map[*manualWait]bool
	asleep chan struct{} // closed once a wait starts after the latest Set
}

type manualWait struct {
	at time.Time
	ch chan struct{}
}

// NewManualClock returns a clock that reads now until it is Set.
func NewManualClock(now time.Time) *ManualClock {
	return &ManualClock{now: now, waits: map[*manualWait]bool{}, asleep: make(chan struct{})}
}

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) At(t time.Time) (<-chan struct{}, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &manualWait{at: t, ch: make(chan struct{})}
	if !t.After(c.now) {
		close(w.ch)
		return w.ch, func() {}
	}
	c.waits[w] = true
	select {
	case <-c.asleep:
	default:
		close(c.asleep)
	}
	return w.ch, func() {
		c.mu.Lock()
		delete(c.waits, w)
		c.mu.Unlock()
	}
}

// Set moves the clock to t and ends the waits it reaches.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.asleep = make(chan struct{})
	for w := range c.waits {
		if !w.at.After(t) {
			close(w.ch)
			delete(c.waits, w)
		}
	}
}

// Asleep returns a channel that is closed once a wait for a time after
// the clock's starts after the latest Set: a scheduler on the clock alone
// has then handled every tick due by the time Set.
func (c *ManualClock) Asleep() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asleep
}
