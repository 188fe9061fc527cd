package delivery

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// fakeStore is a delivery.Store in memory for this package's tests, with
// the contract's rules the service relies on (the store helpers' memory
// and SQL stores pass the contract suite).
type fakeStore struct {
	mu        sync.Mutex
	events    map[string][]delivery.StoredEvent // by agent
	dedupe    map[[2]string]delivery.StoredEvent
	consumers map[[2]string]delivery.Consumer
	tokens    map[string]delivery.TokenRecord
	used      map[string]time.Time
	apiTokens map[string]delivery.APIToken
	requests  map[[2]string]delivery.IdempotentRequest
	messages  []delivery.StoredMessage
	watchers  []func(string, int64)
	// watched is closed when the first watcher is registered.
	watched     chan struct{}
	watchedOnce sync.Once

	// recordCalls counts RecordTokens calls, for the one-write-per-page
	// rule.
	recordCalls int
	// failHead, when set, is HeadSeq's error.
	failHead error
}

var _ delivery.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{events: map[string][]delivery.StoredEvent{}, dedupe: map[[2]string]delivery.StoredEvent{},
		consumers: map[[2]string]delivery.Consumer{}, tokens: map[string]delivery.TokenRecord{}, used: map[string]time.Time{},
		apiTokens: map[string]delivery.APIToken{}, requests: map[[2]string]delivery.IdempotentRequest{}, watched: make(chan struct{})}
}

func (f *fakeStore) AppendEvents(_ context.Context, events []delivery.StoredEvent) ([]delivery.StoredEvent, error) {
	f.mu.Lock()
	out := make([]delivery.StoredEvent, 0, len(events))
	heads := map[string]int64{}
	for _, e := range events {
		if e.DedupeKey != "" {
			if have, ok := f.dedupe[[2]string{e.AgentID, e.DedupeKey}]; ok {
				out = append(out, have)
				continue
			}
		}
		e.Seq = int64(len(f.events[e.AgentID]) + 1)
		f.events[e.AgentID] = append(f.events[e.AgentID], e)
		if e.DedupeKey != "" {
			f.dedupe[[2]string{e.AgentID, e.DedupeKey}] = e
		}
		heads[e.AgentID] = e.Seq
		out = append(out, e)
	}
	ws := slices.Clone(f.watchers)
	f.mu.Unlock()
	for agent, head := range heads {
		for _, w := range ws {
			w(agent, head)
		}
	}
	return out, nil
}

