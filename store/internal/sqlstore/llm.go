package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
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

// LLMBatchCounters are the counters of b's leases and unleased calls,
// each once, in the order every writer locks them.
func LLMBatchCounters(b llm.Batch) []llm.Counter {
	var out []llm.Counter
	for _, u := range b.Leases {
		out = append(out, u.Counter)
	}
	for _, u := range b.Unleased {
		out = append(out, u.Counter)
	}
	slices.SortFunc(out, llm.CompareCounters)
	return slices.Compact(out)
}

// LLMSQL runs the statements of an LLMStore in one database's dialect.
// A read of one row returns the dialect's NoRows when there is none;
// times are in microseconds (Micros).
type LLMSQL interface {
	// PutProvider writes a row of LLMProviderArgs' values if the stored
	// version of its key is expect (0: there is none), and returns the
	// row's creation time, which a replace keeps; llm.ErrConflict when
	// the stored version is another.
	PutProvider(ctx context.Context, args []any, expect int64) (int64, error)
	// PutRoute writes a row of LLMRouteArgs' values as PutProvider does.
	PutRoute(ctx context.Context, args []any, expect int64) (int64, error)
	// PutBudget writes a row of LLMBudgetArgs' values as PutProvider
	// does.
	PutBudget(ctx context.Context, args []any, expect int64) error
	// Provider reads the tenant's provider name.
	Provider(ctx context.Context, tenantID, name string) (llm.Provider, error)
	// Providers lists the tenant's providers by name.
	Providers(ctx context.Context, tenantID string) ([]llm.Provider, error)
	// DeleteProvider deletes the tenant's provider name, and reports
	// false when there is none.
	DeleteProvider(ctx context.Context, tenantID, name string) (bool, error)
	// Route reads the tenant's route name.
	Route(ctx context.Context, tenantID, name string) (llm.Route, error)
	// Routes lists the tenant's routes by name.
	Routes(ctx context.Context, tenantID string) ([]llm.Route, error)
	// DeleteRoute deletes the tenant's route name, and reports false when
	// there is none.
	DeleteRoute(ctx context.Context, tenantID, name string) (bool, error)
	// Budget reads the budget of the tenant's instance (the tenant's own
	// when instanceID is "").
	Budget(ctx context.Context, tenantID, instanceID string) (llm.Budget, error)
	// Budgets lists the tenant's budgets by instance, or when tenantID is
	// "" every budget by tenant and instance.
	Budgets(ctx context.Context, tenantID string) ([]llm.Budget, error)
	// DeleteBudget deletes a budget, and reports false when there is
	// none.
	DeleteBudget(ctx context.Context, tenantID, instanceID string) (bool, error)
	// Ledger runs step in one transaction, committed when step returns
	// nil.
	Ledger(ctx context.Context, step func(LedgerTx) error) error
	// Spent reads counter c's count and what the leases on it hold.
	Spent(ctx context.Context, c llm.Counter) (count, held llm.Amount, err error)
	// Usage lists up to limit of the usage rows q selects
	// (LLMUsageQuery).
	Usage(ctx context.Context, q llm.UsageQuery, limit int) ([]llm.UsageRow, error)
	// Sweep deletes the leases that expired before nowUS and the counters
	// last changed before countersUS.
	Sweep(ctx context.Context, nowUS, countersUS int64) error
}

// LedgerTx is a lease's or a commit's transaction. Its writes may be
// sent together when the step that makes them returns, so that a write's
// error may come from Ledger instead.
type LedgerTx interface {
	// Lock begins the transaction: it locks counters, in their order,
	// and reads their counts; locks and reads the held leases of ids;
	// and reads the budgets of pairs (tenant, instance). What it locks
	// stays as read until the transaction ends, so that concurrent
	// leases and commits queue on the same counters and none passes a
	// limit. A counter it makes is changed at atUS.
	Lock(ctx context.Context, counters []llm.Counter, ids []string, pairs [][2]string, atUS int64) (LedgerRead, error)
	// NewLease inserts a lease, a row of LLMLeaseArgs' values.
	NewLease(ctx context.Context, args []any) error
	// GrowLease adds by to the allowance lease id has left.
	GrowLease(ctx context.Context, id string, by llm.Amount) error
	// SetLease sets the allowance lease id has left and its expiry.
	SetLease(ctx context.Context, id string, left llm.Amount, expiresUS int64) error
	// EndLease deletes lease id.
	EndLease(ctx context.Context, id string) error
	// Change applies changes to the counters, none below zero, as
	// changed at atUS.
	Change(ctx context.Context, changes []llm.CounterChange, atUS int64) error
	// AddUsage adds u to its usage row.
	AddUsage(ctx context.Context, u *llm.UsageRow) error
}

// LedgerRead is what LedgerTx.Lock read: the counts of the counters (a
// counter not yet made counts nothing), the leases held of the ids asked
// for, and the budgets of the pairs that have one.
type LedgerRead struct {
	Counts  map[llm.Counter]llm.Amount
	Held    map[string]llm.HeldLease
	Budgets map[[2]string]llm.Budget
}

