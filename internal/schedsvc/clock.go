package schedsvc

import "time"

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
