package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/llm"
)

// The usage ledger's contract: leases on budget counters, commits of
// what calls used, the usage rows, the sweep.

// llmAsk is an ask for a new lease on c, one of k's counters.
func llmAsk(k llm.Keys, c llm.Counter, need, want llm.Amount) llm.LeaseAsk {
	inst := k.InstanceID
	if c.Scope == llm.ScopeTenant {
		inst = ""
	}
	return llm.LeaseAsk{ID: llm.NewLeaseID(), New: true, Counter: c, Instance: inst, Need: need, Want: want}
}

// llmLeaseRequest asks for asks, all or nothing, taking up to share of
// what is free, the leases ending an hour after llmT0.
func llmLeaseRequest(share float64, asks ...llm.LeaseAsk) llm.LeaseRequest {
	return llm.LeaseRequest{Asks: asks, Share: share, All: true, At: llmT0, Expires: llmT0.Add(time.Hour)}
}

func commit(t *testing.T, s llm.Store, b llm.Batch) []llm.LeaseResult {
	t.Helper()
	if b.At.IsZero() {
		b.At, b.Expires = llmT0, llmT0.Add(time.Hour)
	}
	res, err := s.Commit(ctxT(t), b)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(res) != len(b.Leases) {
		t.Fatalf("Commit: %d results for %d leases", len(res), len(b.Leases))
	}
	return res
}

func tokens(n int64) llm.Amount { return llm.Amount{Tokens: n} }

// ownAsk is a with the run's own limit own.
func ownAsk(a llm.LeaseAsk, own llm.Amount) llm.LeaseAsk {
	a.RunLimit = own
	return a
}

