package llm

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"time"
)

// The usage ledger: budget counters, the leases replicas hold on them,
// and the daily usage of settled calls.
//
// A replica does not write to the store before each call. It leases a
// slice of a counter's allowance in one atomic step (Store.Lease), spends
// it on calls in memory, and writes what the calls used in batches
// (Store.Commit), returning what is left when it is done. What a
// counter's leases hold is counted against its limits as if it were
// used, so the allowance of all the replicas' leases and the usage
// already settled never pass a limit together.

// ScopeRun names a run's counter (ScopeTenant and ScopeInstance name the
// others).
const ScopeRun = "run"

// MaxLeaseIDBytes bounds a lease's id.
const MaxLeaseIDBytes = 64

// Counter names a budget counter: a tenant's day (Scope ScopeTenant, ID
// ""), one of its instances' days (ScopeInstance, ID the instance) or a
// run (ScopeRun, ID the run, Day "").
type Counter struct {
	TenantID string
	Scope    string
	ID       string
	Day      string
}

// CountersOf are the counters a call's keys fall under: the tenant's day,
// the instance's day when k names an instance, the run when it names one;
// in this order, which every Store locks them in.
func CountersOf(k Keys) []Counter {
	out := make([]Counter, 1, 3)
	out[0] = Counter{TenantID: k.TenantID, Scope: ScopeTenant, Day: k.Day}
	if k.InstanceID != "" {
		out = append(out, Counter{TenantID: k.TenantID, Scope: ScopeInstance, ID: k.InstanceID, Day: k.Day})
	}
	if k.RunID != "" {
		out = append(out, Counter{TenantID: k.TenantID, Scope: ScopeRun, ID: k.RunID})
	}
	return out
}

func (c Counter) check() error {
	switch {
	case c.TenantID == "" || !ValidKey(c.TenantID) || !ValidKey(c.ID):
		return invalid("a counter names its tenant (and instance or run) as valid text of at most %d bytes", MaxKeyBytes)
	case c.Scope == ScopeTenant && c.ID != "", c.Scope != ScopeTenant && c.ID == "":
		return invalid("a tenant's counter names no id, an instance's or a run's names one")
	case c.Scope == ScopeRun && c.Day != "":
		return invalid("a run's counter names no day")
	case c.Scope != ScopeRun && c.Scope != ScopeTenant && c.Scope != ScopeInstance:
		return invalid("counter scope %.20q is none of tenant, instance and run", c.Scope)
	case c.Scope != ScopeRun && !ValidDay(c.Day):
		return invalid("day %.20q is not a date as DayOf writes it", c.Day)
	}
	return nil
}

// Counts are amounts of a call's counters.
type Counts struct {
	TenantDay   Amount
	InstanceDay Amount
	Run         Amount
}

// Put sets the amount of c's kind of counter.
func (cs *Counts) Put(c Counter, a Amount) {
	switch c.Scope {
	case ScopeTenant:
		cs.TenantDay = a
	case ScopeInstance:
		cs.InstanceDay = a
	default:
		cs.Run = a
	}
}

// Spending is what the counters of a call's keys hold: Used, what
// settled calls used (and the allowance of leases that expired without
// being returned), and Held, the allowance replicas hold in leases and
// have not spent yet. Budgets hold the two together.
type Spending struct {
	Used Counts
	Held Counts
}

// LeaseAsk asks for allowance on one counter.
type LeaseAsk struct {
	// ID names the lease: a new one (New) named with NewLeaseID, or one
	// the holder has, to grow.
	ID  string
	New bool
	// Counter is the counter leased on; Instance is the instance whose
	// budget applies to it, besides the tenant's: the counter's own for an
	// instance's day, the run's instance for a run, "" for the tenant's
	// day.
	Counter  Counter
	Instance string
	// RunLimit is the run's own limit, on a run's counter: what the
	// platform allowed the run when it started it (a schedule's run, what
	// the schedule's day had left), as its execution token carries it. It
	// bounds the counter besides the budgets, where it is tighter; zero
	// on a metric it does not limit, and on every other counter.
	RunLimit Amount
	// Need is the least the grant may be on each metric a budget limits,
	// Want the most it is asked to be.
	Need, Want Amount
}

