package bench

import (
	"sync"
	"time"
)

// sampler reads resident memory at its start, every interval, and at stop.
type sampler struct {
	mu    sync.Mutex
	prof  MemoryProfile
	ok    bool
	done  chan struct{}
	ended sync.WaitGroup
}

func startSampler(every time.Duration) *sampler {
	s := &sampler{done: make(chan struct{})}
	if m, err := ReadMemory(); err == nil {
		s.ok = true
		s.prof.Start, s.prof.Peak = m.RSS, m.RSS
	}
	if !s.ok {
		return s
	}
	s.ended.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

func (s *sampler) sample() MemoryProfile {
	m, err := ReadMemory()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.prof.Peak = max(s.prof.Peak, m.RSS)
		// The kernel folds per-thread RSS counters into VmHWM lazily, so
		// it can trail a sample we already took.
		s.prof.End, s.prof.HWM = m.RSS, max(m.HWM, s.prof.Peak)
		s.prof.Samples = append(s.prof.Samples, m.RSS)
	}
	p := s.prof
	p.Samples = append([]uint64(nil), s.prof.Samples...)
	return p
}

// stop takes a last sample and returns the profile; zero when memory
// cannot be read on this system.
func (s *sampler) stop() MemoryProfile {
	if !s.ok {
		return MemoryProfile{}
	}
	close(s.done)
	s.ended.Wait()
	return s.sample()
}
