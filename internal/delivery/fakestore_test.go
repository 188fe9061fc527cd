package delivery

import (
	"context"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// fakeStore is the memory store with what this package's tests look at:
// the idempotency records kept, how often tokens were recorded, a
// HeadSeq that can be made to fail, and a signal when the first watcher
// registers.
type fakeStore struct {
	*delivery.MemStore

	mu sync.Mutex
	// requests mirrors the idempotency records the store keeps.
	requests map[[2]string]delivery.IdempotentRequest
	// recordCalls counts RecordTokens calls, for the one-write-per-page
	// rule; proofCalls RecordProof calls.
	recordCalls int
	proofCalls  int
	// proofsPruned counts the proof ids PruneProofs dropped; prunedProofs
	// is signalled after each call.
	proofsPruned int64
	prunedProofs chan struct{}
	// failHead, when set, is HeadSeq's error.
	failHead error
	// watched is closed when the first watcher is registered.
	watched     chan struct{}
	watchedOnce sync.Once
}

var _ delivery.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{MemStore: delivery.NewMemStore(), requests: map[[2]string]delivery.IdempotentRequest{},
		watched: make(chan struct{}), prunedProofs: make(chan struct{}, 1)}
}

func (f *fakeStore) RecordTokens(ctx context.Context, tokens []delivery.TokenRecord) error {
	f.mu.Lock()
	f.recordCalls++
	f.mu.Unlock()
	return f.MemStore.RecordTokens(ctx, tokens)
}

func (f *fakeStore) RecordProof(ctx context.Context, id []byte, now, until time.Time) (bool, error) {
	f.mu.Lock()
	f.proofCalls++
	f.mu.Unlock()
	return f.MemStore.RecordProof(ctx, id, now, until)
}

func (f *fakeStore) PruneProofs(ctx context.Context, now time.Time, limit int) (int64, error) {
	n, err := f.MemStore.PruneProofs(ctx, now, limit)
	f.mu.Lock()
	f.proofsPruned += n
	f.mu.Unlock()
	select {
	case f.prunedProofs <- struct{}{}:
	default:
	}
	return n, err
}

func (f *fakeStore) pruned() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.proofsPruned
}

func (f *fakeStore) proofWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.proofCalls
}

func (f *fakeStore) HeadSeq(ctx context.Context, agentID string) (int64, error) {
	f.mu.Lock()
	err := f.failHead
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return f.MemStore.HeadSeq(ctx, agentID)
}

func (f *fakeStore) WatchEvents(ctx context.Context, fn func(string, int64)) error {
	err := f.MemStore.WatchEvents(ctx, fn)
	// Closed once the watcher is registered, not before: a test waiting
	// on it may append at once.
	f.watchedOnce.Do(func() { close(f.watched) })
	return err
}

func (f *fakeStore) BeginRequest(ctx context.Context, r delivery.IdempotentRequest) (delivery.IdempotentRequest, bool, error) {
	stored, fresh, err := f.MemStore.BeginRequest(ctx, r)
	if err == nil {
		f.mu.Lock()
		f.requests[[2]string{stored.Scope, stored.Key}] = stored
		f.mu.Unlock()
	}
	return stored, fresh, err
}

func (f *fakeStore) FinishRequest(ctx context.Context, r delivery.IdempotentRequest) error {
	err := f.MemStore.FinishRequest(ctx, r)
	if err == nil {
		f.mu.Lock()
		f.requests[[2]string{r.Scope, r.Key}] = r
		f.mu.Unlock()
	}
	return err
}

func (f *fakeStore) ForgetRequest(ctx context.Context, scope, key string) error {
	err := f.MemStore.ForgetRequest(ctx, scope, key)
	if err == nil {
		f.mu.Lock()
		delete(f.requests, [2]string{scope, key})
		f.mu.Unlock()
	}
	return err
}
