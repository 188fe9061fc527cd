package a2asrv

import (
	"sync"
	"time"
)

// workers runs executions on goroutines that outlive one execution. A fresh
// goroutine starts with a small stack that the JSON encoding of every write
// grows again and again; reusing goroutines keeps their grown stacks, which
// measured about a tenth of a SendMessage's CPU time.
type workers struct {
	jobs     chan func()
	quit     chan struct{}
	quitOnce sync.Once
}

// idleWorker is how long a worker waits for its next job before exiting.
const idleWorker = 10 * time.Second

func newWorkers() *workers {
	return &workers{jobs: make(chan func()), quit: make(chan struct{})}
}

// run hands f to an idle worker, or starts a new one.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	idle := time.NewTimer(idleWorker)
	defer idle.Stop()
	for {
		f()
		idle.Reset(idleWorker)
		select {
		case f = <-w.jobs:
		case <-idle.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop lets idle workers exit; running jobs finish first.
func (w *workers) stop() { w.quitOnce.Do(func() { close(w.quit) }) }
