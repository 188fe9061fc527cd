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

// phasesDefaults are the turns of [PhasesOptions] left zero.
var phasesDefaults = turns{clients: DefaultPhasesConcurrency, warmup: time.Second, duration: 10 * time.Second, round: DefaultPhasesRound}

// runPhases runs the latency phase, of one client, then the load phase,
// of o.Concurrency clients: phase sets up a phase's sides, has them take
// turns as tt says, and reads its figures.
func runPhases[P any](ctx context.Context, o *PhasesOptions, phase func(ctx context.Context, tt turns) (P, error)) (latency, load P, err error) {
	var v PhasesOptions
	if o != nil {
		v = *o
	}
	tt := turnsOf(v.Concurrency, v.Warmup, v.Duration, v.Round, phasesDefaults)
	out := [2]*P{&latency, &load}
	for i, name := range [2]string{"latency", "load"} {
		pt := tt
		if i == 0 {
			pt.clients = 1
		}
		if v.MeasuredRound != nil {
			pt.measured = func(scenario string, n int) func() { return v.MeasuredRound(name, scenario, n) }
		}
		if *out[i], err = phase(ctx, pt); err != nil {
			return latency, load, err
		}
	}
	return latency, load, nil
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

// turns is how sides take turns: each for warmup unmeasured, then each
// for duration in rounds of at most round, taking turns A B C C B A …, so
// that the machine's noise and drift fall on each; measured, when set, is
// called as each measured round of a [side] starts with the side's name
// and the round's number, and the function it returns as the round ends.
type turns struct {
	clients                 int
	warmup, duration, round time.Duration
	measured                func(scenario string, n int) (end func())
}

// turnsOf is the turns of clients, warmup, duration and round, the four
// options of every runner of sides in turns, each zero one at def's (a
// negative warm-up: none).
func turnsOf(clients int, warmup, duration, round time.Duration, def turns) turns {
	tt := turns{clients: clients, warmup: warmup, duration: duration, round: round}
	if tt.clients <= 0 {
		tt.clients = def.clients
	}
	if tt.duration <= 0 {
		tt.duration = def.duration
	}
	if tt.warmup == 0 {
		tt.warmup = def.warmup
	}
	tt.warmup = max(tt.warmup, 0)
	if tt.round <= 0 {
		tt.round = def.round
	}
	return tt
}

// run has sides take turns, telling tt.measured each measured round's
// side by its name.
func (tt turns) run(ctx context.Context, sides []*side) error {
	var measured func(k, n int) func()
	if tt.measured != nil {
		measured = func(k, n int) func() { return tt.measured(sides[k].name, n) }
	}
	return takeTurns(ctx, tt, sides, measured)
}

// A turnTaker is a side that takes turns: round runs it from clients for
// d, a client starting no call after d, and keeps what it measured when
// measured is set.
type turnTaker interface {
	round(ctx context.Context, clients int, d time.Duration, measured bool) error
}

// takeTurns has sides take turns as tt says (but for tt.measured):
// measured, when set, is called as each measured round starts with the
// side's index and the round's number from 0, and the function it
// returns as the round ends. It fails when a round does, which a round
// does only when ctx ends.
func takeTurns[S turnTaker](ctx context.Context, tt turns, sides []S, measured func(side, n int) (end func())) error {
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
		end := func() {}
		if measured != nil {
			end = measured(k, r)
		}
		err := sides[k].round(ctx, tt.clients, per, true)
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
