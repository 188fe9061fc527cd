package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemStore is a [Store] in process memory, for tests and for a server
// without a database. It keeps what the SQL stores keep, the way they keep
// it: every time to the microsecond in UTC, payloads, hashes, bodies and
// components byte for byte (empty ones nil); what it returns is the
// caller's to change.
//
// WatchEvents reports every append, as all of them are this process's:
// fn is called after each AppendEvents that stored new events, once per
// agent, when the events are in the store and before AppendEvents
// returns. Concurrent appends may be reported out of order; head is how
// far the agent's events reached at least.
type MemStore struct {
	mu        sync.RWMutex
	agents    map[string]*memAgent            // by agent id
	consumers map[[2]string]Consumer          // by agent, name
	tokens    map[string]TokenRecord          // by run id
	used      map[string]time.Time            // consumed token ids, until when
	proofs    map[string]time.Time            // proof ids, until when
	apiTokens map[string]APIToken             // by id
	hashes    map[string]string               // API token hash → id
	requests  map[[2]string]IdempotentRequest // by scope, key
	messages  map[string]StoredMessage        // by id
	clientIDs map[[2]string]string            // agent, client message id → id
	threads   map[[2]string][]string          // tenant, thread → ids, in stored order

	wmu      sync.Mutex
	watchers map[*memWatcher]struct{}
}

var _ Store = (*MemStore)(nil)

// memAgent is an agent's stream: event i has sequence i+1.
type memAgent struct {
	events []StoredEvent
	dedupe map[string]int // DedupeKey → index in events
}

type memWatcher struct {
	ctx context.Context
	fn  func(agentID string, head int64)
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{
		agents:    map[string]*memAgent{},
		consumers: map[[2]string]Consumer{},
		tokens:    map[string]TokenRecord{},
		used:      map[string]time.Time{},
		proofs:    map[string]time.Time{},
		apiTokens: map[string]APIToken{},
		hashes:    map[string]string{},
		requests:  map[[2]string]IdempotentRequest{},
		messages:  map[string]StoredMessage{},
		clientIDs: map[[2]string]string{},
		threads:   map[[2]string][]string{},
		watchers:  map[*memWatcher]struct{}{},
	}
}

func (s *MemStore) AppendEvents(_ context.Context, events []StoredEvent) ([]StoredEvent, error) {
	evs, err := PrepareEvents(events, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("delivery: append events: %w", err)
	}
	out := make([]StoredEvent, len(evs))
	heads := map[string]int64{}
	s.mu.Lock()
	for i, e := range evs {
		a := s.agents[e.AgentID]
		if a == nil {
			a = &memAgent{dedupe: map[string]int{}}
			s.agents[e.AgentID] = a
		}
		if e.DedupeKey != "" {
			if j, ok := a.dedupe[e.DedupeKey]; ok {
				out[i] = storeEventCopy(a.events[j])
				continue
			}
			a.dedupe[e.DedupeKey] = len(a.events)
		}
		e.Seq = int64(len(a.events)) + 1
		a.events = append(a.events, e)
		heads[e.AgentID] = e.Seq
		out[i] = storeEventCopy(e)
	}
	s.mu.Unlock()
	s.announce(heads)
	return out, nil
}

// announce tells the watchers of the agents' new heads, in the order of
// the agents' ids.
func (s *MemStore) announce(heads map[string]int64) {
	if len(heads) == 0 {
		return
	}
	s.wmu.Lock()
	ws := make([]*memWatcher, 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	s.wmu.Unlock()
	agents := make([]string, 0, len(heads))
	for a := range heads {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		for _, w := range ws {
			if w.ctx.Err() == nil {
				w.fn(a, heads[a])
			}
		}
	}
}

func (s *MemStore) ReadEvents(_ context.Context, agentID string, after int64, limit int) ([]StoredEvent, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var evs []StoredEvent
	if a := s.agents[agentID]; a != nil {
		evs = a.events
	}
	from := int64(len(evs))
	if after < from {
		from = max(after, 0)
	}
	page := evs[from:min(int64(len(evs)), from+int64(storePageLimit(limit)))]
	out := make([]StoredEvent, len(page))
	for i, e := range page {
		out[i] = storeEventCopy(e)
	}
	return out, nil
}

// head is the agent's newest sequence; mu is held.
func (s *MemStore) head(agentID string) int64 {
	if a := s.agents[agentID]; a != nil {
		return int64(len(a.events))
	}
	return 0
}

func (s *MemStore) HeadSeq(_ context.Context, agentID string) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.head(agentID), nil
}