// LeaseRequest asks for allowance on counters, decided in one atomic
// step.
type LeaseRequest struct {
	Asks []LeaseAsk
	// Share bounds a grant beyond its Need to that part of what is free on
	// the counter (from 0, exclusive, to 1), so that one replica does not
	// take all of a budget while others serve calls too.
	Share float64
	// All refuses every ask when one is refused.
	All bool
	// At is the request's time, Expires when a new lease ends unless its
	// holder renews it (Batch.Expires).
	At, Expires time.Time
}

// Grant is what a lease ask got.
type Grant struct {
	// Granted is the allowance added to the lease.
	Granted Amount
	// Limit is what the budgets allow the counter now: zero on a metric
	// none limits.
	Limit Amount
	// Refused is why the ask got nothing: its Need is more than is free.
	Refused *BudgetError
	// Gone says the lease to grow is not held (it expired and was
	// swept): it got nothing.
	Gone bool
}

// Batch is what a holder of leases writes in one step (a group commit of
// the calls it settled since the last).
type Batch struct {
	// Leases are its leases' changes.
	Leases []LeaseUse
	// Unleased is usage on counters it holds no lease on.
	Unleased []CounterUse
	// Usage are settled calls, added to the usage rows of their keys:
	// Calls, Failed, Input, Output and Cost are increments.
	Usage []UsageRow
	// At is when the batch is written; Expires is when the leases it
	// names and keeps end unless renewed again.
	At, Expires time.Time
}

// LeaseUse is a lease's change in a Batch.
type LeaseUse struct {
	ID      string
	Counter Counter
	// Used is what the lease's calls used since its last commit.
	Used Amount
	// Release returns the allowance left to the counter and ends the
	// lease.
	Release bool
}

// CounterUse is usage on a counter without a lease.
type CounterUse struct {
	Counter Counter
	Used    Amount
}

// LeaseResult is what Commit did with a LeaseUse.
type LeaseResult struct {
	// Covered is the part of Used the lease's allowance covered; the rest
	// went beyond it, onto the counter.
	Covered Amount
	// Gone says the lease was not held (it expired and was swept, its
	// allowance counted as used): Used was counted whole.
	Gone bool
}

// NewLeaseID returns a fresh lease id.
func NewLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// limit is one limit a budget puts on a counter's metric.
type limit struct {
	max                   int64
	scope, window, metric string
	exists                bool
}

// limitsOf are the limits on c: tokens, then cost. A tenant's day has
// the tenant's daily limits, an instance's day the instance's, a run the
// tightest of the tenant's and the instance's per-run limits and its own
// limit own (the tenant's when they are equal, a budget's over the
// run's own).
func limitsOf(budgets [2]*Budget, c Counter, own Amount) [2]limit {
	var out [2]limit
	pick := func(i int, metric string, window string, values [3]int64) {
		for j, v := range values {
			if v > 0 && (!out[i].exists || v < out[i].max) {
				out[i] = limit{max: v, scope: []string{ScopeTenant, ScopeInstance, ScopeRun}[j], window: window, metric: metric, exists: true}
			}
		}
	}
	owns := [2]int64{own.Tokens, int64(own.Cost)}
	var days, runs [2][2]int64 // [metric][budget]
	for j, b := range budgets {
		if b == nil {
			continue
		}
		days[0][j], days[1][j] = b.DailyTokens, int64(b.DailyCost)
		runs[0][j], runs[1][j] = b.RunTokens, int64(b.RunCost)
	}
	for i, metric := range []string{MetricTokens, MetricCost} {
		switch c.Scope {
		case ScopeTenant:
			pick(i, metric, WindowDaily, [3]int64{days[i][0], 0, 0})
		case ScopeInstance:
			pick(i, metric, WindowDaily, [3]int64{0, days[i][1], 0})
		case ScopeRun:
			pick(i, metric, WindowRun, [3]int64{runs[i][0], runs[i][1], owns[i]})
		}
	}
	return out
}