func testLLMLeaseLimits(t *testing.T, newStore func(t *testing.T) llm.Store) {
	acme := llmKeys("acme", "inst-1", "run-1")
	other := llmKeys("acme", "inst-2", "run-2")
	day, inst, run := llm.CountersOf(acme)[0], llm.CountersOf(acme)[1], llm.CountersOf(acme)[2]
	otherInst, otherRun := llm.CountersOf(other)[1], llm.CountersOf(other)[2]
	nextDay := day
	nextDay.Day = llm.DayOf(llmT0.Add(24 * time.Hour))
	type step struct {
		ask   llm.LeaseAsk
		share float64
		// want is the grant, refused the refusal (nil: none).
		want    llm.Amount
		refused *llm.BudgetError
	}
	ask := func(c llm.Counter, k llm.Keys, need, want llm.Amount) llm.LeaseAsk { return llmAsk(k, c, need, want) }
	tests := []struct {
		name    string
		budgets []llm.Budget
		steps   []step
	}{
		{"no budget needs no allowance", nil, []step{{ask(day, acme, tokens(100), tokens(1000)), 1, llm.Amount{}, nil}}},
		{"tenant daily tokens", []llm.Budget{{TenantID: "acme", DailyTokens: 1000}}, []step{
			{ask(day, acme, tokens(600), tokens(600)), 1, tokens(600), nil},
			{ask(day, other, tokens(300), tokens(1000)), 1, tokens(400), nil}, // the rest, though more was wanted
			{ask(day, acme, tokens(1), tokens(1)), 1, llm.Amount{}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 1000, Used: 1000, Asked: 1}},
			{ask(day, acme, tokens(0), tokens(5)), 1, llm.Amount{}, nil}, // nothing needed, nothing free
			{ask(nextDay, acme, tokens(1000), tokens(1000)), 1, tokens(1000), nil},
			{ask(llm.CountersOf(llmKeys("beta", "", ""))[0], llmKeys("beta", "", ""), tokens(5000), tokens(5000)), 1, llm.Amount{}, nil},
		}},
		{"share of what is free", []llm.Budget{{TenantID: "acme", DailyTokens: 1000}}, []step{
			{ask(day, acme, tokens(10), tokens(1000)), 0.25, tokens(250), nil},
			{ask(day, acme, tokens(10), tokens(1000)), 0.25, tokens(187), nil},
			{ask(day, acme, tokens(300), tokens(300)), 0.25, tokens(300), nil}, // the need, past the share
			{ask(day, acme, tokens(300), tokens(300)), 0.25, llm.Amount{}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 1000, Used: 737, Asked: 300}},
		}},
		{"tenant daily cost", []llm.Budget{{TenantID: "acme", DailyCost: 500}}, []step{
			{ask(day, acme, llm.Amount{Tokens: 10, Cost: 300}, llm.Amount{Tokens: 10, Cost: 300}), 1, llm.Amount{Cost: 300}, nil},
			{ask(day, acme, llm.Amount{Cost: 201}, llm.Amount{Cost: 201}), 1, llm.Amount{}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "cost", Limit: 500, Used: 300, Asked: 201}},
			{ask(day, acme, llm.Amount{Cost: 200}, llm.Amount{Cost: 200}), 1, llm.Amount{Cost: 200}, nil},
		}},
		{"instance daily", []llm.Budget{{TenantID: "acme", DailyTokens: 10000}, {TenantID: "acme", InstanceID: "inst-1", DailyTokens: 100}}, []step{
			{ask(inst, acme, tokens(100), tokens(100)), 1, tokens(100), nil},
			{ask(inst, acme, tokens(1), tokens(1)), 1, llm.Amount{}, &llm.BudgetError{Scope: "instance", Window: "daily", Metric: "tokens", Limit: 100, Used: 100, Asked: 1}},
			{ask(otherInst, other, tokens(5000), tokens(5000)), 1, llm.Amount{}, nil}, // no budget of its own
			{ask(day, acme, tokens(9000), tokens(9000)), 1, tokens(9000), nil},
		}},
		{"per-run, the tighter", []llm.Budget{{TenantID: "acme", RunTokens: 1000}, {TenantID: "acme", InstanceID: "inst-1", RunTokens: 50, RunCost: 10}}, []step{
			{ask(run, acme, llm.Amount{Tokens: 50, Cost: 10}, llm.Amount{Tokens: 50, Cost: 10}), 1, llm.Amount{Tokens: 50, Cost: 10}, nil},
			{ask(run, acme, tokens(1), tokens(1)), 1, llm.Amount{}, &llm.BudgetError{Scope: "instance", Window: "per-run", Metric: "tokens", Limit: 50, Used: 50, Asked: 1}},
			{ask(otherRun, other, tokens(500), tokens(500)), 1, tokens(500), nil}, // inst-2: the tenant's limit
			{ask(otherRun, other, tokens(501), tokens(501)), 1, llm.Amount{}, &llm.BudgetError{Scope: "tenant", Window: "per-run", Metric: "tokens", Limit: 1000, Used: 500, Asked: 501}},
		}},
		// A run's own limit (a schedule's run) bounds its counter where it
		// is tighter than the budgets, or where there is none; a grant
		// beyond the need stops at it too.
		{"per-run, the run's own", []llm.Budget{{TenantID: "acme", RunTokens: 1000}}, []step{
			{ownAsk(ask(run, acme, tokens(100), tokens(1000)), llm.Amount{Tokens: 300, Cost: 40}), 1, tokens(300), nil},
			{ownAsk(ask(run, acme, tokens(1), tokens(1)), llm.Amount{Tokens: 300, Cost: 40}), 1, llm.Amount{},
				&llm.BudgetError{Scope: "run", Window: "per-run", Metric: "tokens", Limit: 300, Used: 300, Asked: 1}},
			{ownAsk(ask(otherRun, other, llm.Amount{Cost: 41}, llm.Amount{Cost: 41}), llm.Amount{Cost: 40}), 1, llm.Amount{},
				&llm.BudgetError{Scope: "run", Window: "per-run", Metric: "cost", Limit: 40, Asked: 41}},
			{ownAsk(ask(otherRun, other, tokens(900), tokens(900)), llm.Amount{Tokens: 5000}), 1, tokens(900), nil}, // the tenant's is tighter
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ctx := newStore(t), ctxT(t)
			for _, b := range tc.budgets {
				if _, err := s.PutBudget(ctx, b, 0); err != nil {
					t.Fatal(err)
				}
			}
			for i, st := range tc.steps {
				k := llm.Keys{TenantID: st.ask.Counter.TenantID, InstanceID: st.ask.Instance, Day: llm.DayOf(llmT0)}
				if st.ask.Counter.Scope == llm.ScopeRun {
					k.RunID = st.ask.Counter.ID
				}
				if st.ask.Counter.Day != "" {
					k.Day = st.ask.Counter.Day
				}
				before, err := s.Spent(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				grants, err := s.Lease(ctx, llmLeaseRequest(st.share, st.ask))
				if st.refused == nil {
					if err != nil || len(grants) != 1 || grants[0].Granted != st.want || grants[0].Refused != nil || grants[0].Gone {
						t.Fatalf("step %d: Lease = %+v, %v; want %+v granted", i, grants, err, st.want)
					}
					continue
				}
				var be *llm.BudgetError
				if !errors.As(err, &be) || !errors.Is(err, llm.ErrBudgetExceeded) {
					t.Fatalf("step %d: Lease = %+v, %v; want a *BudgetError", i, grants, err)
				}
				wantStored(t, fmt.Sprintf("step %d: refusal", i), *st.refused, *be)
				if after, _ := s.Spent(ctx, k); after != before {
					t.Errorf("step %d: a refused lease changed the counters: %+v, then %+v", i, before, after)
				}
			}
		})
	}

	t.Run("limits and all or nothing", func(t *testing.T) {
		s, ctx := newStore(t), ctxT(t)
		if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: 100, RunCost: 50}, 0); err != nil {
			t.Fatal(err)
		}
		asks := []llm.LeaseAsk{llmAsk(acme, day, tokens(60), tokens(60)), llmAsk(acme, inst, tokens(60), tokens(60)),
			llmAsk(acme, run, llm.Amount{Cost: 60}, llm.Amount{Cost: 60})}
		if _, err := s.Lease(ctx, llmLeaseRequest(1, asks...)); !errors.Is(err, llm.ErrBudgetExceeded) {
			t.Fatalf("all or nothing with the run's ask refused: %v", err)
		}
		if sp, _ := s.Spent(ctx, acme); sp != (llm.Spending{}) {
			t.Errorf("a refused request left %+v", sp)
		}
		req := llmLeaseRequest(1, asks...)
		req.All = false
		grants, err := s.Lease(ctx, req)
		if err != nil || len(grants) != 3 {
			t.Fatalf("each ask decided alone: %+v, %v", grants, err)
		}
		if grants[0].Granted != tokens(60) || grants[0].Limit != tokens(100) || grants[1].Granted != (llm.Amount{}) || grants[1].Limit != (llm.Amount{}) ||
			grants[2].Refused == nil || grants[2].Refused.Metric != "cost" || grants[2].Limit != (llm.Amount{Cost: 50}) {
			t.Errorf("grants %+v", grants)
		}
		sp, _ := s.Spent(ctx, acme)
		if sp.Held.TenantDay != tokens(60) || sp.Held.Run != (llm.Amount{}) {
			t.Errorf("held %+v, want the tenant's day's 60 only", sp.Held)
		}
		// Asks of one request see each other's grants.
		_, err = s.Lease(ctx, llmLeaseRequest(1, llmAsk(acme, day, tokens(30), tokens(30)), llmAsk(other, day, tokens(30), tokens(30))))
		if !errors.Is(err, llm.ErrBudgetExceeded) {
			t.Errorf("two asks on one counter past its limit together: %v", err)
		}
	})

	t.Run("grow, gone and taken", func(t *testing.T) {
		s, ctx := newStore(t), ctxT(t)
		if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: 1000}, 0); err != nil {
			t.Fatal(err)
		}
		a := llmAsk(acme, day, tokens(100), tokens(100))
		if _, err := s.Lease(ctx, llmLeaseRequest(1, a)); err != nil {
			t.Fatal(err)
		}
		grow := a
		grow.New, grow.Need, grow.Want = false, tokens(50), tokens(50)
		missing := llmAsk(acme, day, tokens(1), tokens(1))
		missing.New = false
		req := llmLeaseRequest(1, grow, missing)
		req.All = false
		grants, err := s.Lease(ctx, req)
		if err != nil || grants[0].Granted != tokens(50) || grants[0].Gone || !grants[1].Gone || grants[1].Granted != (llm.Amount{}) {
			t.Fatalf("grow a lease and one not held: %+v, %v", grants, err)
		}
		if _, err := s.Lease(ctx, llmLeaseRequest(1, a)); !errors.Is(err, llm.ErrInvalid) {
			t.Errorf("a new lease with a held lease's id: %v, want ErrInvalid", err)
		}
		// The grown lease returns its 150 whole.
		res := commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: a.ID, Counter: day, Release: true}}})
		if res[0].Gone {
			t.Fatal("the grown lease is gone")
		}
		if sp, _ := s.Spent(ctx, acme); sp.Held.TenantDay != (llm.Amount{}) || sp.Used.TenantDay != (llm.Amount{}) {
			t.Errorf("after the release: %+v", sp)
		}
		// A counter past its limit (usage beyond leases) refuses even a
		// need of nothing.
		commit(t, s, llm.Batch{Unleased: []llm.CounterUse{{Counter: day, Used: tokens(1200)}}})
		if _, err := s.Lease(ctx, llmLeaseRequest(1, llmAsk(acme, day, llm.Amount{}, tokens(10)))); !errors.Is(err, llm.ErrBudgetExceeded) {
			t.Errorf("a counter past its limit: %v, want ErrBudgetExceeded", err)
		}
	})
}

