package adapter

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// MemoryOutbox is an OutboxStore in memory, for tests: it forgets
// everything when the process ends.
type MemoryOutbox struct {
	clock   Clock
	maxBody int

	mu      sync.Mutex
	entries map[string]*outboxMemEntry
	next    int64 // order of Put
}

type outboxMemEntry struct {
	OutboxEntry
	seq int64
}

var _ OutboxStore = (*MemoryOutbox)(nil)

// NewMemoryOutbox returns an empty outbox store in memory. Of opts it
// uses Clock and MaxBodyBytes.
func NewMemoryOutbox(opts *OutboxOptions) *MemoryOutbox {
	c := opts.resolve()
	return &MemoryOutbox{clock: c.clock, maxBody: c.maxBody, entries: make(map[string]*outboxMemEntry)}
}

// Put implements OutboxStore.
func (m *MemoryOutbox) Put(ctx context.Context, e OutboxEntry) error {
	if err := outboxCheck(e, m.maxBody); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[e.ID]; ok {
		return outboxExists(e.ID)
	}
	now := m.clock.Now()
	e.State, e.Attempts, e.Problem, e.CreatedAt, e.UpdatedAt = OutboxPending, 0, "", now, now
	e.Request.Body = slices.Clone(e.Request.Body)
	m.next++
	m.entries[e.ID] = &outboxMemEntry{OutboxEntry: e, seq: m.next}
	return nil
}

// Get implements OutboxStore.
func (m *MemoryOutbox) Get(ctx context.Context, id string) (OutboxEntry, error) {
	if err := ctx.Err(); err != nil {
		return OutboxEntry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[id]
	if !ok {
		return OutboxEntry{}, outboxNotFound(id)
	}
	return cur.OutboxEntry, nil
}

// Pending implements OutboxStore.
func (m *MemoryOutbox) Pending(ctx context.Context, thread string) ([]OutboxEntry, error) {
	return m.collect(ctx, func(e *outboxMemEntry) bool { return e.State == OutboxPending && e.Thread == thread })
}

// Failed implements OutboxStore.
func (m *MemoryOutbox) Failed(ctx context.Context) ([]OutboxEntry, error) {
	return m.collect(ctx, func(e *outboxMemEntry) bool { return e.State == OutboxFailed })
}

func (m *MemoryOutbox) sorted(keep func(*outboxMemEntry) bool) []*outboxMemEntry {
	var es []*outboxMemEntry
	for _, e := range m.entries {
		if keep(e) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *outboxMemEntry) int { return cmp.Compare(a.seq, b.seq) })
	return es
}

func (m *MemoryOutbox) collect(ctx context.Context, keep func(*outboxMemEntry) bool) ([]OutboxEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []OutboxEntry
	for _, e := range m.sorted(keep) {
		out = append(out, e.OutboxEntry)
	}
	return out, nil
}

// Threads implements OutboxStore.
func (m *MemoryOutbox) Threads(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	seen := make(map[string]bool)
	for _, e := range m.sorted(func(e *outboxMemEntry) bool { return e.State == OutboxPending }) {
		if !seen[e.Thread] {
			seen[e.Thread] = true
			out = append(out, e.Thread)
		}
	}
	return out, nil
}

// RecordAttempt implements OutboxStore.
func (m *MemoryOutbox) RecordAttempt(ctx context.Context, id, problem string) error {
	return m.finish(ctx, id, OutboxPending, problem)
}

// MarkSent implements OutboxStore.
func (m *MemoryOutbox) MarkSent(ctx context.Context, id string) error {
	return m.finish(ctx, id, OutboxSent, "")
}

// MarkFailed implements OutboxStore.
func (m *MemoryOutbox) MarkFailed(ctx context.Context, id, problem string) error {
	return m.finish(ctx, id, OutboxFailed, problem)
}

func (m *MemoryOutbox) finish(ctx context.Context, id string, to OutboxState, problem string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[id]
	if !ok {
		return outboxNotFound(id)
	}
	next := cur.OutboxEntry
	if err := outboxFinish(&next, to, problem, m.clock.Now()); err != nil {
		return err
	}
	cur.OutboxEntry = next
	return nil
}

// Prune implements OutboxStore.
func (m *MemoryOutbox) Prune(ctx context.Context, sentBefore time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for id, e := range m.entries {
		if e.State == OutboxSent && e.UpdatedAt.Before(sentBefore) {
			delete(m.entries, id)
			n++
		}
	}
	return n, nil
}
