package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// DefaultSidesRound is the length of a round of [RunSides] when
// SidesOptions.Round is zero.
const DefaultSidesRound = time.Second

// SidesOptions tune [RunSides]; nil or zero fields mean the defaults.
type SidesOptions struct {
	// Concurrency is the number of clients of each side, each with one
	// request in flight (default 32); a side's clients rest while another
	// side runs.
	Concurrency int
	// Duration is the measured time of each side (default 10s), Warmup
	// its unmeasured time first (default 1s; negative: none).
	Duration, Warmup time.Duration
	// Round is how long one side runs before the next takes over
	// (default DefaultSidesRound): the sides take turns, A B B A … (A B C
	// C B A … with three), so that the machine's noise and drift fall on
	// each.
	Round time.Duration
	// MeasuredRound, when set, is called as each measured round of a side
	// starts, with the side's index and the round's number from 0; the
	// function it returns is called as the round ends.
	MeasuredRound func(side, n int) (end func())
}

// sidesDefaults are the turns of [SidesOptions] left zero.
var sidesDefaults = turns{clients: 32, warmup: time.Second, duration: 10 * time.Second, round: DefaultSidesRound}

// Side is what [RunSides] measured of one scenario.
type Side struct {
	Scenario string `json:"scenario"`
	// Requests are the measured requests, successful or not; Sent is
	// every request the side's clients completed, warm-up included (what
	// the server under test served).
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	Sent     uint64 `json:"sent"`
	// Elapsed is the measured time of the side's rounds.
	Elapsed time.Duration `json:"elapsedNs"`
	// Rounds are the successful requests per second of each measured
	// round, in order, and Throughput is their median: a round that a
	// burst of other work on the machine slowed moves it little.
	Rounds     []float64 `json:"roundThroughputs"`
	Throughput float64   `json:"throughput"`
	// VsFirst is the median, over the turns, of this side's throughput
	// in a turn over the first side's in the same turn (1 for the first
	// side): the ratio of the two with the drift between turns taken out.
	VsFirst float64 `json:"vsFirst"`
	// CPUPerRequest is the CPU time, user and system, this whole process
	// (servers, clients and all) used in the side's measured rounds over
	// the requests measured; zero where the platform does not tell. It
	// moves less than Throughput when other work on the machine takes
	// the CPUs from the process.
	CPUPerRequest time.Duration `json:"cpuPerRequestNs"`
	// Latency covers the measured successful requests, as [Run]'s does.
	Latency    Latency `json:"latency"`
	FirstError string  `json:"firstError,omitempty"`
}

// RunSides loads each scenario in turn, one at a time, in rounds: every
// side warms up once, then the sides take turns for opts.Round at a time
// until each has run opts.Duration measured. Each side has its own
// keep-alive clients, so its connections outlive its rounds. A failed
// request counts as an error of its side; RunSides itself fails only
// when ctx ends.
func RunSides(ctx context.Context, scenarios []Scenario, opts *SidesOptions) ([]Side, error) {
	var o SidesOptions
	if opts != nil {
		o = *opts
	}
	tt := turnsOf(o.Concurrency, o.Warmup, o.Duration, o.Round, sidesDefaults)
	if len(scenarios) == 0 {
		return nil, errors.New("bench: sides: no scenario")
	}
	sides := make([]*sideRun, len(scenarios))
	for i, sc := range scenarios {
		if sc.URL == "" {
			return nil, fmt.Errorf("bench: sides: scenario %q has no URL", sc.Name)
		}
		sides[i] = &sideRun{sc: sc, client: NewClient(tt.clients), out: Side{Scenario: sc.Name}}
		defer sides[i].client.CloseIdleConnections()
	}
	if err := takeTurns(ctx, tt, sides, o.MeasuredRound); err != nil {
		return nil, err
	}
	out := make([]Side, len(sides))
	for k, s := range sides {
		out[k] = s.out
		out[k].Latency = latencyOf(&s.hist)
		out[k].Throughput = median(s.out.Rounds)
		ratios := make([]float64, 0, len(s.out.Rounds))
		for r, tp := range s.out.Rounds {
			if first := sides[0].out.Rounds[r]; first > 0 {
				ratios = append(ratios, tp/first)
			}
		}
		out[k].VsFirst = median(ratios)
		if s.cpuOK && s.out.Requests > 0 {
			out[k].CPUPerRequest = s.cpu / time.Duration(s.out.Requests)
		}
	}
	return out, nil
}

// sideRun accumulates one side's rounds.
type sideRun struct {
	sc     Scenario
	client *http.Client
	hist   Histogram
	out    Side
	errAt  time.Time
	cpu    time.Duration // used in the measured rounds
	cpuOK  bool
}

// round runs the side's scenario from c clients for d; a client starts no
// request after d, and the round lasts until the last one finished.
func (s *sideRun) round(ctx context.Context, c int, d time.Duration, measured bool) error {
	cpu0, ok0 := processCPU()
	start := time.Now()
	g := &generator{sc: s.sc, client: s.client, measureFrom: start, end: start.Add(d)}
	if !measured {
		g.measureFrom = g.end // every request starts before it
	}
	stats := make([]workerStats, c)
	urls := append([]string{s.sc.URL}, s.sc.Replicas...)
	var wg sync.WaitGroup
	for i := range stats {
		wg.Go(func() { g.work(ctx, urls[i%len(urls)], &stats[i]) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, ok1 := processCPU()
	var ok uint64
	for i := range stats {
		st := &stats[i]
		s.out.Sent += st.sent
		if !measured {
			continue
		}
		s.hist.Merge(&st.hist)
		ok += st.hist.Count()
		s.out.Requests += st.requests
		s.out.Errors += st.errors
		if st.firstErr != "" && (s.out.FirstError == "" || st.firstErrAt.Before(s.errAt)) {
			s.out.FirstError, s.errAt = st.firstErr, st.firstErrAt
		}
	}
	if measured {
		s.cpu += cpu1 - cpu0
		s.cpuOK = ok0 && ok1
		s.out.Elapsed += elapsed
		s.out.Rounds = append(s.out.Rounds, float64(ok)/elapsed.Seconds())
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bench: %s: %w", s.sc.Name, err)
	}
	return nil
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
