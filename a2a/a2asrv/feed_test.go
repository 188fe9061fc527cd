package a2asrv_test

import (
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/storetest"
)

// lossyFeed is a TaskFeed whose reports can be cut off, as a dropped
// database connection cuts a listener off; Restore reports the gap.
type lossyFeed struct {
	a2asrv.TaskFeed
	mu      sync.Mutex
	cut     bool
	watches map[*func(a2asrv.TaskChange)]string
}

func (f *lossyFeed) Watch(id string, fn func(a2asrv.TaskChange)) func() {
	key := &fn
	f.mu.Lock()
	f.watches[key] = id
	f.mu.Unlock()
	stop := f.TaskFeed.Watch(id, func(c a2asrv.TaskChange) {
		f.mu.Lock()
		cut := f.cut
		f.mu.Unlock()
		if !cut {
			fn(c)
		}
	})
	return func() {
		stop()
		f.mu.Lock()
		delete(f.watches, key)
		f.mu.Unlock()
	}
}

// drop cuts the feed off and, after writes made meanwhile, restores it.
func (f *lossyFeed) drop(restore <-chan struct{}) {
	f.mu.Lock()
	f.cut = true
	f.mu.Unlock()
	go func() {
		<-restore
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cut = false
		for fn, id := range f.watches {
			(*fn)(a2asrv.TaskChange{ID: id, Lost: true})
		}
	}()
}

func TestMemoryTaskFeed(t *testing.T) {
	storetest.TestTaskFeed(t, func(t *testing.T) func() storetest.Replica {
		shared := a2asrv.NewMemoryTaskStore(nil)
		return func() storetest.Replica {
			f := &lossyFeed{TaskFeed: shared.Feed(), watches: map[*func(a2asrv.TaskChange)]string{}}
			return storetest.Replica{Tasks: shared, Feed: f, DropFeed: func(t *testing.T) {
				restore := make(chan struct{})
				f.drop(restore)
				// Back after the test's next writes; whether they
				// land before or after, B must end up with them.
				time.AfterFunc(200*time.Millisecond, func() { close(restore) })
			}}
		}
	})
}
