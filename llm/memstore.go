package llm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryStore is a Store in process memory, for tests and for a server
// without a database. It keeps what the SQL stores keep, the way they
// keep it: times to the microsecond in UTC, sealed keys exactly as given;
// records it returns are the caller's to change.
type MemoryStore struct {
	mu        sync.Mutex
	providers map[[2]string]Provider
	routes    map[[2]string]Route
	budgets   map[[2]string]Budget
	counters  map[Counter]*counter
	leases    map[string]*memLease
	usage     map[UsageKey]*UsageRow
}

var _ Store = (*MemoryStore)(nil)

// counter is a budget counter: its count (what it has used and what
// leases hold on it) and when it last changed.
type counter struct {
	count Amount
	last  time.Time
}

type memLease struct {
	HeldLease
	expires time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{providers: map[[2]string]Provider{}, routes: map[[2]string]Route{}, budgets: map[[2]string]Budget{},
		counters: map[Counter]*counter{}, leases: map[string]*memLease{}, usage: map[UsageKey]*UsageRow{}}
}

func cloneProvider(p Provider) Provider {
	if len(p.SealedKey) == 0 {
		p.SealedKey = nil
	} else {
		p.SealedKey = bytes.Clone(p.SealedKey)
	}
	return p
}

func cloneRoute(r Route) Route {
	r.Targets = slices.Clone(r.Targets)
	return r
}

// put is the compare-and-set every record shares.
func put[T any](m *MemoryStore, records map[[2]string]T, key [2]string, what string, rec *T, expect int64,
	version func(*T) int64, keep func(stored, rec *T)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var stored int64
	cur, ok := records[key]
	if ok {
		stored = version(&cur)
	}
	if stored != expect {
		return fmt.Errorf("llm: put %s: version %d is not the stored %d: %w", what, expect, stored, ErrConflict)
	}
	if ok {
		keep(&cur, rec)
	}
	records[key] = *rec
	return nil
}

func (m *MemoryStore) PutProvider(_ context.Context, p Provider, expect int64) (Provider, error) {
	if err := PrepareProvider(&p, expect); err != nil {
		return Provider{}, fmt.Errorf("llm: put provider: %w", err)
	}
	p = cloneProvider(p)
	err := put(m, m.providers, [2]string{p.TenantID, p.Name}, "provider "+p.Name, &p, expect,
		func(p *Provider) int64 { return p.Version }, func(s, p *Provider) { p.CreatedAt = s.CreatedAt })
	if err != nil {
		return Provider{}, err
	}
	return cloneProvider(p), nil
}

func (m *MemoryStore) GetProvider(_ context.Context, tenantID, name string) (Provider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.providers[[2]string{tenantID, name}]
	if !ok {
		return Provider{}, fmt.Errorf("llm: get provider %.70q: %w", name, ErrNotFound)
	}
	return cloneProvider(p), nil
}

