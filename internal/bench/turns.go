package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// side is one side of a phase run in turns with the others: each of its
// clients calls do over and over, and a measured round keeps what the
// calls took.
type side struct {
	name string
	// do makes client's next call; first is when its answer began (its
	// first streamed event, or the whole answer), total when it ended.
	do func(ctx context.Context, client int) (first, total time.Duration, err error)

	mu            sync.Mutex
	first, total  Histogram
	calls, errors uint64
	elapsed       time.Duration
	errText       string
}

// throughput is the side's successful calls per second of its measured
// rounds.
func (s *side) throughput() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.total.Count()) / s.elapsed.Seconds()
}

// turns is how a phase runs its sides: each for warmup unmeasured, then
// each for duration in rounds of at most round, taking turns A B C C B A
// …, so that the machine's noise and drift fall on each; measured, when
// set, is called as each measured round starts with the side's name and
// the round's number, and the function it returns as the round ends.
type turns struct {
	clients                 int
	warmup, duration, round time.Duration
	measured                func(scenario string, n int) (end func())
}

func (tt turns) run(ctx context.Context, sides []*side) error {
	if tt.warmup > 0 {
		for _, s := range sides {
			if err := s.round(ctx, tt.clients, tt.warmup, false); err != nil {
				return err
			}
		}
	}
	rounds, per := roundPlan(tt.duration, tt.round)
	n := len(sides)
	for i := range n * rounds {
		// Round r runs the sides forward when r is even, backward when it
		// is odd, so that no side always follows the same one.
		r, k := i/n, i%n
		if r%2 == 1 {
			k = n - 1 - k
		}
		s := sides[k]
		end := func() {}
		if tt.measured != nil {
			end = tt.measured(s.name, r)
		}
		err := s.round(ctx, tt.clients, per, true)
		end()
		if err != nil {
			return err
		}
	}
	return nil
}

// round runs s from each of clients for d; a client starts no call after
// d, and the round lasts until the last one finished.
func (s *side) round(ctx context.Context, clients int, d time.Duration, measured bool) error {
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			var first, total Histogram
			var calls, errs uint64
			var errText string
			for ctx.Err() == nil && time.Now().Before(end) {
				f, t, err := s.do(ctx, i)
				if ctx.Err() != nil {
					break
				}
				calls++
				if err != nil {
					errs++
					if errText == "" {
						errText = err.Error()
					}
					continue
				}
				first.Record(f)
				total.Record(t)
			}
			if !measured {
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.first.Merge(&first)
			s.total.Merge(&total)
			s.calls += calls
			s.errors += errs
			if s.errText == "" {
				s.errText = errText
			}
		})
	}
	wg.Wait()
	if measured {
		s.elapsed += time.Since(start)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bench: %s: %w", s.name, err)
	}
	return nil
}