// LLMStore is an llm.Store on an SQL database: the checks, the steps
// between statements and the errors both SQL stores share, over the
// statements an LLMSQL runs.
type LLMStore struct {
	d  Dialect
	db LLMSQL
}

// NewLLMStore returns the LLMStore of db, whose dialect is d.
func NewLLMStore(d Dialect, db LLMSQL) *LLMStore { return &LLMStore{d: d, db: db} }

var _ llm.Store = (*LLMStore)(nil)

func (s *LLMStore) PutProvider(ctx context.Context, p llm.Provider, expect int64) (_ llm.Provider, err error) {
	defer s.d.wrap(&err, "put provider %.70q", p.Name)
	if err := llm.PrepareProvider(&p, expect); err != nil {
		return llm.Provider{}, err
	}
	args, err := LLMProviderArgs(&p)
	if err != nil {
		return llm.Provider{}, err
	}
	created, err := s.db.PutProvider(ctx, args, expect)
	if err != nil {
		return llm.Provider{}, err
	}
	p.CreatedAt, p.SealedKey = FromMicros(created), Raw(p.SealedKey)
	return p, nil
}

func (s *LLMStore) GetProvider(ctx context.Context, tenantID, name string) (_ llm.Provider, err error) {
	defer s.d.wrap(&err, "get provider %.70q", name)
	if !s.d.Holds(tenantID, name) {
		return llm.Provider{}, llm.ErrNotFound
	}
	p, err := s.db.Provider(ctx, tenantID, name)
	return p, s.d.Missing(err, llm.ErrNotFound)
}

func (s *LLMStore) ListProviders(ctx context.Context, tenantID string) (_ []llm.Provider, err error) {
	defer s.d.wrap(&err, "list providers")
	if !s.d.Holds(tenantID) {
		return []llm.Provider{}, nil
	}
	return s.db.Providers(ctx, tenantID)
}

func (s *LLMStore) DeleteProvider(ctx context.Context, tenantID, name string) (err error) {
	defer s.d.wrap(&err, "delete provider %.70q", name)
	if !s.d.Holds(tenantID, name) {
		return llm.ErrNotFound
	}
	return gone(s.db.DeleteProvider(ctx, tenantID, name))
}

// gone is a delete's error: llm.ErrNotFound when it deleted nothing.
func gone(deleted bool, err error) error {
	if err == nil && !deleted {
		return llm.ErrNotFound
	}
	return err
}

func (s *LLMStore) PutRoute(ctx context.Context, r llm.Route, expect int64) (_ llm.Route, err error) {
	defer s.d.wrap(&err, "put route %.140q", r.Name)
	if err := llm.PrepareRoute(&r, expect); err != nil {
		return llm.Route{}, err
	}
	args, err := LLMRouteArgs(&r)
	if err != nil {
		return llm.Route{}, err
	}
	created, err := s.db.PutRoute(ctx, args, expect)
	if err != nil {
		return llm.Route{}, err
	}
	r.CreatedAt = FromMicros(created)
	return r, nil
}

func (s *LLMStore) GetRoute(ctx context.Context, tenantID, name string) (_ llm.Route, err error) {
	defer s.d.wrap(&err, "get route %.140q", name)
	if !s.d.Holds(tenantID, name) {
		return llm.Route{}, llm.ErrNotFound
	}
	r, err := s.db.Route(ctx, tenantID, name)
	return r, s.d.Missing(err, llm.ErrNotFound)
}

func (s *LLMStore) ListRoutes(ctx context.Context, tenantID string) (_ []llm.Route, err error) {
	defer s.d.wrap(&err, "list routes")
	if !s.d.Holds(tenantID) {
		return []llm.Route{}, nil
	}
	return s.db.Routes(ctx, tenantID)
}

func (s *LLMStore) DeleteRoute(ctx context.Context, tenantID, name string) (err error) {
	defer s.d.wrap(&err, "delete route %.140q", name)
	if !s.d.Holds(tenantID, name) {
		return llm.ErrNotFound
	}
	return gone(s.db.DeleteRoute(ctx, tenantID, name))
}

func (s *LLMStore) PutBudget(ctx context.Context, b llm.Budget, expect int64) (_ llm.Budget, err error) {
	defer s.d.wrap(&err, "put budget")
	if err := llm.PrepareBudget(&b, expect); err != nil {
		return llm.Budget{}, err
	}
	if err := s.db.PutBudget(ctx, LLMBudgetArgs(&b), expect); err != nil {
		return llm.Budget{}, err
	}
	return b, nil
}

func (s *LLMStore) GetBudget(ctx context.Context, tenantID, instanceID string) (_ llm.Budget, err error) {
	defer s.d.wrap(&err, "get budget")
	if !s.d.Holds(tenantID, instanceID) {
		return llm.Budget{}, llm.ErrNotFound
	}
	b, err := s.db.Budget(ctx, tenantID, instanceID)
	return b, s.d.Missing(err, llm.ErrNotFound)
}