// LimitOf is what budgets (the tenant's, and the instance's that applies
// to c, nil when there is none) and, when c is a run's, the run's own
// limit own (see LeaseAsk.RunLimit) allow counter c: zero on a metric
// none limits.
func LimitOf(budgets [2]*Budget, c Counter, own Amount) Amount {
	if c.Scope != ScopeRun {
		own = Amount{}
	}
	l := limitsOf(budgets, c, own)
	return Amount{Tokens: l[0].max, Cost: Cost(l[1].max)}
}

// grantOf decides a lease ask as every Store does (through PlanLease),
// with budgets the tenant's and the ask's instance's (nil when there is
// none), besides the ask's RunLimit, and counted what the counter has
// used and holds. On each metric a limit bounds, what is free is the
// limit less counted; an ask whose Need passes it is refused (a counter
// already past its limit refuses even a Need of zero), and the grant is
// its Need, or, when Want is more, as much of Want as share of what is
// free allows. A metric no limit bounds needs no allowance: it is
// granted nothing.
func grantOf(budgets [2]*Budget, ask LeaseAsk, counted Amount, share float64) (granted, lim Amount, refused *BudgetError) {
	ls := limitsOf(budgets, ask.Counter, ask.RunLimit)
	used := [2]int64{counted.Tokens, int64(counted.Cost)}
	need := [2]int64{ask.Need.Tokens, int64(ask.Need.Cost)}
	want := [2]int64{ask.Want.Tokens, int64(ask.Want.Cost)}
	var g [2]int64
	for i, l := range ls {
		if !l.exists {
			continue
		}
		free := l.max - used[i]
		if need[i] > free {
			return Amount{}, LimitOf(budgets, ask.Counter, ask.RunLimit), &BudgetError{Scope: l.scope, Window: l.window, Metric: l.metric,
				Limit: l.max, Used: used[i], Asked: need[i]}
		}
		part := int64(float64(free) * share)
		part = min(max(part, 0), free)
		g[i] = max(need[i], min(want[i], part))
	}
	return Amount{Tokens: g[0], Cost: Cost(g[1])}, LimitOf(budgets, ask.Counter, ask.RunLimit), nil
}

func checkAmount(a Amount) bool {
	return a.Tokens >= 0 && a.Cost >= 0 && a.Tokens <= MaxAmount && a.Cost <= MaxAmount
}

func checkLeaseID(id string) error {
	if id == "" || len(id) > MaxLeaseIDBytes || !ValidKey(id) {
		return invalid("a lease id is 1 to %d bytes of text", MaxLeaseIDBytes)
	}
	return nil
}

// CheckLeaseRequest checks what Lease is given.
func CheckLeaseRequest(r LeaseRequest) error {
	switch {
	case len(r.Asks) == 0:
		return invalid("a lease request asks for something")
	case !(r.Share > 0 && r.Share <= 1):
		return invalid("a lease request's share is more than 0 and at most 1")
	case !r.Expires.After(r.At):
		return invalid("a lease expires after it is asked for")
	}
	for _, a := range r.Asks {
		if err := checkLeaseID(a.ID); err != nil {
			return err
		}
		if err := a.Counter.check(); err != nil {
			return err
		}
		switch {
		case !ValidKey(a.Instance) || a.Counter.Scope == ScopeTenant && a.Instance != "" ||
			a.Counter.Scope == ScopeInstance && a.Instance != a.Counter.ID:
			return invalid("an ask's instance is its counter's")
		case !checkAmount(a.Need) || !checkAmount(a.Want) || !checkAmount(a.RunLimit):
			return invalid("an ask's amounts are from 0 to %d", int64(MaxAmount))
		case a.RunLimit != (Amount{}) && a.Counter.Scope != ScopeRun:
			return invalid("only a run's counter has a limit of its own")
		}
	}
	return nil
}