func testLLMLeaseInvalid(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	k := llmKeys("acme", "inst", "run")
	cs := llm.CountersOf(k)
	good := llmAsk(k, cs[0], tokens(1), tokens(1))
	bad := []struct {
		name   string
		change func(r *llm.LeaseRequest)
	}{
		{"no asks", func(r *llm.LeaseRequest) { r.Asks = nil }},
		{"no share", func(r *llm.LeaseRequest) { r.Share = 0 }},
		{"share over one", func(r *llm.LeaseRequest) { r.Share = 1.5 }},
		{"expires at once", func(r *llm.LeaseRequest) { r.Expires = r.At }},
		{"no id", func(r *llm.LeaseRequest) { r.Asks[0].ID = "" }},
		{"no tenant", func(r *llm.LeaseRequest) { r.Asks[0].Counter.TenantID = "" }},
		{"bad day", func(r *llm.LeaseRequest) { r.Asks[0].Counter.Day = "2026-7-1" }},
		{"run with a day", func(r *llm.LeaseRequest) {
			r.Asks[0].Counter = llm.Counter{TenantID: "acme", Scope: llm.ScopeRun, ID: "r", Day: k.Day}
		}},
		{"unknown scope", func(r *llm.LeaseRequest) { r.Asks[0].Counter.Scope = "galaxy" }},
		{"instance of another", func(r *llm.LeaseRequest) { r.Asks[0].Counter, r.Asks[0].Instance = cs[1], "other" }},
		{"negative need", func(r *llm.LeaseRequest) { r.Asks[0].Need = tokens(-1) }},
		{"want too large", func(r *llm.LeaseRequest) { r.Asks[0].Want = tokens(llm.MaxAmount + 1) }},
		{"own limit on a day", func(r *llm.LeaseRequest) { r.Asks[0].RunLimit = tokens(5) }},
		{"negative own limit", func(r *llm.LeaseRequest) {
			r.Asks[0].Counter, r.Asks[0].Instance, r.Asks[0].RunLimit = cs[2], "inst", tokens(-5)
		}},
	}
	for _, tc := range bad {
		req := llmLeaseRequest(1, good)
		req.Asks = slices.Clone(req.Asks)
		tc.change(&req)
		if _, err := s.Lease(ctx, req); !errors.Is(err, llm.ErrInvalid) {
			t.Errorf("%s: Lease: %v, want ErrInvalid", tc.name, err)
		}
	}
	badBatches := []struct {
		name string
		b    llm.Batch
	}{
		{"expires at once", llm.Batch{At: llmT0, Expires: llmT0}},
		{"negative use", llm.Batch{At: llmT0, Expires: llmT0.Add(time.Hour), Leases: []llm.LeaseUse{{ID: "x", Counter: cs[0], Used: tokens(-1)}}}},
		{"bad counter", llm.Batch{At: llmT0, Expires: llmT0.Add(time.Hour), Unleased: []llm.CounterUse{{Counter: llm.Counter{Scope: llm.ScopeTenant}}}}},
		{"more failed than calls", llm.Batch{At: llmT0, Expires: llmT0.Add(time.Hour), Usage: []llm.UsageRow{{UsageKey: llm.UsageKey{TenantID: "acme", Day: k.Day}, Calls: 1, Failed: 2}}}},
		{"usage without a day", llm.Batch{At: llmT0, Expires: llmT0.Add(time.Hour), Usage: []llm.UsageRow{{UsageKey: llm.UsageKey{TenantID: "acme"}, Calls: 1}}}},
	}
	for _, tc := range badBatches {
		if _, err := s.Commit(ctx, tc.b); !errors.Is(err, llm.ErrInvalid) {
			t.Errorf("%s: Commit: %v, want ErrInvalid", tc.name, err)
		}
	}
}