// WatchEvents registers fn and returns at once; fn is called after every
// later append of this store, until ctx ends.
func (s *MemStore) WatchEvents(ctx context.Context, fn func(agentID string, head int64)) error {
	if fn == nil {
		return errors.New("delivery: watch events: fn is nil")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delivery: watch events: %w", err)
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

func (s *MemStore) OpenConsumer(_ context.Context, agentID, name string, now time.Time) (Consumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{agentID, name}
	if c, ok := s.consumers[key]; ok {
		return c, nil
	}
	c, err := NewConsumer(agentID, name, s.head(agentID), now)
	if err != nil {
		return Consumer{}, fmt.Errorf("delivery: open consumer %q: %w", name, err)
	}
	s.consumers[key] = c
	return c, nil
}

func (s *MemStore) GetConsumer(_ context.Context, agentID, name string) (Consumer, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.consumers[[2]string{agentID, name}]
	if !ok {
		return Consumer{}, fmt.Errorf("delivery: get consumer %q: %w", name, ErrNotFound)
	}
	return c, nil
}

func (s *MemStore) UpdateConsumer(_ context.Context, c Consumer, now time.Time) (Consumer, error) {
	return s.changeConsumer("update", c.AgentID, c.Name, func(stored Consumer, head int64) (Consumer, error) {
		return UpdatedConsumer(stored, c, head, now)
	})
}

func (s *MemStore) RewindConsumer(_ context.Context, agentID, name string, seq int64, now time.Time) (Consumer, error) {
	return s.changeConsumer("rewind", agentID, name, func(stored Consumer, head int64) (Consumer, error) {
		return RewoundConsumer(stored, seq, head, now)
	})
}

// changeConsumer replaces a stored consumer by what change makes of it.
func (s *MemStore) changeConsumer(what, agentID, name string, change func(stored Consumer, head int64) (Consumer, error)) (Consumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{agentID, name}
	stored, ok := s.consumers[key]
	if !ok {
		return Consumer{}, fmt.Errorf("delivery: %s consumer %q: %w", what, name, ErrNotFound)
	}
	next, err := change(stored, s.head(agentID))
	if err != nil {
		return Consumer{}, fmt.Errorf("delivery: %s consumer %q: %w", what, name, err)
	}
	s.consumers[key] = next
	return next, nil
}

func (s *MemStore) RecordTokens(_ context.Context, tokens []TokenRecord) error {
	recs, err := PrepareTokens(tokens)
	if err != nil {
		return fmt.Errorf("delivery: record tokens: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.tokens[r.RunID] = r
	}
	return nil
}

func (s *MemStore) NewestToken(_ context.Context, runID string) (TokenRecord, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.tokens[runID]
	if !ok {
		return TokenRecord{}, fmt.Errorf("delivery: newest token of run %s: %w", runID, ErrNotFound)
	}
	return r, nil
}

func (s *MemStore) ConsumeToken(_ context.Context, jti string, until time.Time) error {
	if jti == "" {
		return errors.New("delivery: consume token: no token id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.used[jti]; ok {
		return fmt.Errorf("delivery: consume token: %w", ErrExists)
	}
	s.used[jti] = storeTime(until)
	return nil
}

func (s *MemStore) PruneUsedTokens(_ context.Context, now time.Time, limit int) (int64, error) {
	return s.pruneKept(s.used, now, limit, MaxUsedTokenPrune), nil
}

// pruneKept drops up to limit (most when limit is not in (0, most]) ids
// of kept whose time is no later than now, and counts them.
func (s *MemStore) pruneKept(kept map[string]time.Time, now time.Time, limit, most int) int64 {
	now = storeTime(now)
	if limit <= 0 || limit > most {
		limit = most
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id, until := range kept {
		if n == int64(limit) {
			break
		}
		if !until.After(now) {
			delete(kept, id)
			n++
		}
	}
	return n
}

func (s *MemStore) RecordProof(_ context.Context, id []byte, now, until time.Time) (bool, error) {
	if err := CheckProofID(id); err != nil {
		return false, fmt.Errorf("delivery: record proof: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.proofs[string(id)]; ok && kept.After(storeTime(now)) {
		return false, nil
	}
	s.proofs[string(id)] = storeTime(until)
	return true, nil
}

func (s *MemStore) PruneProofs(_ context.Context, now time.Time, limit int) (int64, error) {
	return s.pruneKept(s.proofs, now, limit, MaxProofPrune), nil
}

func (s *MemStore) CreateAPIToken(_ context.Context, t APIToken) error {
	if err := PrepareAPIToken(&t, time.Time{}); err != nil {
		return fmt.Errorf("delivery: create API token: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.apiTokens[t.ID]; ok {
		return fmt.Errorf("delivery: create API token %s: %w", t.ID, ErrExists)
	}
	if _, ok := s.hashes[string(t.Hash)]; ok {
		return fmt.Errorf("delivery: create API token %s: its hash: %w", t.ID, ErrExists)
	}
	s.apiTokens[t.ID], s.hashes[string(t.Hash)] = t, t.ID
	return nil
}

func (s *MemStore) FindAPIToken(_ context.Context, hash []byte) (APIToken, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.hashes[string(hash)]
	if !ok || len(hash) == 0 {
		return APIToken{}, fmt.Errorf("delivery: find API token: %w", ErrNotFound)
	}
	return storeTokenCopy(s.apiTokens[id]), nil
}

func (s *MemStore) RevokeAPIToken(_ context.Context, agentID, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.apiTokens[id]
	if !ok || t.AgentID != agentID {
		return fmt.Errorf("delivery: revoke API token %s: %w", id, ErrNotFound)
	}
	if t.RevokedAt.IsZero() {
		t.RevokedAt = storeNow(now)
		s.apiTokens[id] = t
	}
	return nil
}

func (s *MemStore) BeginRequest(_ context.Context, r IdempotentRequest) (IdempotentRequest, bool, error) {
	if err := PrepareRequest(&r, time.Time{}); err != nil {
		return IdempotentRequest{}, false, fmt.Errorf("delivery: begin request: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{r.Scope, r.Key}
	if stored, ok := s.requests[key]; ok {
		return storeRequestCopy(stored), false, nil
	}
	s.requests[key] = r
	return storeRequestCopy(r), true, nil
}

func (s *MemStore) FinishRequest(_ context.Context, r IdempotentRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{r.Scope, r.Key}
	stored, ok := s.requests[key]
	if !ok {
		return fmt.Errorf("delivery: finish request: %w", ErrNotFound)
	}
	stored.Done, stored.Status, stored.Body = true, r.Status, storeBytes(r.Body)
	s.requests[key] = stored
	return nil
}

func (s *MemStore) ForgetRequest(_ context.Context, scope, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, [2]string{scope, key})
	return nil
}

func (s *MemStore) PruneRequests(_ context.Context, cutoff time.Time) (int64, error) {
	cutoff = storeTime(cutoff)
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k, r := range s.requests {
		if r.CreatedAt.Before(cutoff) {
			delete(s.requests, k)
			n++
		}
	}
	return n, nil
}

func (s *MemStore) CreateMessage(_ context.Context, m StoredMessage) (StoredMessage, bool, error) {
	if err := PrepareMessage(&m, time.Time{}); err != nil {
		return StoredMessage{}, false, fmt.Errorf("delivery: create message: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	client := [2]string{m.AgentID, m.ClientMsgID}
	if id, ok := s.clientIDs[client]; ok {
		return storeMessageCopy(s.messages[id]), false, nil
	}
	if _, ok := s.messages[m.ID]; ok {
		return StoredMessage{}, false, fmt.Errorf("delivery: create message %s: %w", m.ID, ErrExists)
	}
	thread := [2]string{m.TenantID, m.ThreadID}
	s.messages[m.ID], s.clientIDs[client] = m, m.ID
	s.threads[thread] = append(s.threads[thread], m.ID)
	return storeMessageCopy(m), true, nil
}

func (s *MemStore) ThreadMessages(_ context.Context, tenantID, threadID string, limit int) ([]StoredMessage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := s.threads[[2]string{tenantID, threadID}]
	ids = ids[max(0, len(ids)-storePageLimit(limit)):]
	out := make([]StoredMessage, len(ids))
	for i, id := range ids {
		out[i] = storeMessageCopy(s.messages[id])
	}
	return out, nil
}

// String names the store without its contents: %v of a MemStore never
// prints a hash, a request body or a message.
func (s *MemStore) String() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fmt.Sprintf("delivery.MemStore{%d agents, %d consumers}", len(s.agents), len(s.consumers))
}

// GoString is String.
func (s *MemStore) GoString() string { return s.String() }
