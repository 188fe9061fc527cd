package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a [Store] in process memory, for tests and for a server
// without a database. It keeps what the SQL stores keep, the way they keep
// it: every time to the microsecond in UTC, JSON values (Config,
// OutputSchema, artifacts) as their encoding reads back (numbers become
// float64), raw JSON and sealed bytes exactly as given; records and
// events it returns are the caller's to change.
//
// WatchEvents reports the writes of this process, which is every write:
// fn is called after each CreateRun or WriteRun that appended events, once
// the write is in the store and before the write returns, never for one
// that appended none or failed. fn may use the store. Concurrent writes to
// one run may be reported out of order; last is how far the run's events
// reached at least.
// Listings filter and sort every run of the store, which suits the
// thousands of runs a test or a development server keeps.
type MemoryStore struct {
	mu        sync.RWMutex
	instances map[string]*memInstance // by id
	names     map[[2]string]string    // tenant, name → id
	runs      map[string]*memRun      // by id
	claimable map[string]struct{}     // ids of QUEUED and RUNNING runs the debugger does not hold
	events    map[string][]Event      // by run id; event i has sequence i+1

	wmu      sync.Mutex
	watchers map[*memWatcher]struct{}
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		instances: map[string]*memInstance{},
		names:     map[[2]string]string{},
		runs:      map[string]*memRun{},
		claimable: map[string]struct{}{},
		events:    map[string][]Event{},
		watchers:  map[*memWatcher]struct{}{},
	}
}

// memInstance is a stored instance: its JSON encoding, which a read
// decodes into a copy of its own, and the fields kept beside it.
type memInstance struct {
	head Instance // ID, TenantID, Name, Version, times, SealedSecrets
	body []byte
}

func encodeInstance(in *Instance) (*memInstance, error) {
	b := *in
	b.SealedSecrets, b.CreatedAt, b.UpdatedAt = nil, time.Time{}, time.Time{}
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode instance %s: %w", in.ID, err)
	}
	return &memInstance{
		head: Instance{ID: in.ID, TenantID: in.TenantID, Name: in.Name, Version: in.Version, CreatedAt: in.CreatedAt,
			UpdatedAt: in.UpdatedAt, SealedSecrets: cloneBytes(in.SealedSecrets)},
		body: body,
	}, nil
}

func (m *memInstance) decode() Instance {
	var in Instance
	// The body is this store's own encoding of an Instance.
	_ = json.Unmarshal(m.body, &in)
	h := &m.head
	in.ID, in.TenantID, in.Name, in.Version, in.CreatedAt, in.UpdatedAt = h.ID, h.TenantID, h.Name, h.Version, h.CreatedAt, h.UpdatedAt
	in.SealedSecrets = cloneBytes(h.SealedSecrets)
	return in
}

// memRun is a stored run: its JSON encoding and, beside it, what the store
// filters and claims by and the bytes kept exactly.
type memRun struct {
	head Run // everything but what only body holds
	body []byte
	// held is set while the run's debugger holds it: it is not claimed.
	held bool
}

func encodeRun(r *Run) (*memRun, error) {
	b := *r
	b.Pause, b.PendingInput = nil, nil
	b.CreatedAt, b.UpdatedAt, b.StartedAt, b.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	return &memRun{
		head: Run{ID: r.ID, TenantID: r.TenantID, InstanceID: r.InstanceID, ThreadID: r.ThreadID, Caller: Caller{UserID: r.Caller.UserID},
			Status: r.Status, LeaseOwner: r.LeaseOwner, LeaseUntil: r.LeaseUntil, NotBefore: r.NotBefore,
			LastSequence: r.LastSequence, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Pause: cloneBytes(r.Pause), PendingInput: cloneBytes(r.PendingInput),
			CustomHeaders: cloneBytes(r.CustomHeaders)},
		body: body,
		held: r.Debug.Holds(),
	}, nil
}

func (m *memRun) decode() Run {
	var r Run
	// The body is this store's own encoding of a Run.
	_ = json.Unmarshal(m.body, &r)
	h := &m.head
	r.ID, r.TenantID, r.InstanceID, r.Caller.UserID, r.Status = h.ID, h.TenantID, h.InstanceID, h.Caller.UserID, h.Status
	r.LeaseOwner, r.LeaseUntil, r.NotBefore, r.LastSequence, r.Version = h.LeaseOwner, h.LeaseUntil, h.NotBefore, h.LastSequence, h.Version
	r.CreatedAt, r.UpdatedAt, r.StartedAt, r.EndedAt = h.CreatedAt, h.UpdatedAt, h.StartedAt, h.EndedAt
	r.Pause, r.PendingInput, r.CustomHeaders = cloneBytes(h.Pause), cloneBytes(h.PendingInput), cloneBytes(h.CustomHeaders)
	return r
}