func testLLMCommit(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	k := llmKeys("acme", "inst-1", "run-1")
	day, inst := llm.CountersOf(k)[0], llm.CountersOf(k)[1]
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: 1000}, 0); err != nil {
		t.Fatal(err)
	}
	a := llmAsk(k, day, tokens(300), tokens(300))
	if _, err := s.Lease(ctx, llmLeaseRequest(1, a)); err != nil {
		t.Fatal(err)
	}
	spent := func(what string, used, held llm.Amount) {
		t.Helper()
		sp, err := s.Spent(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Used.TenantDay != used || sp.Held.TenantDay != held {
			t.Errorf("%s: tenant day used %+v, held %+v; want %+v, %+v", what, sp.Used.TenantDay, sp.Held.TenantDay, used, held)
		}
	}
	spent("leased", llm.Amount{}, tokens(300))
	use := func(used int64, release bool) llm.LeaseResult {
		t.Helper()
		return commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: a.ID, Counter: day, Used: tokens(used), Release: release}}})[0]
	}
	if r := use(100, false); r.Gone || r.Covered != tokens(100) {
		t.Errorf("use 100 of 300: %+v", r)
	}
	spent("100 used", tokens(100), tokens(200))
	// Calls that used more than their estimates: the lease covers what it
	// holds, the rest counts beyond it.
	if r := use(250, false); r.Covered != tokens(200) {
		t.Errorf("use 250 of 200: %+v, want 200 covered", r)
	}
	spent("past the lease", tokens(350), llm.Amount{})
	grow := a
	grow.New = false
	if _, err := s.Lease(ctx, llmLeaseRequest(1, grow)); err != nil {
		t.Fatal(err)
	}
	spent("grown", tokens(350), tokens(300))
	if r := use(30, true); r.Covered != tokens(30) || r.Gone {
		t.Errorf("use 30 and release: %+v", r)
	}
	spent("released", tokens(380), llm.Amount{})
	if r := use(5, true); !r.Gone || r.Covered != (llm.Amount{}) {
		t.Errorf("a released lease again: %+v, want Gone", r)
	}
	spent("a lease gone counts its usage whole", tokens(385), llm.Amount{})

	// Usage without a lease counts on its counter; usage rows add up.
	key := llm.UsageKey{TenantID: "acme", Day: k.Day, InstanceID: "inst-1", Model: "gpt-4o", Provider: "openai"}
	for range 2 {
		commit(t, s, llm.Batch{Unleased: []llm.CounterUse{{Counter: inst, Used: llm.Amount{Tokens: 7, Cost: 9}}},
			Usage: []llm.UsageRow{{UsageKey: key, Calls: 2, Failed: 1, Input: 3, Output: 4, Cost: 9}}})
	}
	if sp, _ := s.Spent(ctx, k); sp.Used.InstanceDay != (llm.Amount{Tokens: 14, Cost: 18}) || sp.Held.InstanceDay != (llm.Amount{}) {
		t.Errorf("instance day %+v", sp)
	}
	rows, err := s.Usage(ctx, llm.UsageQuery{TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "Usage", []llm.UsageRow{{UsageKey: key, Calls: 4, Failed: 2, Input: 6, Output: 8, Cost: 18}}, rows)
}

