package llmgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"novaos.dev/novaos/llm"
)

// ledger holds this replica's budget leases and the usage it has not
// written yet. A call takes its estimate from the leases of its limited
// counters in memory; only a counter it has no lease on, or one whose
// lease ran short, costs a write on the call's path (Store.Lease). What
// calls used is written in batches (Store.Commit) by the background loop,
// which also renews leases, grows those running low before they run out,
// and returns those not used for a while.
type ledger struct {
	st      llm.Store
	o       *Options
	log     *slog.Logger
	budgets func(ctx context.Context, tenant, instance string) ([2]*llm.Budget, error)

	mu       sync.Mutex
	leases   map[llm.Counter]*lease
	ending   []*lease // out of leases, to release once their calls end
	unleased map[llm.Counter]llm.Amount
	usage    map[llm.UsageKey]*llm.UsageRow
	kick     chan struct{}

	flushMu sync.Mutex // one batch at a time
}

// lease is a lease this replica holds on one counter.
type lease struct {
	id       string
	c        llm.Counter
	instance string     // whose budget applies to c besides the tenant's
	own      llm.Amount // the run's own limit, on a run's counter
	limit    llm.Amount // what the budgets (and own) allowed c when it was taken
	fresh    bool       // not in the store yet

	// held is the allowance the store holds for the lease, as far as this
	// replica knows: what was granted, less what commits took off it.
	held llm.Amount
	// inflight are the estimates of calls in flight, pending what settled
	// calls used and flushing what a commit under way writes.
	inflight, pending, flushing llm.Amount
	calls                       int // in flight

	expires   time.Time
	lastUse   time.Time
	refusedAt time.Time // its last refill was refused
	retired   bool      // out of leases

	// est is the last estimate taken, taken what was taken since rate
	// was last updated, rate the estimates taken per second lately.
	est, taken llm.Amount
	rate       [2]float64
	rateAt     time.Time

	// growing is closed when a grow of the lease under way ends.
	growing chan struct{}
}

// left is the allowance the lease has for new calls; below zero when
// calls used more than their estimates.
func (l *lease) left() llm.Amount {
	return minus(minus(minus(l.held, l.inflight), l.pending), l.flushing)
}

// want is what the lease should hold for the counter's recent pace: est
// (a call's estimate) four times over, or LeaseAhead of its spending,
// whichever is more.
func (l *lease) want(est llm.Amount, ahead time.Duration) llm.Amount {
	w := llm.Amount{Tokens: 4 * est.Tokens, Cost: 4 * est.Cost}
	w.Tokens = max(w.Tokens, int64(l.rate[0]*ahead.Seconds()))
	w.Cost = max(w.Cost, llm.Cost(l.rate[1]*ahead.Seconds()))
	return capAmount(w)
}

// short is what l lacks for est on the metrics the lease's limit
// limits.
func (l *lease) short(est llm.Amount) llm.Amount {
	left := l.left()
	var s llm.Amount
	if l.limit.Tokens > 0 {
		s.Tokens = max(est.Tokens-left.Tokens, 0)
	}
	if l.limit.Cost > 0 {
		s.Cost = max(est.Cost-left.Cost, 0)
	}
	return s
}

// runLimit is own on a run's counter, zero on another.
func runLimit(c llm.Counter, own llm.Amount) llm.Amount {
	if c.Scope != llm.ScopeRun {
		return llm.Amount{}
	}
	return own
}

func minus(a, b llm.Amount) llm.Amount {
	return llm.Amount{Tokens: a.Tokens - b.Tokens, Cost: a.Cost - b.Cost}
}

func capAmount(a llm.Amount) llm.Amount {
	return llm.Amount{Tokens: min(max(a.Tokens, 0), llm.MaxAmount), Cost: min(max(a.Cost, 0), llm.MaxAmount)}
}

func newLedger(st llm.Store, o *Options, log *slog.Logger, budgets func(ctx context.Context, tenant, instance string) ([2]*llm.Budget, error)) *ledger {
	return &ledger{st: st, o: o, log: log, budgets: budgets, leases: map[llm.Counter]*lease{},
		unleased: map[llm.Counter]llm.Amount{}, usage: map[llm.UsageKey]*llm.UsageRow{}, kick: make(chan struct{}, 1)}
}

// ticket is a call's hold on its counters, until settle.
type ticket struct {
	keys     llm.Keys
	est      llm.Amount
	leases   []*lease
	unleased []llm.Counter
}

