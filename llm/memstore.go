package llm

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
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
	counters  map[counterKey]*counter
	held      map[string]Reservation
	usage     map[UsageKey]*UsageRow
}

var _ Store = (*MemoryStore)(nil)

// counterKey names a budget counter: a tenant's day (instance and run
// empty), an instance's day (run empty) or a run (day empty).
type counterKey struct{ tenant, instance, run, day string }

type counter struct {
	Amount
	last time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{providers: map[[2]string]Provider{}, routes: map[[2]string]Route{}, budgets: map[[2]string]Budget{},
		counters: map[counterKey]*counter{}, held: map[string]Reservation{}, usage: map[UsageKey]*UsageRow{}}
}

// CounterKeys are the counters a call's keys fall under, as every Store
// keys them: the tenant's day, the instance's day (when k names an
// instance) and the run (when k names one). Each is (scope, id, day).
func CounterKeys(k Keys) [][3]string {
	out := [][3]string{{ScopeTenant, "", k.Day}}
	if k.InstanceID != "" {
		out = append(out, [3]string{ScopeInstance, k.InstanceID, k.Day})
	}
	if k.RunID != "" {
		out = append(out, [3]string{"run", k.RunID, ""})
	}
	return out
}

// NewReservationID returns a fresh reservation id.
func NewReservationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (m *MemoryStore) counterOf(k Keys, which [3]string) counterKey {
	switch which[0] {
	case ScopeTenant:
		return counterKey{tenant: k.TenantID, day: which[2]}
	case ScopeInstance:
		return counterKey{tenant: k.TenantID, instance: which[1], day: which[2]}
	}
	return counterKey{tenant: k.TenantID, run: which[1]}
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

// budgetsOf are the budgets that apply to k: the tenant's and the
// instance's.
func (m *MemoryStore) budgetsOf(k Keys) [2]*Budget {
	var out [2]*Budget
	if b, ok := m.budgets[[2]string{k.TenantID, ""}]; ok {
		out[0] = &b
	}
	if k.InstanceID != "" {
		if b, ok := m.budgets[[2]string{k.TenantID, k.InstanceID}]; ok {
			out[1] = &b
		}
	}
	return out
}

func (m *MemoryStore) spent(k Keys) Spending {
	var sp Spending
	for _, c := range CounterKeys(k) {
		var a Amount
		if v := m.counters[m.counterOf(k, c)]; v != nil {
			a = v.Amount
		}
		switch c[0] {
		case ScopeTenant:
			sp.TenantDay = a
		case ScopeInstance:
			sp.InstanceDay = a
		default:
			sp.Run = a
		}
	}
	return sp
}

// add adds a (which may be negative) to k's counters, none below zero,
// as changed at at (the reservation's time: the latest one counts).
func (m *MemoryStore) add(k Keys, a Amount, at time.Time) {
	for _, c := range CounterKeys(k) {
		ck := m.counterOf(k, c)
		v := m.counters[ck]
		if v == nil {
			v = &counter{}
			m.counters[ck] = v
		}
		v.Tokens, v.Cost = max(v.Tokens+a.Tokens, 0), max(v.Cost+a.Cost, 0)
		if at.After(v.last) {
			v.last = at
		}
	}
}

func (m *MemoryStore) Reserve(_ context.Context, k Keys, estimate Amount, at time.Time) (Reservation, error) {
	if err := CheckKeys(k, estimate); err != nil {
		return Reservation{}, fmt.Errorf("llm: reserve: %w", err)
	}
	at = time.UnixMicro(at.UnixMicro()).UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := Check(m.budgetsOf(k), m.spent(k), estimate, k.RunID != ""); e != nil {
		return Reservation{}, e
	}
	r := Reservation{ID: NewReservationID(), Keys: k, Estimate: estimate, At: at}
	m.add(k, estimate, at)
	m.held[r.ID] = r
	return r, nil
}

func (m *MemoryStore) Settle(_ context.Context, r Reservation, s Settlement) error {
	if err := CheckSettlement(s); err != nil {
		return fmt.Errorf("llm: settle: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	held, ok := m.held[r.ID]
	if !ok {
		return fmt.Errorf("llm: settle: reservation %.40q: %w", r.ID, ErrNotFound)
	}
	delete(m.held, r.ID)
	used := s.Used()
	m.add(held.Keys, Amount{Tokens: used.Tokens - held.Estimate.Tokens, Cost: used.Cost - held.Estimate.Cost}, held.At)
	key := UsageKey{TenantID: held.Keys.TenantID, Day: held.Keys.Day, InstanceID: held.Keys.InstanceID, Model: s.Model, Provider: s.Provider}
	row := m.usage[key]
	if row == nil {
		row = &UsageRow{UsageKey: key}
		m.usage[key] = row
	}
	row.Calls++
	if s.Failed {
		row.Failed++
	}
	row.Input, row.Output, row.Cost = row.Input+s.Input, row.Output+s.Output, satAdd(row.Cost, s.Cost)
	return nil
}

func (m *MemoryStore) Spent(_ context.Context, k Keys) (Spending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spent(k), nil
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

func (m *MemoryStore) Sweep(_ context.Context, reservedBefore, countersBefore time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.held {
		if r.At.Before(reservedBefore) {
			delete(m.held, id)
		}
	}
	for k, c := range m.counters {
		if c.last.Before(countersBefore) {
			delete(m.counters, k)
		}
	}
	return nil
}
