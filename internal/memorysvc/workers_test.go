package memorysvc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
)

// scriptedStore answers Sweep, PendingProposals and ClaimHints from
// scripts, one entry a call, and counts the calls; the rest is a real
// store.
type scriptedStore struct {
	memory.Store
	mu       sync.Mutex
	sweeps   []memory.Swept
	sweepErr error
	calls    map[string]int
}

func (s *scriptedStore) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
	return s.calls[name]
}

func (s *scriptedStore) Sweep(ctx context.Context, now time.Time, limit int) (memory.Swept, error) {
	n := s.count("sweep")
	if s.sweepErr != nil {
		return memory.Swept{}, s.sweepErr
	}
	if n > len(s.sweeps) {
		return memory.Swept{}, nil
	}
	return s.sweeps[n-1], nil
}

// TestSweepRunsUntilShort: the expiry sweep calls again while a call
// removed a full batch (1,000 rows of all kinds together), and stops after
// a short one or an error.
func TestSweepRunsUntilShort(t *testing.T) {
	full := memory.Swept{Memories: 200, Keys: 200, HintsExpired: 200, Hints: 200, Proposals: 200}
	tests := []struct {
		name   string
		sweeps []memory.Swept
		err    error
		calls  int
	}{
		{"nothing to sweep", nil, nil, 1},
		{"one full batch of every kind", []memory.Swept{full}, nil, 2},
		{"two full batches", []memory.Swept{full, {Memories: 1000}}, nil, 3},
		{"one short of full", []memory.Swept{{Memories: 999}}, nil, 1},
		{"a failing store", []memory.Swept{full}, errors.New("down"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &scriptedStore{Store: openStore(t), sweeps: tt.sweeps, sweepErr: tt.err, calls: map[string]int{}}
			New(st, nil).sweep(context.Background())
			if got := st.calls["sweep"]; got != tt.calls {
				t.Errorf("%d Sweep calls, want %d", got, tt.calls)
			}
		})
	}
}

func TestCmpScore(t *testing.T) {
	tests := []struct {
		a, b *float64
		want int
	}{
		{ptr(0.5), ptr(0.4), 1},
		{ptr(0.4), ptr(0.5), -1},
		{ptr(0.5), ptr(0.5), 0},
		{nil, ptr(0.0), -1},
		{ptr(0.0), nil, 1},
		{nil, nil, 0},
	}
	for _, tt := range tests {
		if got := cmpScore(tt.a, tt.b); got != tt.want {
			t.Errorf("cmpScore(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestStoreErr: the store's sentinels keep their meaning, a cancelled
// call stays a cancellation, and anything else is 503 without its cause.
func TestStoreErr(t *testing.T) {
	s, _ := newService(t, nil)
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", memory.ErrNotFound), http.StatusNotFound, memory.CodeNotFound},
		{fmt.Errorf("x: %w", memory.ErrConflict), http.StatusConflict, memory.CodeConflict},
		{fmt.Errorf("x: %w", memory.ErrKeyReused), http.StatusConflict, memory.CodeKeyReused},
		{errors.New("password=hunter22 in a driver message"), http.StatusServiceUnavailable, memory.CodeUnavailable},
	}
	for _, tt := range tests {
		err := s.storeErr("op", tt.err)
		e, ok := errors.AsType[*memory.Error](err)
		if !ok || e.Status != tt.status || e.Code != tt.code {
			t.Errorf("storeErr(%v) = %v; want %d %s", tt.err, err, tt.status, tt.code)
			continue
		}
		if e.Status == http.StatusServiceUnavailable && e.Message != "the memory store is unavailable; retry" {
			t.Errorf("storeErr(%v) says %q", tt.err, e.Message)
		}
	}
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		if err := s.storeErr("op", fmt.Errorf("x: %w", cause)); !errors.Is(err, cause) {
			t.Errorf("storeErr(%v) = %v; want the cancellation", cause, err)
		}
	}
}
