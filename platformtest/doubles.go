package platformtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// Fingerprint names a token in test output without showing it: the
// first 12 hex digits of its SHA-256.
func Fingerprint(token string) string {
	if token == "" {
		return "none"
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}

// TamperingSource passes a source's events on after Tamper changed them
// (a test forges, swaps or drops tokens with it).
type TamperingSource struct {
	adapter.Source
	// Tamper may change each event; nil passes them as they are.
	Tamper func(ev *delivery.Event)
}

// Receive implements adapter.Source.
func (s *TamperingSource) Receive(ctx context.Context) ([]delivery.Event, error) {
	evs, err := s.Source.Receive(ctx)
	if s.Tamper != nil {
		for i := range evs {
			s.Tamper(&evs[i])
		}
	}
	return evs, err
}

// RecordingSource records what passes through a source: every event
// delivered (with its token's fingerprint) and every acknowledgement.
type RecordingSource struct {
	adapter.Source

	mu     sync.Mutex
	events []Received
	acks   []int64
	calls  int // Receive calls begun
	done   int // and returned
}

// Received is one delivered event as a RecordingSource saw it.
type Received struct {
	Event delivery.Event
	// Token is the fingerprint of the event's token.
	Token string
}

// Receive implements adapter.Source.
func (s *RecordingSource) Receive(ctx context.Context) ([]delivery.Event, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	evs, err := s.Source.Receive(ctx)
	s.mu.Lock()
	s.done++
	for _, ev := range evs {
		s.events = append(s.events, Received{Event: ev, Token: Fingerprint(ev.InvocationToken)})
	}
	s.mu.Unlock()
	return evs, err
}

// Ack implements adapter.Source.
func (s *RecordingSource) Ack(ctx context.Context, seq int64) error {
	err := s.Source.Ack(ctx, seq)
	if err == nil {
		s.mu.Lock()
		s.acks = append(s.acks, seq)
		s.mu.Unlock()
	}
	return err
}

// Events returns the events received so far.
func (s *RecordingSource) Events() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.events...)
}

// Idle reports whether the adapter waits in Receive for its next
// events: it handled every event it received before, and acknowledged
// them as far as it does.
func (s *RecordingSource) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls > s.done
}

// Acks returns the acknowledged sequences so far.
func (s *RecordingSource) Acks() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.acks...)
}

// RecordingHandler is an adapter.Handler that records what it is asked
// and does what the test says: it counts prepares and executes, can hold
// a prepare until released, and reports the billing and tool class it
// is told to.
type RecordingHandler struct {
	// Billing and ToolClass are what the agent says it uses (platform
	// and chat when empty).
	Billing   delivery.BillingMode
	ToolClass delivery.ToolClass
	// HoldPrepare, when set, makes Prepare wait until it is closed.
	HoldPrepare chan struct{}
	// Work, when set, is the run's work; nil completes the run at once.
	Work func(ctx context.Context, run *adapter.Run) error

	mu       sync.Mutex
	prepares []string // run ids
	executes []string
	tokens   []string // fingerprints of the token each Execute's run had
	changed  chan struct{}
}

func (h *RecordingHandler) note(f func()) {
	h.mu.Lock()
	f()
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// Actual implements adapter.BillingReporter.
func (h *RecordingHandler) Actual(context.Context, *adapter.Invocation) (delivery.BillingMode, delivery.ToolClass) {
	b, c := h.Billing, h.ToolClass
	if b == "" {
		b = delivery.BillingPlatform
	}
	if c == "" {
		c = delivery.ToolChat
	}
	return b, c
}

// Prepare implements adapter.Handler.
func (h *RecordingHandler) Prepare(ctx context.Context, inv *adapter.Invocation) error {
	h.note(func() { h.prepares = append(h.prepares, inv.RunID) })
	if h.HoldPrepare != nil {
		select {
		case <-h.HoldPrepare:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Execute implements adapter.Handler.
func (h *RecordingHandler) Execute(ctx context.Context, run *adapter.Run) error {
	h.note(func() {
		h.executes = append(h.executes, run.ID)
		h.tokens = append(h.tokens, run.TokenJTI())
	})
	if h.Work != nil {
		return h.Work(ctx, run)
	}
	return nil
}

// Prepares returns the run ids Prepare was called for, in order.
func (h *RecordingHandler) Prepares() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.prepares...)
}

// Executes returns the run ids Execute was called for, in order.
func (h *RecordingHandler) Executes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.executes...)
}

// ExecuteJTIs returns the id of the newest token each Execute's run had.
func (h *RecordingHandler) ExecuteJTIs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.tokens...)
}

// Wait waits until cond holds of the handler, or ctx ends.
func (h *RecordingHandler) Wait(ctx context.Context, cond func(h *RecordingHandler) bool) error {
	for {
		h.mu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		if cond(h) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var (
	_ adapter.Handler         = (*RecordingHandler)(nil)
	_ adapter.BillingReporter = (*RecordingHandler)(nil)
)