// cloneBytes copies b; empty is nil, as the SQL stores read it back.
func cloneBytes[T ~[]byte](b T) T {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// stored is t as a store keeps it: to the microsecond, in UTC.
func stored(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

func (s *MemoryStore) CreateInstance(_ context.Context, in Instance, now time.Time) (Instance, error) {
	what := "gateway: create instance " + in.ID
	if err := PrepareInstance(&in, 0, now); err != nil {
		return Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	enc, err := encodeInstance(&in)
	if err != nil {
		return Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.instances[in.ID]; ok {
		return Instance{}, fmt.Errorf("%s: %w", what, ErrExists)
	}
	key := [2]string{in.TenantID, in.Name}
	if _, ok := s.names[key]; ok {
		return Instance{}, fmt.Errorf("%s: name %q: %w", what, in.Name, ErrExists)
	}
	s.instances[in.ID], s.names[key] = enc, in.ID
	return enc.decode(), nil
}

// PrepareInstance checks an instance a Store is about to write and sets
// what a store assigns: the version after expect (0 creates) and the
// times, to the microsecond in UTC, now (time.Now when zero) being the
// update time and, on creation, the creation time. Stores other than
// this package's use it to behave alike.
func PrepareInstance(in *Instance, expect int64, now time.Time) error {
	if in.ID == "" || in.TenantID == "" || in.Name == "" {
		return errors.New("an instance needs an id, a tenant and a name")
	}
	if expect < 0 {
		return fmt.Errorf("expected version %d is negative", expect)
	}
	if now.IsZero() {
		now = time.Now()
	}
	now = stored(now)
	in.Version, in.UpdatedAt = expect+1, now
	if expect == 0 {
		in.CreatedAt = now
	}
	return nil
}

func (s *MemoryStore) GetInstance(_ context.Context, tenantID, id string) (Instance, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.instances[id]
	if !ok || m.head.TenantID != tenantID {
		return Instance{}, fmt.Errorf("gateway: get instance %s: %w", id, ErrNotFound)
	}
	return m.decode(), nil
}

func (s *MemoryStore) ListInstances(_ context.Context, f InstanceFilter) ([]Instance, error) {
	s.mu.RLock()
	var found []*memInstance
	for _, m := range s.instances {
		if m.head.TenantID == f.TenantID && m.head.Name > f.AfterName {
			found = append(found, m)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(found, func(a, b *memInstance) int { return cmp.Compare(a.head.Name, b.head.Name) })
	out := make([]Instance, 0, min(len(found), pageLimit(f.Limit)))
	for _, m := range found[:min(len(found), pageLimit(f.Limit))] {
		out = append(out, m.decode())
	}
	return out, nil
}

// pageLimit is limit when it is in (0, MaxPage], else MaxPage.
func pageLimit(limit int) int {
	if limit <= 0 || limit > MaxPage {
		return MaxPage
	}
	return limit
}

func (s *MemoryStore) UpdateInstance(_ context.Context, in Instance, expectVersion int64, now time.Time) (Instance, error) {
	what := "gateway: update instance " + in.ID
	if expectVersion <= 0 {
		return Instance{}, fmt.Errorf("%s: an update needs the version it replaces, not %d", what, expectVersion)
	}
	if err := PrepareInstance(&in, expectVersion, now); err != nil {
		return Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.instances[in.ID]
	switch {
	case !ok || old.head.TenantID != in.TenantID:
		return Instance{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	case old.head.Version != expectVersion:
		return Instance{}, fmt.Errorf("%s: version %d is not the current %d: %w", what, expectVersion, old.head.Version, ErrConflict)
	}
	key := [2]string{in.TenantID, in.Name}
	if id, taken := s.names[key]; taken && id != in.ID {
		return Instance{}, fmt.Errorf("%s: name %q: %w", what, in.Name, ErrExists)
	}
	in.CreatedAt = old.head.CreatedAt
	enc, err := encodeInstance(&in)
	if err != nil {
		return Instance{}, fmt.Errorf("%s: %w", what, err)
	}
	delete(s.names, [2]string{old.head.TenantID, old.head.Name})
	s.instances[in.ID], s.names[key] = enc, in.ID
	return enc.decode(), nil
}

func (s *MemoryStore) DeleteInstance(_ context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.instances[id]
	if !ok || m.head.TenantID != tenantID {
		return fmt.Errorf("gateway: delete instance %s: %w", id, ErrNotFound)
	}
	delete(s.instances, id)
	delete(s.names, [2]string{m.head.TenantID, m.head.Name})
	return nil
}

// PrepareRunWrite checks a write a Store is about to make and sets what a
// store assigns: the run's version and times (to the microsecond in UTC),
// each event's run id and time, payloads copied (empty ones nil);
// sequences are numbered once the last stored one is known. w.Events is
// copied, not changed. Stores other than this package's use it to behave
// alike.
func PrepareRunWrite(w *RunWrite, create bool) error {
	r := &w.Run
	switch {
	case create && w.ExpectVersion != 0:
		return fmt.Errorf("a run is created with ExpectVersion 0, not %d", w.ExpectVersion)
	case !create && w.ExpectVersion <= 0:
		return fmt.Errorf("a run write needs the version it replaces, not %d", w.ExpectVersion)
	case r.ID == "" || r.TenantID == "":
		return errors.New("a run needs an id and a tenant")
	case !r.Status.Valid():
		return fmt.Errorf("run status %q is not a run status", r.Status)
	}
	if w.Now.IsZero() {
		w.Now = time.Now()
	}
	w.Now = stored(w.Now)
	r.Version, r.UpdatedAt = w.ExpectVersion+1, w.Now
	if create {
		r.CreatedAt = w.Now
	}
	r.StartedAt, r.EndedAt, r.LeaseUntil, r.NotBefore = stored(r.StartedAt), stored(r.EndedAt), stored(r.LeaseUntil), stored(r.NotBefore)
	evs := make([]Event, len(w.Events))
	for i, e := range w.Events {
		if e.Type == "" {
			return fmt.Errorf("event %d has no type", i)
		}
		if len(e.Payload) > 0 && !json.Valid(e.Payload) {
			return fmt.Errorf("event %d (%s): payload is not JSON", i, e.Type)
		}
		if e.At.IsZero() {
			e.At = w.Now
		}
		e.RunID, e.Sequence, e.At, e.Payload = r.ID, 0, stored(e.At), cloneBytes(e.Payload)
		evs[i] = e
	}
	w.Events = evs
	return nil
}

func (s *MemoryStore) CreateRun(_ context.Context, w RunWrite) (Run, []Event, error) {
	what := "gateway: create run " + w.Run.ID
	if err := PrepareRunWrite(&w, true); err != nil {
		return Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	for i := range w.Events {
		w.Events[i].Sequence = int64(i) + 1
	}
	w.Run.LastSequence = int64(len(w.Events))
	enc, err := encodeRun(&w.Run)
	if err != nil {
		return Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	if _, ok := s.runs[w.Run.ID]; ok {
		s.mu.Unlock()
		return Run{}, nil, fmt.Errorf("%s: %w", what, ErrExists)
	}
	s.put(enc)
	s.events[w.Run.ID] = cloneEvents(w.Events)
	s.committed(enc.head.ID, enc.head.LastSequence, len(w.Events) > 0)
	return enc.decode(), w.Events, nil
}

// put stores m, keeping the claimable set in step; mu is held.
func (s *MemoryStore) put(m *memRun) {
	s.runs[m.head.ID] = m
	if claimable(m.head.Status) && !m.held {
		s.claimable[m.head.ID] = struct{}{}
	} else {
		delete(s.claimable, m.head.ID)
	}
}

func claimable(st Status) bool { return st == StatusQueued || st == StatusRunning }

// committed ends a write: it releases mu and tells the watchers of the
// events appended, if any.
func (s *MemoryStore) committed(runID string, last int64, appended bool) {
	s.mu.Unlock()
	if !appended {
		return
	}
	s.wmu.Lock()
	ws := make([]*memWatcher, 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	s.wmu.Unlock()
	for _, w := range ws {
		if w.ctx.Err() == nil {
			w.fn(runID, last)
		}
	}
}

func cloneEvents(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		e.Payload = cloneBytes(e.Payload)
		out[i] = e
	}
	return out
}

func (s *MemoryStore) GetRun(_ context.Context, tenantID, id string) (Run, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.runs[id]
	if !ok || (tenantID != "" && m.head.TenantID != tenantID) {
		return Run{}, fmt.Errorf("gateway: get run %s: %w", id, ErrNotFound)
	}
	return m.decode(), nil
}

func (s *MemoryStore) CountRuns(context.Context) (map[Status]int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[Status]int64{}
	for _, m := range s.runs {
		out[m.head.Status]++
	}
	return out, nil
}

func (s *MemoryStore) ListRuns(_ context.Context, f RunFilter) ([]Run, error) {
	paged := !f.AfterCreated.IsZero() || f.AfterID != ""
	after := stored(f.AfterCreated)
	s.mu.RLock()
	var found []*memRun
	for _, m := range s.runs {
		h := &m.head
		switch {
		case f.TenantID != "" && h.TenantID != f.TenantID,
			f.UserID != "" && h.Caller.UserID != f.UserID,
			f.InstanceID != "" && h.InstanceID != f.InstanceID,
			f.ThreadID != "" && h.ThreadID != f.ThreadID,
			len(f.Statuses) > 0 && !slices.Contains(f.Statuses, h.Status),
			paged && compareRunKey(h.CreatedAt, h.ID, after, f.AfterID) >= 0:
			continue
		}
		found = append(found, m)
	}
	s.mu.RUnlock()
	slices.SortFunc(found, func(a, b *memRun) int {
		return compareRunKey(b.head.CreatedAt, b.head.ID, a.head.CreatedAt, a.head.ID)
	})
	n := min(len(found), pageLimit(f.Limit))
	out := make([]Run, n)
	for i, m := range found[:n] {
		out[i] = m.decode()
	}
	return out, nil
}

// compareRunKey orders runs by (CreatedAt, ID).
func compareRunKey(at time.Time, id string, at2 time.Time, id2 string) int {
	if c := at.Compare(at2); c != 0 {
		return c
	}
	return cmp.Compare(id, id2)
}

func (s *MemoryStore) WriteRun(_ context.Context, w RunWrite) (Run, []Event, error) {
	what := "gateway: write run " + w.Run.ID
	if err := PrepareRunWrite(&w, false); err != nil {
		return Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	old, ok := s.runs[w.Run.ID]
	switch {
	case !ok || old.head.TenantID != w.Run.TenantID:
		s.mu.Unlock()
		return Run{}, nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	case old.head.Version != w.ExpectVersion:
		s.mu.Unlock()
		return Run{}, nil, fmt.Errorf("%s: version %d is not the current %d: %w", what, w.ExpectVersion, old.head.Version, ErrConflict)
	}
	last := old.head.LastSequence
	for i := range w.Events {
		w.Events[i].Sequence = last + int64(i) + 1
	}
	w.Run.LastSequence, w.Run.CreatedAt = last+int64(len(w.Events)), old.head.CreatedAt
	enc, err := encodeRun(&w.Run)
	if err != nil {
		s.mu.Unlock()
		return Run{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	s.put(enc)
	if len(w.Events) > 0 {
		s.events[w.Run.ID] = append(s.events[w.Run.ID], cloneEvents(w.Events)...)
	}
	s.committed(enc.head.ID, enc.head.LastSequence, len(w.Events) > 0)
	return enc.decode(), w.Events, nil
}

func (s *MemoryStore) Events(_ context.Context, runID string, after int64, limit int) ([]Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	evs := s.events[runID]
	from := int64(len(evs))
	if after < from {
		from = max(after, 0)
	}
	return cloneEvents(evs[from:min(int64(len(evs)), from+int64(pageLimit(limit)))]), nil
}

func (s *MemoryStore) ClaimRuns(_ context.Context, owner string, now, until time.Time, limit int) ([]Run, error) {
	if owner == "" {
		return nil, errors.New("gateway: claim runs: no owner")
	}
	now, until = stored(now), stored(until)
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*memRun
	for id := range s.claimable {
		h := &s.runs[id].head
		if !h.LeaseUntil.After(now) && !h.NotBefore.After(now) {
			due = append(due, s.runs[id])
		}
	}
	slices.SortFunc(due, func(a, b *memRun) int { return compareRunKey(a.head.CreatedAt, a.head.ID, b.head.CreatedAt, b.head.ID) })
	due = due[:min(len(due), pageLimit(limit))]
	out := make([]Run, len(due))
	for i, m := range due {
		// Only the lease changes: body is shared with the old record,
		// which nothing changes.
		c := &memRun{head: m.head, body: m.body, held: m.held}
		c.head.LeaseOwner, c.head.LeaseUntil, c.head.Version, c.head.UpdatedAt = owner, until, m.head.Version+1, now
		s.runs[m.head.ID] = c
		out[i] = c.decode()
	}
	return out, nil
}

type memWatcher struct {
	ctx context.Context
	fn  func(runID string, last int64)
}

// WatchEvents registers fn and returns at once; fn is called after every
// later write of this store that appended events, until ctx ends.
func (s *MemoryStore) WatchEvents(ctx context.Context, fn func(runID string, last int64)) error {
	if fn == nil {
		return errors.New("gateway: watch events: fn is nil")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gateway: watch events: %w", err)
	}
	w := &memWatcher{ctx: ctx, fn: fn}
	s.wmu.Lock()
	s.watchers[w] = struct{}{}
	s.wmu.Unlock()
	context.AfterFunc(ctx, func() {
		s.wmu.Lock()
		delete(s.watchers, w)
		s.wmu.Unlock()
	})
	return nil
}