// testLLMConcurrentLease races replicas asking for the least lease on
// one daily limit: exactly as many are granted as fit.
func testLLMConcurrentLease(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	const limit, each, workers = 2000, 100, 48
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: limit, RunCost: 5 * each}, 0); err != nil {
		t.Fatal(err)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			<-start
			k := llmKeys("acme", fmt.Sprintf("inst-%d", i%3), fmt.Sprintf("run-%d", i%4))
			var asks []llm.LeaseAsk
			for _, c := range llm.CountersOf(k) {
				asks = append(asks, llmAsk(k, c, llm.Amount{Tokens: each, Cost: each}, llm.Amount{Tokens: each, Cost: each}))
			}
			_, err := s.Lease(ctx, llmLeaseRequest(1, asks...))
			switch {
			case err == nil:
				granted.Add(1)
			case !errors.Is(err, llm.ErrBudgetExceeded):
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Lease: %v", err)
	}
	// 20 fit the day; each of the 4 runs holds at most 5 (its cost limit).
	if got := granted.Load(); got != limit/each {
		t.Errorf("%d leases granted, want %d", got, limit/each)
	}
	sp, err := s.Spent(ctx, llmKeys("acme", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Held.TenantDay.Tokens != limit {
		t.Errorf("the tenant's day holds %d tokens, want %d", sp.Held.TenantDay.Tokens, limit)
	}
	for r := range 4 {
		if sp, _ := s.Spent(ctx, llmKeys("acme", "", fmt.Sprintf("run-%d", r))); sp.Held.Run.Cost > 5*each {
			t.Errorf("run-%d holds cost %d, past its limit %d", r, sp.Held.Run.Cost, 5*each)
		}
	}
}

// llmReplica is a replica of the gateway as the ledger sees it: leases on
// the counters of its calls, spent in memory, usage committed in batches.
type llmReplica struct {
	s      llm.Store
	leases map[llm.Counter]*llmHeld
	used   map[llm.Counter]int64 // what its admitted calls used
}

type llmHeld struct {
	id      string
	left    int64 // allowance not promised to a call
	pending int64 // usage not committed
}

// call admits a call of k that may need est tokens and uses use of them:
// from its leases when they hold enough, else after leasing what is
// missing.
func (r *llmReplica) call(t *testing.T, k llm.Keys, est, use int64) bool {
	var asks []llm.LeaseAsk
	for _, c := range llm.CountersOf(k) {
		h := r.leases[c]
		switch {
		case h == nil:
			asks = append(asks, llmAsk(k, c, tokens(est), tokens(4*est)))
		case h.left < est:
			a := llmAsk(k, c, tokens(est-h.left), tokens(4*est))
			a.ID, a.New = h.id, false
			asks = append(asks, a)
		}
	}
	if len(asks) > 0 {
		grants, err := r.s.Lease(ctxT(t), llmLeaseRequest(0.5, asks...))
		if errors.Is(err, llm.ErrBudgetExceeded) {
			return false
		}
		if err != nil {
			t.Error(err)
			return false
		}
		for i, a := range asks {
			if grants[i].Gone {
				t.Errorf("a held lease is gone")
				return false
			}
			h := r.leases[a.Counter]
			if h == nil {
				h = &llmHeld{id: a.ID}
				r.leases[a.Counter] = h
			}
			// A counter no budget limits grants nothing and needs nothing.
			if grants[i].Limit.Tokens == 0 {
				h.left = 1 << 40
			} else {
				h.left += grants[i].Granted.Tokens
			}
		}
	}
	for _, c := range llm.CountersOf(k) {
		h := r.leases[c]
		h.left -= est
		h.left += est - use
		h.pending += use
		r.used[c] += use
	}
	return true
}

func (r *llmReplica) commit(t *testing.T, release bool) {
	var b llm.Batch
	for c, h := range r.leases {
		if h.pending > 0 || release {
			b.Leases = append(b.Leases, llm.LeaseUse{ID: h.id, Counter: c, Used: tokens(h.pending), Release: release})
			h.pending = 0
		}
	}
	if len(b.Leases) == 0 {
		return
	}
	for _, res := range commit(t, r.s, b) {
		if res.Gone {
			t.Error("a held lease is gone")
		}
	}
}

// testLLMConcurrentReplicas runs replicas that spend leases on calls of
// several instances and runs, under a tenant's and an instance's daily
// limit and a per-run limit, committing as they go and releasing at the
// end: no counter is ever past its limit, the two daily limits, which
// the calls ask far past, are spent to within the leases' slices, and
// what the counters say was used is what the calls used.
func testLLMConcurrentReplicas(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	const (
		tenantDay, instDay, perRun = 6000, 1500, 2500
		replicas, calls, est       = 4, 150, 37
	)
	for _, b := range []llm.Budget{{TenantID: "acme", DailyTokens: tenantDay, RunTokens: perRun}, {TenantID: "acme", InstanceID: "inst-0", DailyTokens: instDay}} {
		if _, err := s.PutBudget(ctx, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	limits := map[llm.Counter]int64{}
	keysOf := func(i int) llm.Keys { return llmKeys("acme", fmt.Sprintf("inst-%d", i%3), fmt.Sprintf("run-%d", i%5)) }
	for i := range 15 {
		for _, c := range llm.CountersOf(keysOf(i)) {
			switch {
			case c.Scope == llm.ScopeTenant:
				limits[c] = tenantDay
			case c.Scope == llm.ScopeRun:
				limits[c] = perRun
			case c.ID == "inst-0":
				limits[c] = instDay
			}
		}
	}
	over := func(what string) {
		for c, lim := range limits {
			k := llm.Keys{TenantID: c.TenantID, Day: llm.DayOf(llmT0)}
			switch c.Scope {
			case llm.ScopeInstance:
				k.InstanceID = c.ID
			case llm.ScopeRun:
				k.RunID = c.ID
			}
			sp, err := s.Spent(ctx, k)
			if err != nil {
				t.Error(err)
				return
			}
			var counted llm.Amount
			switch c.Scope {
			case llm.ScopeTenant:
				counted = sp.Used.TenantDay.Add(sp.Held.TenantDay)
			case llm.ScopeInstance:
				counted = sp.Used.InstanceDay.Add(sp.Held.InstanceDay)
			default:
				counted = sp.Used.Run.Add(sp.Held.Run)
			}
			if counted.Tokens > lim {
				t.Errorf("%s: %s %s holds %d tokens, past its limit %d", what, c.Scope, c.ID, counted.Tokens, lim)
			}
		}
	}
	reps := make([]*llmReplica, replicas)
	var wg sync.WaitGroup
	for i := range reps {
		reps[i] = &llmReplica{s: s, leases: map[llm.Counter]*llmHeld{}, used: map[llm.Counter]int64{}}
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			for n := range calls {
				reps[i].call(t, keysOf(rnd.IntN(15)), est, est-int64(rnd.IntN(10)))
				if n%7 == 6 {
					reps[i].commit(t, false)
					over(fmt.Sprintf("replica %d after call %d", i, n))
				}
			}
			reps[i].commit(t, true)
		})
	}
	wg.Wait()
	over("at the end")
	used := map[llm.Counter]int64{}
	for _, r := range reps {
		for c, u := range r.used {
			used[c] += u
		}
	}
	for c, lim := range limits {
		k := llm.Keys{TenantID: c.TenantID, Day: llm.DayOf(llmT0)}
		var got llm.Amount
		switch c.Scope {
		case llm.ScopeTenant:
			sp, _ := s.Spent(ctx, k)
			got = sp.Used.TenantDay
			if sp.Held.TenantDay != (llm.Amount{}) {
				t.Errorf("the tenant's day holds %+v after every lease was released", sp.Held.TenantDay)
			}
		case llm.ScopeInstance:
			k.InstanceID = c.ID
			sp, _ := s.Spent(ctx, k)
			got = sp.Used.InstanceDay
		default:
			k.RunID = c.ID
			sp, _ := s.Spent(ctx, k)
			got = sp.Used.Run
		}
		if got.Tokens != used[c] {
			t.Errorf("%s %s: the counter says %d tokens used, the calls used %d", c.Scope, c.ID, got.Tokens, used[c])
		}
		if used[c] > lim {
			t.Errorf("%s %s: %d tokens used of %d", c.Scope, c.ID, used[c], lim)
		}
		// The calls asked for far more than the daily limits: each was spent
		// but for less than a call and what leases held unspent (under five
		// calls' worth each) when the calls stopped.
		if c.Scope != llm.ScopeRun && used[c] < lim-(replicas*5+1)*est {
			t.Errorf("%s %s: %d tokens used of %d, more left than the leases held", c.Scope, c.ID, used[c], lim)
		}
	}
}

func testLLMUsage(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	days := []time.Time{llmT0, llmT0.Add(24 * time.Hour), llmT0.Add(48 * time.Hour)}
	var all []llm.UsageKey
	var b llm.Batch
	for _, tenant := range []string{"acme", "beta"} {
		for _, at := range days {
			for _, inst := range []string{"", "i-1"} {
				for _, model := range []string{"gpt-4o", "embed"} {
					key := llm.UsageKey{TenantID: tenant, Day: llm.DayOf(at), InstanceID: inst, Model: model, Provider: "p"}
					b.Usage = append(b.Usage, llm.UsageRow{UsageKey: key, Calls: 1, Input: 1, Output: 2, Cost: 3})
					all = append(all, key)
				}
			}
		}
	}
	commit(t, s, b)
	keysOf := func(rows []llm.UsageRow) []llm.UsageKey {
		var out []llm.UsageKey
		for _, r := range rows {
			if r.Calls != 1 || r.Input != 1 || r.Output != 2 || r.Cost != 3 {
				t.Errorf("row %+v, want one call of 1+2 tokens costing 3", r)
			}
			out = append(out, r.UsageKey)
		}
		return out
	}
	// Everything, page by page, in key order.
	var paged []llm.UsageKey
	q := llm.UsageQuery{Limit: 5}
	for {
		rows, err := s.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, keysOf(rows)...)
		if len(rows) < q.Limit {
			break
		}
		last := rows[len(rows)-1].UsageKey
		q.After = &last
	}
	sorted := append([]llm.UsageKey(nil), all...)
	slices.SortFunc(sorted, llm.UsageKey.Compare)
	wantStored(t, "all usage, paged", sorted, paged)

	day2 := llm.DayOf(days[1])
	rows, err := s.Usage(ctx, llm.UsageQuery{TenantID: "beta", InstanceID: "i-1", Model: "embed", From: day2, To: day2})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "filtered usage", []llm.UsageKey{{TenantID: "beta", Day: day2, InstanceID: "i-1", Model: "embed", Provider: "p"}}, keysOf(rows))
	rows, _ = s.Usage(ctx, llm.UsageQuery{TenantID: "acme", From: day2})
	if len(rows) != 8 {
		t.Errorf("acme from day 2: %d rows, want 8", len(rows))
	}
	if _, err := s.Usage(ctx, llm.UsageQuery{From: "yesterday"}); !errors.Is(err, llm.ErrInvalid) {
		t.Errorf("a bad day: %v, want ErrInvalid", err)
	}

	// Keys as long as a store keeps page on like any others; a key some
	// store cannot hold names nothing.
	long := strings.Repeat("t", llm.MaxKeyBytes)
	var lb llm.Batch
	for _, inst := range []string{strings.Repeat("a", llm.MaxKeyBytes), strings.Repeat("b", llm.MaxKeyBytes)} {
		key := llm.UsageKey{TenantID: long, Day: day2, InstanceID: inst, Model: "gpt-4o", Provider: "p"}
		lb.Usage = append(lb.Usage, llm.UsageRow{UsageKey: key, Calls: 1, Input: 1, Output: 2, Cost: 3})
	}
	commit(t, s, lb)
	first := lb.Usage[0].UsageKey
	rows, err = s.Usage(ctx, llm.UsageQuery{TenantID: long, After: &first})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "usage after a long key", []llm.UsageKey{lb.Usage[1].UsageKey}, keysOf(rows))
	for _, q := range []llm.UsageQuery{{TenantID: "acme\x00"}, {Model: "\xff"}} {
		if rows, err := s.Usage(ctx, q); err != nil || len(rows) != 0 {
			t.Errorf("usage of %+v: %d rows, %v; want none", q, len(rows), err)
		}
	}
}

