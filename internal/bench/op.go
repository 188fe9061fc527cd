package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Op is a unit of load that is not one HTTP request: an SDK call that
// makes several, or a plain function as the floor a scenario is compared
// to. [RunOp] calls it from every client.
type Op struct {
	// Name labels the result.
	Name string
	// Do performs one operation; client is the index of the calling
	// client (0 to Concurrency-1), so an Op can keep per-client state
	// (a session) without locks. A non-nil error marks it failed.
	Do func(ctx context.Context, client int) error
	// Kind names a failure for Result.ErrorsByKind (nil: the error's
	// text, cut to maxKindBytes).
	Kind func(error) string
	// Settle, when set, is called by the client after each Do with
	// whether that operation counts (it began after the warm-up and the
	// run was not cut off), so an Op that measures more than its own
	// duration keeps what it measured only for the operations that count.
	Settle func(client int, counted bool)
}

// RoundRobin is one Op spreading its clients over ops: client i runs the
// (i mod n)th, so with one op per server the load is spread round-robin
// over the servers. Name, Kind and Settle are the first op's.
func RoundRobin(ops ...Op) Op {
	if len(ops) == 1 {
		return ops[0]
	}
	op := ops[0]
	op.Do = func(ctx context.Context, client int) error {
		return ops[client%len(ops)].Do(ctx, client)
	}
	return op
}

// PaceOptions tune [RunOp]; nil means a closed loop with the defaults of
// Options.
type PaceOptions struct {
	Options
	// Rate is the target operations per second, summed over the clients:
	// operations are due on a fixed schedule and each goes to the next
	// idle client. When every client is busy, due operations queue (up to
	// Concurrency of them) and then the schedule slips; the achieved
	// Throughput and Result.Lag show it. Zero or negative: a closed loop,
	// each client starting its next operation as soon as the last ended.
	Rate float64
}

// maxKindBytes bounds a failure kind taken from an error's text.
const maxKindBytes = 80

// RunOp runs op from opts.Concurrency clients for opts.Warmup plus
// opts.Duration, paced at opts.Rate or in a closed loop, and reports what
// it measured as [Run] does. Latency is the time Do took; with a rate,
// Lag is how late each operation started against its schedule.
func RunOp(ctx context.Context, op Op, opts *PaceOptions) (*Result, error) {
	var po PaceOptions
	if opts != nil {
		po = *opts
	}
	o := po.withDefaults()
	if op.Do == nil {
		return nil, errors.New("bench: op has no Do")
	}
	kind := op.Kind
	if kind == nil {
		kind = func(err error) string { return clipKind(err.Error()) }
	}

	sampler := startSampler(o.SampleEvery)
	start := time.Now()
	measureFrom, end := start.Add(o.Warmup), start.Add(o.Warmup+o.Duration)
	stats := make([]opStats, o.Concurrency)
	record := func(client int, due, t0 time.Time, err error) {
		elapsed := time.Since(t0)
		counted := !due.Before(measureFrom) && ctx.Err() == nil
		if op.Settle != nil {
			op.Settle(client, counted)
		}
		if !counted {
			return
		}
		st := &stats[client]
		st.requests++
		if po.Rate > 0 {
			st.lag.Record(t0.Sub(due))
		}
		if err != nil {
			st.errors++
			if st.kinds == nil {
				st.kinds = map[string]uint64{}
			}
			st.kinds[kind(err)]++
			if st.firstErr == "" {
				st.firstErr, st.firstErrAt = err.Error(), t0
			}
			return
		}
		st.hist.Record(elapsed)
	}

	var wg sync.WaitGroup
	if po.Rate > 0 {
		due := make(chan time.Time, o.Concurrency)
		for i := range stats {
			wg.Go(func() {
				for d := range due {
					t0 := time.Now()
					record(i, d, t0, op.Do(ctx, i))
				}
			})
		}
		pace(ctx, due, start, end, po.Rate)
		close(due)
	} else {
		for i := range stats {
			wg.Go(func() {
				for ctx.Err() == nil {
					t0 := time.Now()
					if !t0.Before(end) {
						return
					}
					record(i, t0, t0, op.Do(ctx, i))
				}
			})
		}
	}
	wg.Wait()
	finished := time.Now()
	mem := sampler.stop()

	res := &Result{Scenario: op.Name, Concurrency: o.Concurrency, Elapsed: finished.Sub(measureFrom), Memory: mem, TargetRate: max(po.Rate, 0)}
	var h, lag Histogram
	var firstErrAt time.Time
	for i := range stats {
		s := &stats[i]
		h.Merge(&s.hist)
		lag.Merge(&s.lag)
		res.Requests += s.requests
		res.Errors += s.errors
		for k, n := range s.kinds {
			if res.ErrorsByKind == nil {
				res.ErrorsByKind = map[string]uint64{}
			}
			res.ErrorsByKind[k] += n
		}
		if s.firstErr != "" && (res.FirstError == "" || s.firstErrAt.Before(firstErrAt)) {
			res.FirstError, firstErrAt = s.firstErr, s.firstErrAt
		}
	}
	if res.Elapsed > 0 {
		res.Throughput = float64(h.Count()) / res.Elapsed.Seconds()
	}
	res.Latency = latencyOf(&h)
	if po.Rate > 0 {
		l := latencyOf(&lag)
		res.Lag = &l
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("bench: %s: %w", op.Name, err)
	}
	return res, nil
}

// pace sends the due time of every operation from start until end at
// rate per second. It sleeps until the next one is due and then sends
// all that are due, so a late wake-up catches up instead of losing them.
func pace(ctx context.Context, due chan<- time.Time, start, end time.Time, rate float64) {
	interval := time.Duration(float64(time.Second) / rate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := int64(0); ; n++ {
		at := start.Add(time.Duration(n) * interval)
		if !at.Before(end) {
			return
		}
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		select {
		case due <- at:
		case <-ctx.Done():
			return
		}
	}
}

// opStats is owned by one client until RunOp's WaitGroup returns.
type opStats struct {
	hist, lag  Histogram
	requests   uint64
	errors     uint64
	kinds      map[string]uint64
	firstErr   string
	firstErrAt time.Time
}

func latencyOf(h *Histogram) Latency {
	return Latency{P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99), Max: h.Max(), Mean: h.Mean()}
}

func clipKind(s string) string {
	if len(s) <= maxKindBytes {
		return s
	}
	n := maxKindBytes
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
