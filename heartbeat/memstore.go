package heartbeat

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryStore is a Store in process memory, for tests and for a server
// without a database. It keeps what the SQL stores keep, the way they keep
// it: times to the microsecond in UTC.
type MemoryStore struct {
	mu      sync.Mutex
	configs map[string]*Record        // by id
	fires   map[string]map[int64]Fire // by config id, tick in microseconds
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{configs: map[string]*Record{}, fires: map[string]map[int64]Fire{}}
}

// Stored is t as a store keeps it: to the microsecond, in UTC; the zero
// time stays zero.
func Stored(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// Stored is r with its times as a store keeps them (see Stored).
func (r Record) Stored() Record {
	r.NextRunAt, r.LastRunAt = Stored(r.NextRunAt), Stored(r.LastRunAt)
	r.CreatedAt, r.UpdatedAt = Stored(r.CreatedAt), Stored(r.UpdatedAt)
	r.Missed.From, r.Missed.To, r.Missed.DetectedAt = Stored(r.Missed.From), Stored(r.Missed.To), Stored(r.Missed.DetectedAt)
	return r
}

func (m *MemoryStore) Create(_ context.Context, r Record) (Record, error) {
	if err := CheckRecord(&r); err != nil {
		return Record{}, fmt.Errorf("heartbeat: create %s: %w", r.ID, err)
	}
	r = r.Stored()
	r.Version, r.UpdatedAt = 1, r.CreatedAt
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs[r.ID] != nil {
		return Record{}, fmt.Errorf("heartbeat: create %s: %w", r.ID, ErrExists)
	}
	for _, c := range m.configs {
		if c.TenantID == r.TenantID && c.InstanceID == r.InstanceID {
			return Record{}, fmt.Errorf("heartbeat: create %s: instance %s has config %s: %w", r.ID, r.InstanceID, c.ID, ErrExists)
		}
	}
	c := r
	m.configs[r.ID] = &c
	return r, nil
}

// get is the tenant's config id; the lock is held.
func (m *MemoryStore) get(tenantID, id string) (*Record, error) {
	c := m.configs[id]
	if c == nil || c.TenantID != tenantID {
		return nil, ErrNotFound
	}
	return c, nil
}

func (m *MemoryStore) Get(_ context.Context, tenantID, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.get(tenantID, id)
	if err != nil {
		return Record{}, fmt.Errorf("heartbeat: get %.40q: %w", id, err)
	}
	return *c, nil
}

func (m *MemoryStore) List(_ context.Context, tenantID, instanceID string) ([]Record, error) {
	m.mu.Lock()
	out := []Record{}
	for _, c := range m.configs {
		if c.TenantID == tenantID && (instanceID == "" || c.InstanceID == instanceID) {
			out = append(out, *c)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *MemoryStore) SetStatus(_ context.Context, tenantID, id string, st Status, next, now time.Time) (Record, bool, error) {
	what := fmt.Sprintf("heartbeat: set status of %.40q", id)
	next, err := CheckStatus(st, next)
	if err != nil {
		return Record{}, false, fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.get(tenantID, id)
	if err != nil {
		return Record{}, false, fmt.Errorf("%s: %w", what, err)
	}
	if c.Status == st {
		return *c, false, nil
	}
	c.Status, c.NextRunAt, c.UpdatedAt, c.Version = st, Stored(next), Stored(now), c.Version+1
	return *c, true, nil
}

func (m *MemoryStore) Delete(_ context.Context, tenantID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(tenantID, id); err != nil {
		return fmt.Errorf("heartbeat: delete %.40q: %w", id, err)
	}
	delete(m.configs, id)
	delete(m.fires, id)
	return nil
}

func (m *MemoryStore) Count(context.Context) (map[Status]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Status]int64{}
	for _, c := range m.configs {
		out[c.Status]++
	}
	return out, nil
}

func (m *MemoryStore) Due(_ context.Context, now time.Time, limit int) ([]Record, error) {
	m.mu.Lock()
	var out []Record
	for _, c := range m.configs {
		if c.Status == StatusActive && !c.NextRunAt.After(now) {
			out = append(out, *c)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *MemoryStore) NextRun(context.Context) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best time.Time
	for _, c := range m.configs {
		if c.Status == StatusActive && (best.IsZero() || c.NextRunAt.Before(best)) {
			best = c.NextRunAt
		}
	}
	return best, !best.IsZero(), nil
}

func (m *MemoryStore) Claim(_ context.Context, cl Claim) (Fire, error) {
	what := fmt.Sprintf("heartbeat: claim %.40q", cl.ConfigID)
	if err := CheckReason(cl.Skip); err != nil {
		return Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.get(cl.TenantID, cl.ConfigID)
	if err != nil {
		return Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := CheckClaim(c, &cl); err != nil {
		return Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	tick := Stored(cl.Tick)
	fires := m.fires[c.ID]
	if !tick.IsZero() && fires[tick.UnixMicro()].ConfigID != "" {
		return Fire{}, fmt.Errorf("%s: %w: tick %v was handled already", what, ErrConflict, tick)
	}
	f := PlanFire(&cl, func() int {
		n := 0
		since := Stored(cl.Since)
		for _, f := range fires {
			if (f.Outcome == OutcomeClaimed || f.Outcome == OutcomeFired) && !f.Tick.Before(since) {
				n++
			}
		}
		return n
	})
	ApplyClaim(c, &cl, &f)
	if !f.Tick.IsZero() {
		if fires == nil {
			fires = map[int64]Fire{}
			m.fires[c.ID] = fires
		}
		fires[f.Tick.UnixMicro()] = f
	}
	return f, nil
}

// PlanFire is the fire a claim records (zero when it handles no tick),
// counting the day's runs with runs only when the budget needs them.
func PlanFire(cl *Claim, runs func() int) Fire {
	if cl.Tick.IsZero() {
		return Fire{}
	}
	now := Stored(cl.Now)
	f := Fire{TenantID: cl.TenantID, ConfigID: cl.ConfigID, Tick: Stored(cl.Tick), CreatedAt: now, UpdatedAt: now}
	switch {
	case cl.Skip != "":
		f.Outcome, f.Reason = OutcomeSkippedBudget, ClipReason(cl.Skip)
	case cl.MaxRuns > 0 && runs() >= cl.MaxRuns:
		f.Outcome, f.Reason = OutcomeSkippedBudget, fmt.Sprintf("the day's budget of %d runs is spent", cl.MaxRuns)
	default:
		f.Outcome, f.Owner, f.LeaseUntil, f.Attempts = OutcomeClaimed, cl.Owner, Stored(cl.LeaseUntil), 1
	}
	return f
}

// ApplyClaim moves r on as cl says, f being the fire the claim records.
func ApplyClaim(r *Record, cl *Claim, f *Fire) {
	r.NextRunAt = Stored(cl.Next)
	if f.Outcome == OutcomeClaimed {
		r.LastRunAt = f.Tick
	}
	if cl.Missed.Count > 0 {
		r.Missed.Total += cl.Missed.Count
		r.Missed.Count = cl.Missed.Count
		r.Missed.From, r.Missed.To, r.Missed.DetectedAt = Stored(cl.Missed.From), Stored(cl.Missed.To), Stored(cl.Missed.DetectedAt)
	}
	r.UpdatedAt = Stored(cl.Now)
	r.Version++
}

func (m *MemoryStore) Settle(_ context.Context, s Settlement) error {
	what := fmt.Sprintf("heartbeat: settle %.40q at %v", s.ConfigID, s.Tick)
	if err := CheckSettlement(&s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(s.TenantID, s.ConfigID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	key := Stored(s.Tick).UnixMicro()
	f, ok := m.fires[s.ConfigID][key]
	if !ok {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if f.Outcome != OutcomeClaimed || f.Owner != s.Owner {
		return fmt.Errorf("%s: %w: the fire is %s by %s", what, ErrConflict, f.Outcome, f.Owner)
	}
	f.Outcome, f.RunID, f.Reason, f.UpdatedAt = s.Outcome, s.RunID, s.Reason, Stored(s.Now)
	m.fires[s.ConfigID][key] = f
	return nil
}

func (m *MemoryStore) Stale(_ context.Context, now time.Time, limit int) ([]Fire, error) {
	m.mu.Lock()
	var out []Fire
	for _, fs := range m.fires {
		for _, f := range fs {
			if f.Outcome == OutcomeClaimed && !f.LeaseUntil.After(now) {
				out = append(out, f)
			}
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Fire) int {
		return cmp.Or(a.Tick.Compare(b.Tick), strings.Compare(a.ConfigID, b.ConfigID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *MemoryStore) Reclaim(_ context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (Fire, error) {
	what := fmt.Sprintf("heartbeat: reclaim %.40q at %v", configID, tick)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := Stored(tick).UnixMicro()
	f, ok := m.fires[configID][key]
	if !ok || f.TenantID != tenantID || f.Outcome != OutcomeClaimed || f.LeaseUntil.After(now) {
		return Fire{}, fmt.Errorf("%s: %w", what, ErrConflict)
	}
	f.Owner, f.LeaseUntil, f.Attempts, f.UpdatedAt = owner, Stored(until), f.Attempts+1, Stored(now)
	m.fires[configID][key] = f
	return f, nil
}

func (m *MemoryStore) Fires(_ context.Context, tenantID, configID string, ff FireFilter) ([]Fire, error) {
	m.mu.Lock()
	if _, err := m.get(tenantID, configID); err != nil {
		m.mu.Unlock()
		return []Fire{}, nil
	}
	out := []Fire{}
	for _, f := range m.fires[configID] {
		if !f.Tick.Before(ff.Since) {
			out = append(out, f)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Fire) int {
		if ff.Newest {
			return b.Tick.Compare(a.Tick)
		}
		return a.Tick.Compare(b.Tick)
	})
	if n := FireLimit(ff.Limit); len(out) > n {
		out = out[:n]
	}
	return out, nil
}
