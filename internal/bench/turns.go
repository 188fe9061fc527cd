package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of [PhasesOptions].
const (
	DefaultPhasesConcurrency = 8
	DefaultPhasesRound       = time.Second
)

// PhasesOptions tune a benchmark of two phases, each running its sides
// in turns: a latency phase of one client, one call at a time, then a
// load phase of Concurrency clients (bench tools's, bench llm's). Nil or
// zero fields mean the defaults.
type PhasesOptions struct {
	// Concurrency is the number of clients of the load phase, each with
	// one call in flight (default 8).
	Concurrency int
	// Duration is the measured time of each side in each phase (default
	// 10s), Warmup its unmeasured time first (default 1s; negative:
	// none).
	Duration, Warmup time.Duration
	// Round is how long one side runs before the next takes over
	// (default 1s): the sides take turns, A B C C B A …, so that the
	// machine's noise and drift fall on each.
	Round time.Duration
	// MeasuredRound, when set, is called as each measured round of a side
	// starts, with the phase ("latency" or "load"), the side's scenario
	// and the round's number from 0; the function it returns is called
	// as the round ends.
	MeasuredRound func(phase, scenario string, n int) (end func())
}

func (o *PhasesOptions) withDefaults() PhasesOptions {
	var v PhasesOptions
	if o != nil {
		v = *o
	}
	if v.Concurrency <= 0 {
		v.Concurrency = DefaultPhasesConcurrency
	}
	if v.Duration <= 0 {
		v.Duration = 10 * time.Second
	}
	if v.Warmup == 0 {
		v.Warmup = time.Second
	}
	v.Warmup = max(v.Warmup, 0)
	if v.Round <= 0 {
		v.Round = DefaultPhasesRound
	}
	return v
}

// phase names a phase and its clients.
type phase struct {
	name    string
	clients int
}

// phases are the latency phase and the load phase.
func (o *PhasesOptions) phases() [2]phase {
	return [2]phase{{"latency", 1}, {"load", o.Concurrency}}
}

// turns is how phase, of clients, runs its sides.
func (o *PhasesOptions) turns(phase string, clients int) turns {
	tt := turns{clients: clients, warmup: o.Warmup, duration: o.Duration, round: o.Round}
	if o.MeasuredRound != nil {
		tt.measured = func(scenario string, n int) func() { return o.MeasuredRound(phase, scenario, n) }
	}
	return tt
}

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

// roundPlan splits a side's measured time d into rounds of at most
// round each, all of the same length.
func roundPlan(d, round time.Duration) (rounds int, per time.Duration) {
	rounds = int((d + round - 1) / round)
	return rounds, d / time.Duration(rounds)
}