func (f *fakeStore) ReadEvents(_ context.Context, agentID string, after int64, limit int) ([]delivery.StoredEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []delivery.StoredEvent
	for _, e := range f.events[agentID] {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeStore) HeadSeq(_ context.Context, agentID string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failHead != nil {
		return 0, f.failHead
	}
	return int64(len(f.events[agentID])), nil
}

func (f *fakeStore) WatchEvents(ctx context.Context, fn func(agentID string, head int64)) error {
	f.mu.Lock()
	f.watchers = append(f.watchers, fn)
	f.mu.Unlock()
	f.watchedOnce.Do(func() { close(f.watched) })
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeStore) OpenConsumer(_ context.Context, agentID, name string, now time.Time) (delivery.Consumer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{agentID, name}
	if c, ok := f.consumers[k]; ok {
		return c, nil
	}
	head := int64(len(f.events[agentID]))
	c := delivery.Consumer{AgentID: agentID, Name: name, AckedSeq: head, SentSeq: head, Version: 1, CreatedAt: now, UpdatedAt: now}
	f.consumers[k] = c
	return c, nil
}

func (f *fakeStore) GetConsumer(_ context.Context, agentID, name string) (delivery.Consumer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.consumers[[2]string{agentID, name}]
	if !ok {
		return c, delivery.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) UpdateConsumer(_ context.Context, c delivery.Consumer, now time.Time) (delivery.Consumer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{c.AgentID, c.Name}
	stored, ok := f.consumers[k]
	if !ok {
		return c, delivery.ErrNotFound
	}
	head := int64(len(f.events[c.AgentID]))
	if c.Version != stored.Version {
		return c, delivery.ErrConflict
	}
	if c.AckedSeq > head || c.SentSeq > head || c.AckedSeq < 0 {
		return c, delivery.ErrInvalidSeq
	}
	c.AckedSeq = max(c.AckedSeq, stored.AckedSeq)
	c.SentSeq = max(c.SentSeq, c.AckedSeq)
	c.Version, c.UpdatedAt, c.CreatedAt = stored.Version+1, now, stored.CreatedAt
	f.consumers[k] = c
	return c, nil
}

func (f *fakeStore) RewindConsumer(_ context.Context, agentID, name string, seq int64, now time.Time) (delivery.Consumer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{agentID, name}
	c, ok := f.consumers[k]
	if !ok {
		return c, delivery.ErrNotFound
	}
	c.AckedSeq, c.SentSeq, c.Version, c.UpdatedAt = seq, seq, c.Version+1, now
	f.consumers[k] = c
	return c, nil
}

func (f *fakeStore) RecordTokens(_ context.Context, tokens []delivery.TokenRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordCalls++
	for _, t := range tokens {
		f.tokens[t.RunID] = t
	}
	return nil
}

func (f *fakeStore) NewestToken(_ context.Context, runID string) (delivery.TokenRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tokens[runID]
	if !ok {
		return t, delivery.ErrNotFound
	}
	return t, nil
}

func (f *fakeStore) ConsumeToken(_ context.Context, jti string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.used[jti]; ok {
		return delivery.ErrExists
	}
	f.used[jti] = until
	return nil
}

func (f *fakeStore) CreateAPIToken(_ context.Context, t delivery.APIToken) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apiTokens[string(t.Hash)] = t
	return nil
}

func (f *fakeStore) FindAPIToken(_ context.Context, hash []byte) (delivery.APIToken, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.apiTokens[string(hash)]
	if !ok {
		return t, delivery.ErrNotFound
	}
	return t, nil
}

func (f *fakeStore) RevokeAPIToken(_ context.Context, agentID, id string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for h, t := range f.apiTokens {
		if t.AgentID == agentID && t.ID == id {
			t.RevokedAt = now
			f.apiTokens[h] = t
			return nil
		}
	}
	return delivery.ErrNotFound
}

func (f *fakeStore) BeginRequest(_ context.Context, r delivery.IdempotentRequest) (delivery.IdempotentRequest, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{r.Scope, r.Key}
	if have, ok := f.requests[k]; ok {
		return have, false, nil
	}
	r.Done, r.Status, r.Body = false, 0, nil
	f.requests[k] = r
	return r, true, nil
}

func (f *fakeStore) FinishRequest(_ context.Context, r delivery.IdempotentRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{r.Scope, r.Key}
	have, ok := f.requests[k]
	if !ok || !bytes.Equal(have.RequestHash, r.RequestHash) {
		return delivery.ErrNotFound
	}
	r.Body = bytes.Clone(r.Body)
	f.requests[k] = r
	return nil
}

func (f *fakeStore) ForgetRequest(_ context.Context, scope, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.requests, [2]string{scope, key})
	return nil
}

func (f *fakeStore) PruneRequests(_ context.Context, cutoff time.Time) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for k, r := range f.requests {
		if r.CreatedAt.Before(cutoff) {
			delete(f.requests, k)
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) CreateMessage(_ context.Context, m delivery.StoredMessage) (delivery.StoredMessage, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, have := range f.messages {
		if have.AgentID == m.AgentID && have.ClientMsgID == m.ClientMsgID {
			return have, false, nil
		}
	}
	f.messages = append(f.messages, m)
	return m, true, nil
}

func (f *fakeStore) ThreadMessages(_ context.Context, tenantID, threadID string, limit int) ([]delivery.StoredMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []delivery.StoredMessage
	for _, m := range f.messages {
		if m.TenantID == tenantID && m.ThreadID == threadID {
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}