func testLLMSweep(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	old := llmKeys("acme", "", "run-old")
	oldRun := llm.CountersOf(old)[1]
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", RunTokens: 1000}, 0); err != nil {
		t.Fatal(err)
	}
	// A lease of a replica that died: it expires a minute on.
	dead := llmAsk(old, oldRun, tokens(10), tokens(10))
	req := llmLeaseRequest(1, dead)
	req.Expires = llmT0.Add(time.Minute)
	if _, err := s.Lease(ctx, req); err != nil {
		t.Fatal(err)
	}
	later := llmT0.Add(2 * time.Hour)
	fresh := llm.Keys{TenantID: "acme", RunID: "run-new", Day: llm.DayOf(later)}
	freshRun := llm.CountersOf(fresh)[1]
	live := llmAsk(fresh, freshRun, tokens(20), tokens(20))
	req = llmLeaseRequest(1, live)
	req.At, req.Expires = llmT0, llmT0.Add(time.Minute)
	if _, err := s.Lease(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The live replica renews its lease.
	commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: live.ID, Counter: freshRun, Used: tokens(5)}}, At: later, Expires: later.Add(time.Minute)})
	// Leases expired go; their allowance stays counted, as used.
	if err := s.Sweep(ctx, later, llmT0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.Spent(ctx, old); sp.Used.Run != tokens(10) || sp.Held.Run != (llm.Amount{}) {
		t.Errorf("the swept lease's run: %+v, want its 10 counted as used", sp)
	}
	if r := commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: dead.ID, Counter: oldRun, Used: tokens(4)}}}); !r[0].Gone {
		t.Errorf("a swept lease: %+v, want Gone", r[0])
	}
	if sp, _ := s.Spent(ctx, old); sp.Used.Run != tokens(14) {
		t.Errorf("usage on a swept lease: %+v, want it counted whole (14)", sp.Used.Run)
	}
	if r := commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: live.ID, Counter: freshRun, Release: true}}, At: later, Expires: later.Add(time.Minute)}); r[0].Gone {
		t.Error("the sweep took a renewed lease")
	}
	if sp, _ := s.Spent(ctx, fresh); sp.Used.Run != tokens(5) || sp.Held.Run != (llm.Amount{}) {
		t.Errorf("the renewed lease's run after its release: %+v, want 5 used", sp)
	}
	// Counters last changed before the cutoff go.
	if err := s.Sweep(ctx, later, later.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.Spent(ctx, old); sp != (llm.Spending{}) {
		t.Errorf("an old run's counter outlived the sweep: %+v", sp)
	}
	if sp, _ := s.Spent(ctx, fresh); sp.Used.Run != tokens(5) {
		t.Errorf("a fresh run's counter: %+v, want 5 tokens", sp)
	}
}
