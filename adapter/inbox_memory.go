package adapter

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// MemoryInbox is an InboxStore in memory, for tests: it forgets
// everything when the process ends.
type MemoryInbox struct {
	clock       Clock
	maxEnvelope int

	mu      sync.Mutex
	entries map[string]*InboxEntry
	jtis    map[string]time.Time
}

var _ InboxStore = (*MemoryInbox)(nil)

// NewMemoryInbox returns an empty inbox in memory. Of opts it uses Clock
// and MaxEnvelopeBytes.
func NewMemoryInbox(opts *InboxOptions) *MemoryInbox {
	c := opts.resolve()
	return &MemoryInbox{
		clock: c.clock, maxEnvelope: c.maxEnvelope,
		entries: make(map[string]*InboxEntry), jtis: make(map[string]time.Time),
	}
}

// Accept implements InboxStore.
func (m *MemoryInbox) Accept(ctx context.Context, batch []InboxAccept) ([]InboxResult, error) {
	items, err := inboxPrepare(batch, m.maxEnvelope)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	out := make([]InboxResult, len(items))
	for i, it := range items {
		e := it.entry
		if cur, ok := m.entries[e.EventID]; ok {
			out[i] = InboxResult{Outcome: inboxRedeliver(cur, e.Token, now), Entry: *cur}
		} else {
			e.AcceptedAt, e.UpdatedAt = now, now
			if e.State == InboxClosed {
				e.ClosedAt = now
			}
			m.entries[e.EventID] = &e
			out[i] = InboxResult{Outcome: InboxNew, Entry: e}
		}
		if !it.remember.IsZero() {
			m.rememberLocked(e.Token.JTI, it.remember)
		}
	}
	return out, nil
}

// Get implements InboxStore.
func (m *MemoryInbox) Get(ctx context.Context, eventID string) (InboxEntry, error) {
	if err := ctx.Err(); err != nil {
		return InboxEntry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[eventID]
	if !ok {
		return InboxEntry{}, inboxNotFound(eventID)
	}
	return *cur, nil
}

// ByRun implements InboxStore.
func (m *MemoryInbox) ByRun(ctx context.Context, runID string) ([]InboxEntry, error) {
	return m.collect(ctx, func(e *InboxEntry) bool { return e.RunID == runID })
}

// List implements InboxStore.
func (m *MemoryInbox) List(ctx context.Context, states ...InboxState) ([]InboxEntry, error) {
	set, err := inboxStateSet(states)
	if err != nil {
		return nil, err
	}
	return m.collect(ctx, func(e *InboxEntry) bool { return set == nil || set[e.State] })
}

func (m *MemoryInbox) collect(ctx context.Context, keep func(*InboxEntry) bool) ([]InboxEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var out []InboxEntry
	for _, e := range m.entries {
		if keep(e) {
			out = append(out, *e)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, inboxOrder)
	return out, nil
}

// inboxOrder is the order lists are in: by sequence, then event id.
func inboxOrder(a, b InboxEntry) int {
	return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.EventID, b.EventID))
}

// SetState implements InboxStore.
func (m *MemoryInbox) SetState(ctx context.Context, eventID string, from, to InboxState, reason string) error {
	if err := inboxCheckMove(eventID, from, to); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[eventID]
	if !ok {
		return inboxNotFound(eventID)
	}
	next := *cur
	if err := inboxMove(&next, from, to, reason, m.clock.Now()); err != nil {
		return err
	}
	*cur = next
	return nil
}

// ReplaceToken implements InboxStore.
func (m *MemoryInbox) ReplaceToken(ctx context.Context, eventID string, tok InboxToken) (bool, error) {
	if err := inboxCheckToken(eventID, tok); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[eventID]
	if !ok {
		return false, inboxNotFound(eventID)
	}
	return inboxReplace(cur, tok, m.clock.Now())
}

// Prune implements InboxStore.
func (m *MemoryInbox) Prune(ctx context.Context, closedBefore time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for id, e := range m.entries {
		if e.State == InboxClosed && e.ClosedAt.Before(closedBefore) {
			delete(m.entries, id)
			n++
		}
	}
	now := m.clock.Now()
	for jti, until := range m.jtis {
		if !until.After(now) {
			delete(m.jtis, jti)
		}
	}
	return n, nil
}

// RememberJTI implements InboxStore.
func (m *MemoryInbox) RememberJTI(ctx context.Context, jti string, until time.Time) error {
	if err := inboxCheckJTI(jti); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.rememberLocked(jti, until)
	m.mu.Unlock()
	return nil
}

func (m *MemoryInbox) rememberLocked(jti string, until time.Time) {
	if cur, ok := m.jtis[jti]; !ok || until.After(cur) {
		m.jtis[jti] = until
	}
}

// SeenJTI implements InboxStore.
func (m *MemoryInbox) SeenJTI(ctx context.Context, jti string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	until, ok := m.jtis[jti]
	m.mu.Unlock()
	return ok && until.After(m.clock.Now()), nil
}

// Seen implements InboxStore.
func (m *MemoryInbox) Seen(ctx context.Context, jti string) (bool, error) { return m.SeenJTI(ctx, jti) }