// CheckBatch checks what Commit is given.
func CheckBatch(b Batch) error {
	if !b.Expires.After(b.At) {
		return invalid("leases a batch renews expire after it")
	}
	for _, l := range b.Leases {
		if err := checkLeaseID(l.ID); err != nil {
			return err
		}
		if err := l.Counter.check(); err != nil {
			return err
		}
		if !checkAmount(l.Used) {
			return invalid("usage is from 0 to %d", int64(MaxAmount))
		}
	}
	for _, u := range b.Unleased {
		if err := u.Counter.check(); err != nil {
			return err
		}
		if !checkAmount(u.Used) {
			return invalid("usage is from 0 to %d", int64(MaxAmount))
		}
	}
	for _, r := range b.Usage {
		switch {
		case r.TenantID == "" || !ValidKey(r.TenantID) || !ValidKey(r.InstanceID) || !ValidKey(r.Model) || !ValidKey(r.Provider):
			return invalid("a usage row names its tenant, instance, model and provider as valid text of at most %d bytes", MaxKeyBytes)
		case !ValidDay(r.Day):
			return invalid("day %.20q is not a date as DayOf writes it", r.Day)
		case r.Calls < 0 || r.Failed < 0 || r.Failed > r.Calls || r.Input < 0 || r.Output < 0 || r.Cost < 0 ||
			r.Calls > MaxAmount || r.Input > MaxAmount || r.Output > MaxAmount || r.Cost > MaxAmount:
			return invalid("a usage row's counts are from 0 to %d, its failed calls at most its calls", int64(MaxAmount))
		}
	}
	return nil
}

// CounterChange is a change of a counter's count: what it has used and
// what its leases hold, together. A Store keeps a count from going below
// zero.
type CounterChange struct {
	Counter      Counter
	Tokens, Cost int64
}

// HeldLease is a lease a Store holds: its counter and the allowance it
// has left.
type HeldLease struct {
	Counter Counter
	Left    Amount
}

// LeaseChange is what a commit does to a held lease: the allowance it
// has left after it, or its end.
type LeaseChange struct {
	ID   string
	Left Amount
	End  bool
}

// LeasePlan is how a Store carries out a LeaseRequest: the Grants to
// answer, each one not Gone nor Refused added to its lease (created when
// its ask is New), and the changes of the counters' counts.
type LeasePlan struct {
	Grants   []Grant
	Counters []CounterChange
}

// PlanLease decides r as every Store does, given what the store holds
// now: each counter's count (used and held; absent is zero), the leases
// of r's asks that it holds (by id), and the budgets of a tenant and
// instance. It returns the *BudgetError of a refusal when r.All, and
// ErrInvalid for a New ask whose id is held already. A Store reads all of
// it and writes the plan in one atomic step.
func PlanLease(r LeaseRequest, counts map[Counter]Amount, held map[string]HeldLease, budgets func(tenant, instance string) [2]*Budget) (LeasePlan, error) {
	plan := LeasePlan{Grants: make([]Grant, len(r.Asks))}
	granted := map[Counter]Amount{}
	for i, a := range r.Asks {
		l, ok := held[a.ID]
		switch {
		case a.New && ok:
			return LeasePlan{}, invalid("lease %.70q is held already", a.ID)
		case !a.New && (!ok || l.Counter != a.Counter):
			plan.Grants[i].Gone = true
			continue
		}
		g, lim, refused := grantOf(budgets(a.Counter.TenantID, a.Instance), a, counts[a.Counter].Add(granted[a.Counter]), r.Share)
		if refused != nil && r.All {
			return LeasePlan{}, refused
		}
		plan.Grants[i] = Grant{Granted: g, Limit: lim, Refused: refused}
		if refused == nil {
			granted[a.Counter] = granted[a.Counter].Add(g)
		}
	}
	for _, a := range r.Asks {
		if g, ok := granted[a.Counter]; ok {
			plan.Counters = append(plan.Counters, CounterChange{Counter: a.Counter, Tokens: g.Tokens, Cost: int64(g.Cost)})
			delete(granted, a.Counter)
		}
	}
	sortCounterChanges(plan.Counters)
	return plan, nil
}