func (m *MemoryStore) ListProviders(_ context.Context, tenantID string) ([]Provider, error) {
	m.mu.Lock()
	out := []Provider{}
	for k, p := range m.providers {
		if k[0] == tenantID {
			out = append(out, cloneProvider(p))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Provider) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *MemoryStore) DeleteProvider(_ context.Context, tenantID, name string) error {
	return del(m, m.providers, [2]string{tenantID, name}, "provider "+name)
}

func del[T any](m *MemoryStore, records map[[2]string]T, key [2]string, what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := records[key]; !ok {
		return fmt.Errorf("llm: delete %.80s: %w", what, ErrNotFound)
	}
	delete(records, key)
	return nil
}

func (m *MemoryStore) PutRoute(_ context.Context, r Route, expect int64) (Route, error) {
	if err := PrepareRoute(&r, expect); err != nil {
		return Route{}, fmt.Errorf("llm: put route: %w", err)
	}
	r = cloneRoute(r)
	err := put(m, m.routes, [2]string{r.TenantID, r.Name}, "route "+r.Name, &r, expect,
		func(r *Route) int64 { return r.Version }, func(s, r *Route) { r.CreatedAt = s.CreatedAt })
	if err != nil {
		return Route{}, err
	}
	return cloneRoute(r), nil
}

func (m *MemoryStore) GetRoute(_ context.Context, tenantID, name string) (Route, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.routes[[2]string{tenantID, name}]
	if !ok {
		return Route{}, fmt.Errorf("llm: get route %.140q: %w", name, ErrNotFound)
	}
	return cloneRoute(r), nil
}

func (m *MemoryStore) ListRoutes(_ context.Context, tenantID string) ([]Route, error) {
	m.mu.Lock()
	out := []Route{}
	for k, r := range m.routes {
		if k[0] == tenantID {
			out = append(out, cloneRoute(r))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *MemoryStore) DeleteRoute(_ context.Context, tenantID, name string) error {
	return del(m, m.routes, [2]string{tenantID, name}, "route "+name)
}

func (m *MemoryStore) PutBudget(_ context.Context, b Budget, expect int64) (Budget, error) {
	if err := PrepareBudget(&b, expect); err != nil {
		return Budget{}, fmt.Errorf("llm: put budget: %w", err)
	}
	err := put(m, m.budgets, [2]string{b.TenantID, b.InstanceID}, "budget", &b, expect,
		func(b *Budget) int64 { return b.Version }, func(*Budget, *Budget) {})
	if err != nil {
		return Budget{}, err
	}
	return b, nil
}

func (m *MemoryStore) GetBudget(_ context.Context, tenantID, instanceID string) (Budget, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.budgets[[2]string{tenantID, instanceID}]
	if !ok {
		return Budget{}, fmt.Errorf("llm: get budget: %w", ErrNotFound)
	}
	return b, nil
}

func (m *MemoryStore) ListBudgets(_ context.Context, tenantID string) ([]Budget, error) {
	m.mu.Lock()
	out := []Budget{}
	for k, b := range m.budgets {
		if tenantID == "" || k[0] == tenantID {
			out = append(out, b)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Budget) int {
		return cmp.Or(strings.Compare(a.TenantID, b.TenantID), strings.Compare(a.InstanceID, b.InstanceID))
	})
	return out, nil
}

func (m *MemoryStore) DeleteBudget(_ context.Context, tenantID, instanceID string) error {
	return del(m, m.budgets, [2]string{tenantID, instanceID}, "budget")
}

// change applies changes to the counters, as made at at.
func (m *MemoryStore) change(changes []CounterChange, at time.Time) {
	for _, ch := range changes {
		v := m.counters[ch.Counter]
		if v == nil {
			v = &counter{}
			m.counters[ch.Counter] = v
		}
		v.count = Amount{Tokens: max(v.count.Tokens+ch.Tokens, 0), Cost: max(v.count.Cost+Cost(ch.Cost), 0)}
		if at.After(v.last) {
			v.last = at
		}
	}
}

// held are the leases of ids the store holds.
func (m *MemoryStore) held(ids []string) map[string]HeldLease {
	out := map[string]HeldLease{}
	for _, id := range ids {
		if l := m.leases[id]; l != nil {
			out[id] = l.HeldLease
		}
	}
	return out
}

func (m *MemoryStore) Lease(_ context.Context, r LeaseRequest) ([]Grant, error) {
	if err := CheckLeaseRequest(r); err != nil {
		return nil, fmt.Errorf("llm: lease: %w", err)
	}
	at, expires := micros(r.At), micros(r.Expires)
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := map[Counter]Amount{}
	for _, a := range r.Asks {
		if v := m.counters[a.Counter]; v != nil {
			counts[a.Counter] = v.count
		}
	}
	ids := make([]string, len(r.Asks))
	for i, a := range r.Asks {
		ids[i] = a.ID
	}
	plan, err := PlanLease(r, counts, m.held(ids), BudgetsIn(m.budgets))
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			return nil, be
		}
		return nil, fmt.Errorf("llm: lease: %w", err)
	}
	for i, a := range r.Asks {
		g := plan.Grants[i]
		switch {
		case g.Gone || g.Refused != nil:
		case a.New:
			m.leases[a.ID] = &memLease{HeldLease: HeldLease{Counter: a.Counter, Left: g.Granted}, expires: expires}
		default:
			l := m.leases[a.ID]
			l.Left = l.Left.Add(g.Granted)
		}
	}
	m.change(plan.Counters, at)
	return plan.Grants, nil
}

// micros is t as a store keeps it: to the microsecond, in UTC.
func micros(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

func (m *MemoryStore) Commit(_ context.Context, b Batch) ([]LeaseResult, error) {
	if err := CheckBatch(b); err != nil {
		return nil, fmt.Errorf("llm: commit: %w", err)
	}
	at, expires := micros(b.At), micros(b.Expires)
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, len(b.Leases))
	for i, u := range b.Leases {
		ids[i] = u.ID
	}
	plan := PlanCommit(b, m.held(ids))
	m.change(plan.Counters, at)
	for _, ch := range plan.Leases {
		if ch.End {
			delete(m.leases, ch.ID)
			continue
		}
		l := m.leases[ch.ID]
		l.Left, l.expires = ch.Left, expires
	}
	for _, r := range b.Usage {
		row := m.usage[r.UsageKey]
		if row == nil {
			row = &UsageRow{UsageKey: r.UsageKey}
			m.usage[r.UsageKey] = row
		}
		row.Calls += r.Calls
		row.Failed += r.Failed
		row.Input, row.Output, row.Cost = row.Input+r.Input, row.Output+r.Output, satAdd(row.Cost, r.Cost)
	}
	return plan.Results, nil
}

func (m *MemoryStore) Spent(_ context.Context, k Keys) (Spending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sp Spending
	for _, c := range CountersOf(k) {
		v := m.counters[c]
		if v == nil {
			continue
		}
		var held Amount
		for _, l := range m.leases {
			if l.Counter == c {
				held = held.Add(l.Left)
			}
		}
		sp.Used.Put(c, v.count.sub(held))
		sp.Held.Put(c, held)
	}
	return sp, nil
}

func (m *MemoryStore) Usage(_ context.Context, q UsageQuery) ([]UsageRow, error) {
	limit, err := CheckUsageQuery(q)
	if err != nil {
		return nil, fmt.Errorf("llm: usage: %w", err)
	}
	m.mu.Lock()
	out := []UsageRow{}
	for k, r := range m.usage {
		if q.TenantID != "" && k.TenantID != q.TenantID || q.InstanceID != "" && k.InstanceID != q.InstanceID ||
			q.Model != "" && k.Model != q.Model || q.From != "" && k.Day < q.From || q.To != "" && k.Day > q.To ||
			q.After != nil && k.Compare(*q.After) <= 0 {
			continue
		}
		out = append(out, *r)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b UsageRow) int { return a.Compare(b.UsageKey) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *MemoryStore) Sweep(_ context.Context, now, countersBefore time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// An expired lease's allowance stays in its counter's count: used.
	for id, l := range m.leases {
		if l.expires.Before(now) {
			delete(m.leases, id)
		}
	}
	for k, c := range m.counters {
		if c.last.Before(countersBefore) {
			delete(m.counters, k)
		}
	}
	return nil
}