// maxTakeTries bounds a call's grows of its leases when other calls keep
// taking what each grow added before it could.
const maxTakeTries = 8

var errLeaseContention = errors.New("llmgw: the budget leases ran short on every try")

// take holds est against the counters of k: from this replica's leases
// in memory when they have it, else after growing them in the store,
// which refuses (a *llm.BudgetError) when a budget cannot have it. own
// is the run's own limit (zero: none), which bounds k's run counter
// besides the budgets.
func (l *ledger) take(ctx context.Context, k llm.Keys, own, est llm.Amount) (*ticket, error) {
	bs, err := l.budgets(ctx, k.TenantID, k.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("llmgw: read the budgets: %w", err)
	}
	counters := llm.CountersOf(k)
	// Waits for another call's grow are not tries: each ends one.
	for tries := 0; tries < maxTakeTries; {
		now := l.o.Now()
		l.mu.Lock()
		var (
			asks  []llm.LeaseAsk
			grown []*lease
			wait  chan struct{}
		)
		for _, c := range counters {
			lim := llm.LimitOf(bs, c, own)
			e := l.leases[c]
			if e != nil && e.growing == nil && (e.limit != lim || !now.Before(e.expires)) {
				// Its budget changed, or it expired unrenewed: a new lease
				// is decided by the budget as it is. (A run's own limit is
				// the same in each of its tokens.)
				l.retire(e)
				e = nil
			}
			if lim == (llm.Amount{}) {
				continue
			}
			if e == nil {
				inst := k.InstanceID
				if c.Scope == llm.ScopeTenant {
					inst = ""
				}
				e = &lease{id: llm.NewLeaseID(), c: c, instance: inst, own: runLimit(c, own), limit: lim, fresh: true}
				l.leases[c] = e
			}
			short := e.short(est)
			if short == (llm.Amount{}) && !e.fresh {
				continue
			}
			if e.growing != nil {
				wait = e.growing
				break
			}
			asks = append(asks, llm.LeaseAsk{ID: e.id, New: e.fresh, Counter: c, Instance: e.instance, RunLimit: e.own, Need: short,
				Want: capAmount(minus(e.want(est, l.o.LeaseAhead), e.left()))})
			grown = append(grown, e)
		}
		if wait == nil && len(asks) == 0 {
			t := l.admit(k, own, est, bs, now)
			l.mu.Unlock()
			return t, nil
		}
		if wait != nil {
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		tries++
		done := make(chan struct{})
		for _, e := range grown {
			e.growing = done
		}
		l.mu.Unlock()
		grants, err := l.st.Lease(ctx, llm.LeaseRequest{Asks: asks, Share: l.o.LeaseShare, All: true, At: now, Expires: now.Add(l.o.LeaseTTL)})
		l.mu.Lock()
		for i, e := range grown {
			e.growing = nil
			switch {
			case err != nil:
				if e.fresh && l.leases[e.c] == e {
					delete(l.leases, e.c) // never in the store
				}
			case grants[i].Gone:
				l.retire(e)
			default:
				if e.fresh {
					e.fresh, e.expires = false, now.Add(l.o.LeaseTTL)
				}
				e.held = e.held.Add(grants[i].Granted)
			}
		}
		var be *llm.BudgetError
		if errors.As(err, &be) {
			l.explain(be, counters, est)
		}
		// The call that grew the leases takes from them first.
		var t *ticket
		if err == nil && l.ready(counters, bs, own, est) {
			t = l.admit(k, own, est, bs, now)
		}
		l.mu.Unlock()
		close(done)
		if err != nil || t != nil {
			return t, err
		}
	}
	return nil, errLeaseContention
}

// ready reports whether the leases of counters hold est on every limited
// metric; l.mu is held.
func (l *ledger) ready(counters []llm.Counter, bs [2]*llm.Budget, own, est llm.Amount) bool {
	for _, c := range counters {
		if llm.LimitOf(bs, c, own) == (llm.Amount{}) {
			continue
		}
		e := l.leases[c]
		if e == nil || e.fresh || e.short(est) != (llm.Amount{}) {
			return false
		}
	}
	return true
}

// admit takes est from the leases of k's limited counters (which have
// it), for a call; l.mu is held.
func (l *ledger) admit(k llm.Keys, own, est llm.Amount, bs [2]*llm.Budget, now time.Time) *ticket {
	t := &ticket{keys: k, est: est}
	low := false
	for _, c := range llm.CountersOf(k) {
		if llm.LimitOf(bs, c, own) == (llm.Amount{}) {
			t.unleased = append(t.unleased, c)
			continue
		}
		e := l.leases[c]
		e.inflight = e.inflight.Add(est)
		e.calls++
		e.lastUse, e.est, e.taken = now, est, e.taken.Add(est)
		t.leases = append(t.leases, e)
		w := e.want(est, l.o.LeaseAhead)
		if left := e.left(); e.limit.Tokens > 0 && left.Tokens < w.Tokens/2 || e.limit.Cost > 0 && left.Cost < w.Cost/2 {
			low = true
		}
	}
	if low {
		// Grown in the background before it runs out.
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return t
}

// explain restates a refusal from the caller's side: what the counter
// holds but this replica's own unspent allowance (in its lease, and in
// those it retired and has not returned yet), and the call's estimate;
// l.mu is held.
func (l *ledger) explain(be *llm.BudgetError, counters []llm.Counter, est llm.Amount) {
	metric := func(a llm.Amount) int64 {
		if be.Metric == llm.MetricCost {
			return int64(a.Cost)
		}
		return a.Tokens
	}
	for _, c := range counters {
		if !(be.Window == llm.WindowRun && c.Scope == llm.ScopeRun || be.Window == llm.WindowDaily && be.Scope == c.Scope) {
			continue
		}
		var left int64
		for _, e := range append([]*lease{l.leases[c]}, l.ending...) {
			if e != nil && e.c == c {
				left += max(metric(e.left()), 0)
			}
		}
		be.Used, be.Asked = max(be.Used-left, 0), metric(est)
		return
	}
}

// retire takes e out of the leases, to be released once its calls end;
// l.mu is held.
func (l *ledger) retire(e *lease) {
	if l.leases[e.c] == e {
		delete(l.leases, e.c)
	}
	if !e.retired {
		e.retired = true
		if !e.fresh {
			l.ending = append(l.ending, e)
		}
	}
}

// settle ends t's call, which used used, and counts it in row's usage.
func (l *ledger) settle(t *ticket, used llm.Amount, row llm.UsageRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range t.leases {
		e.inflight = minus(e.inflight, t.est)
		e.pending = e.pending.Add(used)
		e.calls--
	}
	for _, c := range t.unleased {
		l.unleased[c] = l.unleased[c].Add(used)
	}
	if r := l.usage[row.UsageKey]; r != nil {
		r.Calls, r.Failed, r.Input, r.Output, r.Cost = r.Calls+row.Calls, r.Failed+row.Failed, r.Input+row.Input, r.Output+row.Output, r.Cost+row.Cost
	} else {
		l.usage[row.UsageKey] = &row
	}
}

// run writes batches and keeps the leases every FlushEvery, and at once
// when a lease runs low, until ctx ends; also calls each tick.
func (l *ledger) run(ctx context.Context, also func(context.Context)) {
	t := time.NewTicker(l.o.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
		if err := l.flush(ctx, false); err != nil && ctx.Err() == nil {
			l.log.Warn("llmgw: write the calls' usage", "err", err)
		}
		if err := l.refill(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("llmgw: grow the budget leases", "err", err)
		}
		also(ctx)
	}
}

// flush writes one batch: the usage settled since the last, the leases'
// renewals, and the release of the leases retired or unused for
// LeaseIdle (all of them when final). What a failed batch held is kept
// for the next.
func (l *ledger) flush(ctx context.Context, final bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	now := l.o.Now()
	l.mu.Lock()
	b := llm.Batch{At: now, Expires: now.Add(l.o.LeaseTTL)}
	var in []*lease
	for _, e := range l.leases {
		if e.fresh && e.growing == nil {
			delete(l.leases, e.c) // left by a take that waited: never in the store
			continue
		}
		l.pace(e, now)
		idle := e.calls == 0 && e.growing == nil && (final || now.Sub(e.lastUse) >= l.o.LeaseIdle)
		if idle && !e.fresh {
			l.retire(e)
			continue
		}
		if e.fresh || e.pending == (llm.Amount{}) && e.expires.Sub(now) > l.o.LeaseTTL/2 {
			continue
		}
		b.Leases = append(b.Leases, llm.LeaseUse{ID: e.id, Counter: e.c, Used: e.pending})
		e.flushing, e.pending = e.pending, llm.Amount{}
		in = append(in, e)
	}
	keep := l.ending[:0]
	for _, e := range l.ending {
		if e.calls > 0 || e.growing != nil {
			keep = append(keep, e)
			continue
		}
		b.Leases = append(b.Leases, llm.LeaseUse{ID: e.id, Counter: e.c, Used: e.pending, Release: true})
		e.flushing, e.pending = e.pending, llm.Amount{}
		in = append(in, e)
	}
	l.ending = keep
	for c, a := range l.unleased {
		b.Unleased = append(b.Unleased, llm.CounterUse{Counter: c, Used: a})
	}
	for _, r := range l.usage {
		b.Usage = append(b.Usage, *r)
	}
	l.unleased, l.usage = map[llm.Counter]llm.Amount{}, map[llm.UsageKey]*llm.UsageRow{}
	l.mu.Unlock()
	if len(b.Leases) == 0 && len(b.Unleased) == 0 && len(b.Usage) == 0 {
		return nil
	}
	res, err := l.st.Commit(ctx, b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		for i, e := range in {
			e.pending, e.flushing = e.pending.Add(e.flushing), llm.Amount{}
			if b.Leases[i].Release {
				l.ending = append(l.ending, e)
			}
		}
		for _, u := range b.Unleased {
			l.unleased[u.Counter] = l.unleased[u.Counter].Add(u.Used)
		}
		for _, r := range b.Usage {
			if cur := l.usage[r.UsageKey]; cur != nil {
				cur.Calls, cur.Failed, cur.Input, cur.Output, cur.Cost = cur.Calls+r.Calls, cur.Failed+r.Failed, cur.Input+r.Input, cur.Output+r.Output, cur.Cost+r.Cost
			} else {
				l.usage[r.UsageKey] = &r
			}
		}
		return err
	}
	for i, e := range in {
		e.flushing = llm.Amount{}
		switch {
		case res[i].Gone:
			// Swept while this replica could not renew it: the store
			// counted its allowance as used, and this usage whole.
			e.held = llm.Amount{}
			l.retire(e)
		case !b.Leases[i].Release:
			e.held, e.expires = minus(e.held, res[i].Covered), b.Expires
		}
	}
	return nil
}

// pace updates e's rate of spending; l.mu is held.
func (l *ledger) pace(e *lease, now time.Time) {
	dt := now.Sub(e.rateAt).Seconds()
	if e.rateAt.IsZero() || dt <= 0 {
		e.rateAt = now
		return
	}
	if dt < l.o.FlushEvery.Seconds()/2 {
		return
	}
	// A moving average over a few seconds.
	a := min(dt/3, 1)
	e.rate[0] = (1-a)*e.rate[0] + a*float64(e.taken.Tokens)/dt
	e.rate[1] = (1-a)*e.rate[1] + a*float64(e.taken.Cost)/dt
	e.taken, e.rateAt = llm.Amount{}, now
}

// refill grows the leases in use that hold less than half of what their
// pace wants, before a call finds them short.
func (l *ledger) refill(ctx context.Context) error {
	now := l.o.Now()
	l.mu.Lock()
	var (
		asks  []llm.LeaseAsk
		grown []*lease
	)
	done := make(chan struct{})
	for _, e := range l.leases {
		if e.fresh || e.growing != nil || now.Sub(e.lastUse) >= l.o.LeaseIdle || now.Sub(e.refusedAt) < l.o.LeaseAhead {
			continue
		}
		w, left := e.want(e.est, l.o.LeaseAhead), e.left()
		if !(e.limit.Tokens > 0 && left.Tokens < w.Tokens/2 || e.limit.Cost > 0 && left.Cost < w.Cost/2) {
			continue
		}
		e.growing = done
		asks = append(asks, llm.LeaseAsk{ID: e.id, Counter: e.c, Instance: e.instance, RunLimit: e.own, Want: capAmount(minus(w, left))})
		grown = append(grown, e)
	}
	l.mu.Unlock()
	if len(asks) == 0 {
		return nil
	}
	defer close(done)
	grants, err := l.st.Lease(ctx, llm.LeaseRequest{Asks: asks, Share: l.o.LeaseShare, At: now, Expires: now.Add(l.o.LeaseTTL)})
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range grown {
		e.growing = nil
		switch {
		case err != nil:
		case grants[i].Gone:
			e.held = llm.Amount{}
			l.retire(e)
		case grants[i].Refused != nil:
			e.refusedAt = now
		default:
			e.held = e.held.Add(grants[i].Granted)
		}
	}
	return err
}