// BudgetsIn answers PlanLease's budgets from budgets keyed by tenant and
// instance, a tenant's own under instance "": the tenant's budget, then,
// when instance is not "", the instance's.
func BudgetsIn(budgets map[[2]string]Budget) func(tenant, instance string) [2]*Budget {
	return func(tenant, instance string) [2]*Budget {
		var out [2]*Budget
		if b, ok := budgets[[2]string{tenant, ""}]; ok {
			out[0] = &b
		}
		if instance != "" {
			if b, ok := budgets[[2]string{tenant, instance}]; ok {
				out[1] = &b
			}
		}
		return out
	}
}

// CommitPlan is how a Store carries out a Batch: the Results to answer,
// the changes of the counters' counts and of the leases held.
type CommitPlan struct {
	Results  []LeaseResult
	Counters []CounterChange
	Leases   []LeaseChange
}

// PlanCommit works out b as every Store does, given the leases of b it
// holds (by id): a lease's usage comes off its allowance (the counter's
// count is unchanged: what was held is now used) and the part it does not
// cover adds to the count; a release takes what is left off the count;
// usage without a lease adds to its counter's count.
func PlanCommit(b Batch, held map[string]HeldLease) CommitPlan {
	plan := CommitPlan{Results: make([]LeaseResult, len(b.Leases))}
	deltas := map[Counter]*CounterChange{}
	add := func(c Counter, tokens, cost int64) {
		d := deltas[c]
		if d == nil {
			d = &CounterChange{Counter: c}
			deltas[c] = d
		}
		d.Tokens, d.Cost = d.Tokens+tokens, d.Cost+cost
	}
	held = maps.Clone(held)
	for i, u := range b.Leases {
		l, ok := held[u.ID]
		if !ok || l.Counter != u.Counter {
			plan.Results[i].Gone = true
			add(u.Counter, u.Used.Tokens, int64(u.Used.Cost))
			continue
		}
		c := Amount{Tokens: min(u.Used.Tokens, l.Left.Tokens), Cost: min(u.Used.Cost, l.Left.Cost)}
		plan.Results[i].Covered = c
		l.Left = l.Left.sub(c)
		add(u.Counter, u.Used.Tokens-c.Tokens, int64(u.Used.Cost-c.Cost))
		if u.Release {
			add(u.Counter, -l.Left.Tokens, -int64(l.Left.Cost))
			delete(held, u.ID)
			plan.Leases = append(plan.Leases, LeaseChange{ID: u.ID, End: true})
			continue
		}
		held[u.ID] = l
		plan.Leases = append(plan.Leases, LeaseChange{ID: u.ID, Left: l.Left})
	}
	for _, u := range b.Unleased {
		add(u.Counter, u.Used.Tokens, int64(u.Used.Cost))
	}
	for _, d := range deltas {
		plan.Counters = append(plan.Counters, *d)
	}
	sortCounterChanges(plan.Counters)
	return plan
}

// CompareCounters orders counters as every Store locks them: by tenant,
// scope, id and day.
func CompareCounters(a, b Counter) int {
	return cmp.Or(strings.Compare(a.TenantID, b.TenantID), strings.Compare(a.Scope, b.Scope),
		strings.Compare(a.ID, b.ID), strings.Compare(a.Day, b.Day))
}

// sortCounterChanges sorts changes by counter (CompareCounters).
func sortCounterChanges(cs []CounterChange) {
	slices.SortFunc(cs, func(a, b CounterChange) int { return CompareCounters(a.Counter, b.Counter) })
}
