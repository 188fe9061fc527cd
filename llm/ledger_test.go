package llm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/llm"
)

var (
	ledgerT0  = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	ledgerDay = llm.DayOf(ledgerT0)
	tenantDay = llm.Counter{TenantID: "acme", Scope: llm.ScopeTenant, Day: ledgerDay}
	instDay   = llm.Counter{TenantID: "acme", Scope: llm.ScopeInstance, ID: "inst", Day: ledgerDay}
	runCtr    = llm.Counter{TenantID: "acme", Scope: llm.ScopeRun, ID: "run"}
)

// A commit moves tokens and cost alike: a lease covers what it holds of
// each, the rest adds to the counter, and a release takes what is left
// of each off it.
func TestPlanCommitCost(t *testing.T) {
	held := map[string]llm.HeldLease{"l": {Counter: tenantDay, Left: llm.Amount{Tokens: 300, Cost: 500}}}
	tests := []struct {
		name    string
		use     llm.LeaseUse
		covered llm.Amount
		change  llm.CounterChange
		lease   llm.LeaseChange
	}{
		{"within the lease", llm.LeaseUse{ID: "l", Counter: tenantDay, Used: llm.Amount{Tokens: 100, Cost: 200}},
			llm.Amount{Tokens: 100, Cost: 200}, llm.CounterChange{Counter: tenantDay},
			llm.LeaseChange{ID: "l", Left: llm.Amount{Tokens: 200, Cost: 300}}},
		{"past the lease", llm.LeaseUse{ID: "l", Counter: tenantDay, Used: llm.Amount{Tokens: 400, Cost: 700}},
			llm.Amount{Tokens: 300, Cost: 500}, llm.CounterChange{Counter: tenantDay, Tokens: 100, Cost: 200},
			llm.LeaseChange{ID: "l"}},
		{"released", llm.LeaseUse{ID: "l", Counter: tenantDay, Used: llm.Amount{Tokens: 50, Cost: 100}, Release: true},
			llm.Amount{Tokens: 50, Cost: 100}, llm.CounterChange{Counter: tenantDay, Tokens: -250, Cost: -400},
			llm.LeaseChange{ID: "l", End: true}},
		{"gone", llm.LeaseUse{ID: "other", Counter: tenantDay, Used: llm.Amount{Tokens: 50, Cost: 100}},
			llm.Amount{}, llm.CounterChange{Counter: tenantDay, Tokens: 50, Cost: 100}, llm.LeaseChange{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := llm.PlanCommit(llm.Batch{Leases: []llm.LeaseUse{tc.use}, At: ledgerT0, Expires: ledgerT0.Add(time.Hour)}, held)
			want := llm.CommitPlan{Results: []llm.LeaseResult{{Covered: tc.covered, Gone: tc.lease.ID == ""}},
				Counters: []llm.CounterChange{tc.change}}
			if tc.lease.ID != "" {
				want.Leases = []llm.LeaseChange{tc.lease}
			}
			if d := cmp.Diff(want, plan); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
	if held["l"].Left != (llm.Amount{Tokens: 300, Cost: 500}) {
		t.Errorf("PlanCommit changed the leases it was given: %+v", held["l"])
	}
}

// A run's limit is the tightest of the tenant's and the instance's
// per-run limits and the run's own, the tenant's when they are equal, a
// budget's over the run's own, and a refusal names it.
func TestPlanLeaseRunLimitScope(t *testing.T) {
	tests := []struct {
		name                  string
		tenant, instance, own int64 // run token limits
		scope                 string
		limit                 int64
	}{
		{"the tenant's tighter", 100, 200, 0, llm.ScopeTenant, 100},
		{"the instance's tighter", 200, 100, 0, llm.ScopeInstance, 100},
		{"equal", 100, 100, 0, llm.ScopeTenant, 100},
		{"the instance's alone", 0, 100, 0, llm.ScopeInstance, 100},
		{"the run's own tighter", 100, 200, 60, llm.ScopeRun, 60},
		{"the run's own looser", 100, 200, 150, llm.ScopeTenant, 100},
		{"the run's own equal to a budget", 0, 100, 100, llm.ScopeInstance, 100},
		{"the run's own alone", 0, 0, 40, llm.ScopeRun, 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			budgets := func(tenant, instance string) [2]*llm.Budget {
				return [2]*llm.Budget{{TenantID: tenant, RunTokens: tc.tenant}, {TenantID: tenant, InstanceID: instance, RunTokens: tc.instance}}
			}
			ask := llm.LeaseAsk{ID: "l", New: true, Counter: runCtr, Instance: "inst", RunLimit: llm.Amount{Tokens: tc.own}}
			ask.Need = llm.Amount{Tokens: tc.limit}
			r := llm.LeaseRequest{Share: 1, All: true, At: ledgerT0, Expires: ledgerT0.Add(time.Hour), Asks: []llm.LeaseAsk{ask}}
			grants, err := llm.PlanLease(r, map[llm.Counter]llm.Amount{}, map[string]llm.HeldLease{}, budgets)
			if err != nil || grants.Grants[0].Granted.Tokens != tc.limit || grants.Grants[0].Limit.Tokens != tc.limit {
				t.Errorf("PlanLease of the whole limit: %+v, %v, want %d granted", grants, err, tc.limit)
			}
			r.Asks[0].Need.Tokens = tc.limit + 1
			_, err = llm.PlanLease(r, map[llm.Counter]llm.Amount{}, map[string]llm.HeldLease{}, budgets)
			want := &llm.BudgetError{Scope: tc.scope, Window: llm.WindowRun, Metric: llm.MetricTokens, Limit: tc.limit, Asked: tc.limit + 1}
			var be *llm.BudgetError
			if !errors.As(err, &be) || !cmp.Equal(want, be) {
				t.Errorf("PlanLease: %#v, want %#v", err, want)
			}
		})
	}
	// The run's own cost limit bounds cost alike, and LimitOf applies a
	// run's own limit to its counter only.
	own := llm.Amount{Tokens: 50, Cost: 700}
	bs := [2]*llm.Budget{{TenantID: "acme", RunCost: 900, DailyTokens: 1000}}
	if got := llm.LimitOf(bs, runCtr, own); got != own {
		t.Errorf("LimitOf the run = %+v, want its own %+v", got, own)
	}
	if got := llm.LimitOf(bs, tenantDay, own); got != (llm.Amount{Tokens: 1000}) {
		t.Errorf("LimitOf the tenant's day = %+v, want the budget's alone", got)
	}
	r := llm.LeaseRequest{Share: 1, All: true, At: ledgerT0, Expires: ledgerT0.Add(time.Hour), Asks: []llm.LeaseAsk{{
		ID: "l", New: true, Counter: runCtr, Instance: "inst", RunLimit: own, Need: llm.Amount{Cost: 701}}}}
	_, err := llm.PlanLease(r, map[llm.Counter]llm.Amount{runCtr: {Cost: 100}}, map[string]llm.HeldLease{},
		func(string, string) [2]*llm.Budget { return bs })
	want := &llm.BudgetError{Scope: llm.ScopeRun, Window: llm.WindowRun, Metric: llm.MetricCost, Limit: 700, Used: 100, Asked: 701}
	if be := (*llm.BudgetError)(nil); !errors.As(err, &be) || !cmp.Equal(want, be) {
		t.Errorf("PlanLease past the run's own cost: %#v, want %#v", err, want)
	}
}

// A lease request is checked at the edges of every bound: what is at a
// bound is taken, what passes it refused.
func TestCheckLeaseRequest(t *testing.T) {
	ask := func(c llm.Counter, instance string) llm.LeaseAsk {
		return llm.LeaseAsk{ID: "l", New: true, Counter: c, Instance: instance, Need: llm.Amount{Tokens: 1}, Want: llm.Amount{Tokens: 1}}
	}
	tests := []struct {
		name   string
		change func(r *llm.LeaseRequest)
		ok     bool
	}{
		{"a tenant's day", func(*llm.LeaseRequest) {}, true},
		{"an instance's day", func(r *llm.LeaseRequest) { r.Asks[0] = ask(instDay, "inst") }, true},
		{"a run", func(r *llm.LeaseRequest) { r.Asks[0] = ask(runCtr, "inst") }, true},
		{"a run of no instance", func(r *llm.LeaseRequest) { r.Asks[0] = ask(runCtr, "") }, true},
		{"the whole of what is free", func(r *llm.LeaseRequest) { r.Share = 1 }, true},
		{"a sliver of what is free", func(r *llm.LeaseRequest) { r.Share = 1e-9 }, true},
		{"none of what is free", func(r *llm.LeaseRequest) { r.Share = 0 }, false},
		{"more than what is free", func(r *llm.LeaseRequest) { r.Share = 1.0000001 }, false},
		{"amounts at the most", func(r *llm.LeaseRequest) {
			r.Asks[0].Need, r.Asks[0].Want = llm.Amount{Tokens: llm.MaxAmount, Cost: llm.MaxAmount}, llm.Amount{Tokens: llm.MaxAmount, Cost: llm.MaxAmount}
		}, true},
		{"amounts of zero", func(r *llm.LeaseRequest) { r.Asks[0].Need, r.Asks[0].Want = llm.Amount{}, llm.Amount{} }, true},
		{"tokens needed past the most", func(r *llm.LeaseRequest) { r.Asks[0].Need.Tokens = llm.MaxAmount + 1 }, false},
		{"cost needed past the most", func(r *llm.LeaseRequest) { r.Asks[0].Need.Cost = llm.MaxAmount + 1 }, false},
		{"cost wanted past the most", func(r *llm.LeaseRequest) { r.Asks[0].Want.Cost = llm.MaxAmount + 1 }, false},
		{"negative cost", func(r *llm.LeaseRequest) { r.Asks[0].Want.Cost = -1 }, false},
		{"a lease id of the most bytes", func(r *llm.LeaseRequest) { r.Asks[0].ID = strings.Repeat("i", llm.MaxLeaseIDBytes) }, true},
		{"a lease id a byte too long", func(r *llm.LeaseRequest) { r.Asks[0].ID = strings.Repeat("i", llm.MaxLeaseIDBytes+1) }, false},
		{"a tenant's day with an id", func(r *llm.LeaseRequest) { r.Asks[0].Counter.ID = "inst" }, false},
		{"an instance's day without an id", func(r *llm.LeaseRequest) {
			r.Asks[0] = ask(llm.Counter{TenantID: "acme", Scope: llm.ScopeInstance, Day: ledgerDay}, "")
		}, false},
		{"a run's counter with a day", func(r *llm.LeaseRequest) {
			c := runCtr
			c.Day = ledgerDay
			r.Asks[0] = ask(c, "inst")
		}, false},
		{"a day of no date", func(r *llm.LeaseRequest) { r.Asks[0].Counter.Day = "2026-07-32" }, false},
		{"an unknown scope", func(r *llm.LeaseRequest) { r.Asks[0].Counter.Scope = "galaxy" }, false},
		{"a tenant key of no text", func(r *llm.LeaseRequest) { r.Asks[0].Counter.TenantID = "ac\x00me" }, false},
		{"a tenant's day under an instance", func(r *llm.LeaseRequest) { r.Asks[0].Instance = "inst" }, false},
		{"an instance's day under another", func(r *llm.LeaseRequest) { r.Asks[0] = ask(instDay, "other") }, false},
		{"an instance of no text", func(r *llm.LeaseRequest) { r.Asks[0] = ask(runCtr, "in\x00st") }, false},
		{"a run's own limit", func(r *llm.LeaseRequest) {
			r.Asks[0] = ask(runCtr, "inst")
			r.Asks[0].RunLimit = llm.Amount{Tokens: llm.MaxAmount, Cost: llm.MaxAmount}
		}, true},
		{"a run's own limit past the most", func(r *llm.LeaseRequest) {
			r.Asks[0] = ask(runCtr, "inst")
			r.Asks[0].RunLimit = llm.Amount{Tokens: llm.MaxAmount + 1}
		}, false},
		{"a run's own negative limit", func(r *llm.LeaseRequest) {
			r.Asks[0] = ask(runCtr, "inst")
			r.Asks[0].RunLimit = llm.Amount{Cost: -1}
		}, false},
		{"a run's own limit on a tenant's day", func(r *llm.LeaseRequest) { r.Asks[0].RunLimit = llm.Amount{Tokens: 5} }, false},
		{"a run's own limit on an instance's day", func(r *llm.LeaseRequest) {
			r.Asks[0] = ask(instDay, "inst")
			r.Asks[0].RunLimit = llm.Amount{Cost: 5}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := llm.LeaseRequest{Share: 0.5, At: ledgerT0, Expires: ledgerT0.Add(time.Hour), Asks: []llm.LeaseAsk{ask(tenantDay, "")}}
			tc.change(&r)
			err := llm.CheckLeaseRequest(r)
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, llm.ErrInvalid) {
				t.Errorf("CheckLeaseRequest: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// A batch's usage rows are checked at the edges of every bound.
func TestCheckBatchUsage(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *llm.UsageRow)
		ok     bool
	}{
		{"a row", func(*llm.UsageRow) {}, true},
		{"counts at the most", func(r *llm.UsageRow) {
			r.Calls, r.Failed, r.Input, r.Output, r.Cost = llm.MaxAmount, llm.MaxAmount, llm.MaxAmount, llm.MaxAmount, llm.MaxAmount
		}, true},
		{"counts of zero", func(r *llm.UsageRow) { r.Calls, r.Failed, r.Input, r.Output, r.Cost = 0, 0, 0, 0, 0 }, true},
		{"every call failed", func(r *llm.UsageRow) { r.Failed = r.Calls }, true},
		{"more failed than made", func(r *llm.UsageRow) { r.Failed = r.Calls + 1 }, false},
		{"negative calls", func(r *llm.UsageRow) { r.Calls, r.Failed = -1, -1 }, false},
		{"negative failed", func(r *llm.UsageRow) { r.Failed = -1 }, false},
		{"negative input", func(r *llm.UsageRow) { r.Input = -1 }, false},
		{"negative output", func(r *llm.UsageRow) { r.Output = -1 }, false},
		{"negative cost", func(r *llm.UsageRow) { r.Cost = -1 }, false},
		{"calls past the most", func(r *llm.UsageRow) { r.Calls = llm.MaxAmount + 1 }, false},
		{"input past the most", func(r *llm.UsageRow) { r.Input = llm.MaxAmount + 1 }, false},
		{"output past the most", func(r *llm.UsageRow) { r.Output = llm.MaxAmount + 1 }, false},
		{"cost past the most", func(r *llm.UsageRow) { r.Cost = llm.MaxAmount + 1 }, false},
		{"no tenant", func(r *llm.UsageRow) { r.TenantID = "" }, false},
		{"a tenant of no text", func(r *llm.UsageRow) { r.TenantID = "ac\x00me" }, false},
		{"an instance of no text", func(r *llm.UsageRow) { r.InstanceID = "in\x00st" }, false},
		{"a model of no text", func(r *llm.UsageRow) { r.Model = "gpt\x00" }, false},
		{"a provider of no text", func(r *llm.UsageRow) { r.Provider = "open\x00ai" }, false},
		{"a day of no date", func(r *llm.UsageRow) { r.Day = "2026-7-1" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := llm.UsageRow{UsageKey: llm.UsageKey{TenantID: "acme", Day: ledgerDay, InstanceID: "inst", Model: "gpt-4o", Provider: "openai"},
				Calls: 2, Failed: 1, Input: 3, Output: 4, Cost: 5}
			tc.change(&row)
			err := llm.CheckBatch(llm.Batch{Usage: []llm.UsageRow{row}, At: ledgerT0, Expires: ledgerT0.Add(time.Hour)})
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, llm.ErrInvalid) {
				t.Errorf("CheckBatch: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