func (s *LLMStore) ListBudgets(ctx context.Context, tenantID string) (_ []llm.Budget, err error) {
	defer s.d.wrap(&err, "list budgets")
	if !s.d.Holds(tenantID) {
		return []llm.Budget{}, nil
	}
	return s.db.Budgets(ctx, tenantID)
}

func (s *LLMStore) DeleteBudget(ctx context.Context, tenantID, instanceID string) (err error) {
	defer s.d.wrap(&err, "delete budget")
	if !s.d.Holds(tenantID, instanceID) {
		return llm.ErrNotFound
	}
	return gone(s.db.DeleteBudget(ctx, tenantID, instanceID))
}

func (s *LLMStore) Lease(ctx context.Context, r llm.LeaseRequest) ([]llm.Grant, error) {
	if err := llm.CheckLeaseRequest(r); err != nil {
		return nil, fmt.Errorf("%s: lease: %w", s.d.Name, err)
	}
	at := Micros(r.At)
	var plan llm.LeasePlan
	err := s.db.Ledger(ctx, func(tx LedgerTx) error {
		got, err := tx.Lock(ctx, LLMAskCounters(r), LLMLeaseIDs(r), LLMBudgetPairs(r), at)
		if err != nil {
			return err
		}
		if plan, err = llm.PlanLease(r, got.Counts, got.Held, llm.BudgetsIn(got.Budgets)); err != nil {
			return err // a refusal rolls the locking back
		}
		for i, a := range r.Asks {
			switch g := plan.Grants[i]; {
			case g.Gone || g.Refused != nil:
			case a.New:
				err = tx.NewLease(ctx, LLMLeaseArgs(a.ID, a.Counter, g.Granted, r.Expires))
			default:
				err = tx.GrowLease(ctx, a.ID, g.Granted)
			}
			if err != nil {
				return err
			}
		}
		return tx.Change(ctx, plan.Counters, at)
	})
	// A refusal is the caller's answer, not the store's failure.
	var be *llm.BudgetError
	switch {
	case errors.As(err, &be):
		return nil, be
	case err != nil:
		return nil, fmt.Errorf("%s: lease: %w", s.d.Name, err)
	}
	return plan.Grants, nil
}

func (s *LLMStore) Commit(ctx context.Context, b llm.Batch) (_ []llm.LeaseResult, err error) {
	defer s.d.wrap(&err, "commit")
	if err := llm.CheckBatch(b); err != nil {
		return nil, err
	}
	at, expires := Micros(b.At), Micros(b.Expires)
	usage := slices.Clone(b.Usage)
	// Usage rows are locked in key order too.
	slices.SortFunc(usage, func(x, y llm.UsageRow) int { return x.Compare(y.UsageKey) })
	var plan llm.CommitPlan
	err = s.db.Ledger(ctx, func(tx LedgerTx) error {
		got, err := tx.Lock(ctx, LLMBatchCounters(b), LLMBatchIDs(b), nil, at)
		if err != nil {
			return err
		}
		plan = llm.PlanCommit(b, got.Held)
		if err := tx.Change(ctx, plan.Counters, at); err != nil {
			return err
		}
		for _, l := range plan.Leases {
			if l.End {
				err = tx.EndLease(ctx, l.ID)
			} else {
				err = tx.SetLease(ctx, l.ID, l.Left, expires)
			}
			if err != nil {
				return err
			}
		}
		for i := range usage {
			if err := tx.AddUsage(ctx, &usage[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return plan.Results, nil
}

func (s *LLMStore) Spent(ctx context.Context, k llm.Keys) (_ llm.Spending, err error) {
	defer s.d.wrap(&err, "spent")
	var sp llm.Spending
	if !s.d.Holds(k.TenantID, k.InstanceID, k.RunID, k.Day) {
		return sp, nil
	}
	for _, c := range llm.CountersOf(k) {
		count, held, err := s.db.Spent(ctx, c)
		if err != nil {
			return llm.Spending{}, err
		}
		sp.Held.Put(c, held)
		sp.Used.Put(c, llm.Amount{Tokens: max(count.Tokens-held.Tokens, 0), Cost: max(count.Cost-held.Cost, 0)})
	}
	return sp, nil
}

func (s *LLMStore) Usage(ctx context.Context, q llm.UsageQuery) (_ []llm.UsageRow, err error) {
	defer s.d.wrap(&err, "usage")
	limit, err := llm.CheckUsageQuery(q)
	if err != nil {
		return nil, err
	}
	if !s.d.Holds(q.TenantID, q.InstanceID, q.Model) ||
		q.After != nil && !s.d.Holds(q.After.TenantID, q.After.InstanceID, q.After.Model, q.After.Provider) {
		return []llm.UsageRow{}, nil
	}
	return s.db.Usage(ctx, q, limit)
}

func (s *LLMStore) Sweep(ctx context.Context, now, countersBefore time.Time) (err error) {
	defer s.d.wrap(&err, "sweep the LLM ledger")
	// An expired lease's allowance stays in its counter's count: used.
	return s.db.Sweep(ctx, Micros(now), Micros(countersBefore))
}
