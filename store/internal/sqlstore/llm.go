package sqlstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/llm"
)

// The LLM gateway's rows in the layout both SQL stores share (their
// 0017_llm migrations): a provider's and a route's key, version and times
// are columns, the rest their JSON encoding in body; budgets, counters,
// leases and usage are columns only.

// LLMProviderCols are the columns of llm_providers, in ScanLLMProvider's
// order.
const LLMProviderCols = `tenant, name, version, created_us, updated_us, sealed_key, body`

type providerBody struct {
	BaseURL  string        `json:"base_url"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	Disabled bool          `json:"disabled,omitempty"`
}

// LLMProviderArgs are p's values in LLMProviderCols' order.
func LLMProviderArgs(p *llm.Provider) ([]any, error) {
	body, err := json.Marshal(providerBody{BaseURL: p.BaseURL, Timeout: p.Timeout, Disabled: p.Disabled})
	if err != nil {
		return nil, fmt.Errorf("encode provider %s: %w", p.Name, err)
	}
	return []any{p.TenantID, p.Name, p.Version, Micros(p.CreatedAt), Micros(p.UpdatedAt), Raw(p.SealedKey), body}, nil
}

// ScanLLMProvider reads a row of LLMProviderCols.
func ScanLLMProvider(r Scanner) (llm.Provider, error) {
	var (
		p            llm.Provider
		b            providerBody
		c, u         int64
		sealed, body []byte
	)
	if err := r.Scan(&p.TenantID, &p.Name, &p.Version, &c, &u, &sealed, &body); err != nil {
		return llm.Provider{}, err
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return llm.Provider{}, fmt.Errorf("decode provider %s: %w", p.Name, err)
	}
	p.BaseURL, p.Timeout, p.Disabled = b.BaseURL, b.Timeout, b.Disabled
	p.CreatedAt, p.UpdatedAt, p.SealedKey = FromMicros(c), FromMicros(u), Raw(sealed)
	return p, nil
}

// LLMRouteCols are the columns of llm_routes, in ScanLLMRoute's order.
const LLMRouteCols = `tenant, name, version, created_us, updated_us, body`

type routeBody struct {
	Targets []llm.Target `json:"targets"`
	Input   float64      `json:"input_usd_per_million,omitempty"`
	Output  float64      `json:"output_usd_per_million,omitempty"`
}

// LLMRouteArgs are r's values in LLMRouteCols' order.
func LLMRouteArgs(r *llm.Route) ([]any, error) {
	body, err := json.Marshal(routeBody{Targets: r.Targets, Input: r.InputUSDPerMillion, Output: r.OutputUSDPerMillion})
	if err != nil {
		return nil, fmt.Errorf("encode route %s: %w", r.Name, err)
	}
	return []any{r.TenantID, r.Name, r.Version, Micros(r.CreatedAt), Micros(r.UpdatedAt), body}, nil
}

// ScanLLMRoute reads a row of LLMRouteCols.
func ScanLLMRoute(s Scanner) (llm.Route, error) {
	var (
		r    llm.Route
		b    routeBody
		c, u int64
		body []byte
	)
	if err := s.Scan(&r.TenantID, &r.Name, &r.Version, &c, &u, &body); err != nil {
		return llm.Route{}, err
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return llm.Route{}, fmt.Errorf("decode route %s: %w", r.Name, err)
	}
	r.Targets, r.InputUSDPerMillion, r.OutputUSDPerMillion = b.Targets, b.Input, b.Output
	r.CreatedAt, r.UpdatedAt = FromMicros(c), FromMicros(u)
	return r, nil
}

// LLMBudgetCols are the columns of llm_budgets, in ScanLLMBudget's order.
const LLMBudgetCols = `tenant, instance, version, updated_us, daily_tokens, daily_cost, run_tokens, run_cost`

// LLMBudgetArgs are b's values in LLMBudgetCols' order.
func LLMBudgetArgs(b *llm.Budget) []any {
	return []any{b.TenantID, b.InstanceID, b.Version, Micros(b.UpdatedAt), b.DailyTokens, int64(b.DailyCost), b.RunTokens, int64(b.RunCost)}
}

// ScanLLMBudget reads a row of LLMBudgetCols.
func ScanLLMBudget(s Scanner) (llm.Budget, error) {
	var (
		b                 llm.Budget
		u, dcost, runCost int64
	)
	if err := s.Scan(&b.TenantID, &b.InstanceID, &b.Version, &u, &b.DailyTokens, &dcost, &b.RunTokens, &runCost); err != nil {
		return llm.Budget{}, err
	}
	b.UpdatedAt, b.DailyCost, b.RunCost = FromMicros(u), llm.Cost(dcost), llm.Cost(runCost)
	return b, nil
}

// Counters are rows of llm_counters keyed (tenant, scope, id, day) as
// llm.Counter is; tokens and cost are the counter's count (what it has
// used and what leases hold on it), last_us its last change.
//
// Leases are rows of llm_reservations, the allowance one holder reserved
// on one counter: tenant, instance, run and day name the counter as
// llm.Keys would (a tenant's day: instance and run ''; an instance's day:
// instance; a run: run, day ''); tokens and cost are the allowance left;
// at_us is when the lease expires. What a counter's leases hold is the
// sum of their rows, which are few: a lease lives while its holder uses
// it.

// LLMLeaseCols are the columns of llm_reservations, in ScanLLMLease's
// order.
const LLMLeaseCols = `id, tenant, instance, run, day, tokens, cost, at_us`

// LLMLeaseKey are the instance and run columns of a lease on c.
func LLMLeaseKey(c llm.Counter) (instance, run string) {
	switch c.Scope {
	case llm.ScopeInstance:
		return c.ID, ""
	case llm.ScopeRun:
		return "", c.ID
	}
	return "", ""
}

// LLMLeaseArgs are a lease's values in LLMLeaseCols' order.
func LLMLeaseArgs(id string, c llm.Counter, left llm.Amount, expires time.Time) []any {
	inst, run := LLMLeaseKey(c)
	return []any{id, c.TenantID, inst, run, c.Day, left.Tokens, int64(left.Cost), Micros(expires)}
}

// ScanLLMLease reads a row of LLMLeaseCols: its id and lease.
func ScanLLMLease(s Scanner) (string, llm.HeldLease, error) {
	var (
		id, inst, run string
		l             llm.HeldLease
		cost, at      int64
	)
	if err := s.Scan(&id, &l.Counter.TenantID, &inst, &run, &l.Counter.Day, &l.Left.Tokens, &cost, &at); err != nil {
		return "", llm.HeldLease{}, err
	}
	l.Left.Cost = llm.Cost(cost)
	switch {
	case run != "":
		l.Counter.Scope, l.Counter.ID = llm.ScopeRun, run
	case inst != "":
		l.Counter.Scope, l.Counter.ID = llm.ScopeInstance, inst
	default:
		l.Counter.Scope = llm.ScopeTenant
	}
	if inst != "" && run != "" {
		// A call's reservation from before leases: no lease's counter.
		l.Counter.Scope = "reservation"
	}
	return id, l, nil
}

// LLMLeaseIDs are the ids of r's asks.
func LLMLeaseIDs(r llm.LeaseRequest) []string {
	out := make([]string, len(r.Asks))
	for i, a := range r.Asks {
		out[i] = a.ID
	}
	return out
}

// LLMBatchIDs are the ids of b's leases.
func LLMBatchIDs(b llm.Batch) []string {
	out := make([]string, len(b.Leases))
	for i, u := range b.Leases {
		out[i] = u.ID
	}
	return out
}

// LLMAskCounters are the counters of r's asks, each once, in the order
// every writer locks them.
func LLMAskCounters(r llm.LeaseRequest) []llm.Counter {
	var out []llm.Counter
	for _, a := range r.Asks {
		if !slices.Contains(out, a.Counter) {
			out = append(out, a.Counter)
		}
	}
	slices.SortFunc(out, llm.CompareCounters)
	return out
}

// LLMBudgetPairs are the (tenant, instance) pairs whose budgets r's asks
// are decided by, each once.
func LLMBudgetPairs(r llm.LeaseRequest) [][2]string {
	var out [][2]string
	for _, a := range r.Asks {
		pairs := [][2]string{{a.Counter.TenantID, ""}}
		if a.Instance != "" {
			pairs = append(pairs, [2]string{a.Counter.TenantID, a.Instance})
		}
		for _, p := range pairs {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// LLMBudgetsOf answers PlanLease's budgets from budgets read by
// (tenant, instance).
func LLMBudgetsOf(read map[[2]string]llm.Budget) func(tenant, instance string) [2]*llm.Budget {
	return func(tenant, instance string) [2]*llm.Budget {
		var out [2]*llm.Budget
		if b, ok := read[[2]string{tenant, ""}]; ok {
			out[0] = &b
		}
		if instance != "" {
			if b, ok := read[[2]string{tenant, instance}]; ok {
				out[1] = &b
			}
		}
		return out
	}
}

// LLMUsageCols are the columns of llm_usage, in ScanLLMUsage's order.
const LLMUsageCols = `tenant, day, instance, model, provider, calls, failed, input_tokens, output_tokens, cost`

// ScanLLMUsage reads a row of LLMUsageCols.
func ScanLLMUsage(s Scanner) (llm.UsageRow, error) {
	var (
		u    llm.UsageRow
		cost int64
	)
	if err := s.Scan(&u.TenantID, &u.Day, &u.InstanceID, &u.Model, &u.Provider, &u.Calls, &u.Failed, &u.Input, &u.Output, &cost); err != nil {
		return llm.UsageRow{}, err
	}
	u.Cost = llm.Cost(cost)
	return u, nil
}

// LLMUsageQuery is the SELECT of q's rows, its parameters written by
// param (the n-th, from 1: "?" or "$n"), limited to limit rows.
func LLMUsageQuery(q llm.UsageQuery, limit int, param func(n int) string) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v ...any) {
		ps := make([]any, len(v))
		for i, a := range v {
			args = append(args, a)
			ps[i] = param(len(args))
		}
		where = append(where, fmt.Sprintf(cond, ps...))
	}
	if q.TenantID != "" {
		add("tenant = %s", q.TenantID)
	}
	if q.InstanceID != "" {
		add("instance = %s", q.InstanceID)
	}
	if q.Model != "" {
		add("model = %s", q.Model)
	}
	if q.From != "" {
		add("day >= %s", q.From)
	}
	if q.To != "" {
		add("day <= %s", q.To)
	}
	if a := q.After; a != nil {
		add("(tenant, day, instance, model, provider) > (%s, %s, %s, %s, %s)", a.TenantID, a.Day, a.InstanceID, a.Model, a.Provider)
	}
	sql := `SELECT ` + LLMUsageCols + ` FROM llm_usage`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	return sql + ` ORDER BY tenant, day, instance, model, provider LIMIT ` + strconv.Itoa(limit), args
}
