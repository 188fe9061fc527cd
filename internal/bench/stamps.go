package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// DeliveryStamps is a platform's delivery.Store that times one
// consumer's events at the store, where the platform keeps them: from
// when an event of the agent was stored (its append committed) to when
// the consumer's acknowledgement covering it was stored (the consumer's
// AckedSeq passed it). Give it to the platform as its delivery store and
// call Track before the events are offered; every other call passes
// through. It is safe for concurrent use.
type DeliveryStamps struct {
	delivery.Store

	epoch time.Time // stamps are monotonic durations since it

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when acked moves
	agentID   string
	consumer  string
	first     int64   // seq of stamps[0]
	stamps    []int64 // when seqs first, first+1, … were stored
	head      int64   // the highest seq stamped
	acked     int64   // the consumer's highest stored acknowledgement
	ackedN    uint64  // events acknowledged since Track
	hist      Histogram
	unstamped uint64
}

var _ delivery.Store = (*DeliveryStamps)(nil)

// NewDeliveryStamps wraps st.
func NewDeliveryStamps(st delivery.Store) *DeliveryStamps {
	return &DeliveryStamps{Store: st, epoch: time.Now(), changed: make(chan struct{})}
}

// Track starts timing the events of agentID's consumer stored from now
// on; what came before counts as acknowledged. It forgets what an
// earlier Track timed.
func (s *DeliveryStamps) Track(ctx context.Context, agentID, consumer string) error {
	head, err := s.Store.HeadSeq(ctx, agentID)
	if err != nil {
		return fmt.Errorf("bench: stamps: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agentID, s.consumer = agentID, consumer
	s.first, s.head, s.acked, s.stamps = head+1, head, head, nil
	s.ackedN, s.unstamped = 0, 0
	s.hist = Histogram{}
	return nil
}

// AppendEvents stores events and stamps the tracked agent's: every seq
// up to the highest it was given is committed by then, since the store
// numbers an agent's events in commit order.
func (s *DeliveryStamps) AppendEvents(ctx context.Context, events []delivery.StoredEvent) ([]delivery.StoredEvent, error) {
	out, err := s.Store.AppendEvents(ctx, events)
	if err != nil {
		return out, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range out {
		if e.AgentID == s.agentID {
			s.stampLocked(e.Seq)
		}
	}
	return out, nil
}

// WatchEvents passes the store's news on, stamping the tracked agent's
// new head first: a store tells of a commit before its append returns,
// and before the platform can send the events.
func (s *DeliveryStamps) WatchEvents(ctx context.Context, fn func(agentID string, head int64)) error {
	return s.Store.WatchEvents(ctx, func(agentID string, head int64) {
		s.mu.Lock()
		if agentID != "" && agentID == s.agentID {
			s.stampLocked(head)
		}
		s.mu.Unlock()
		fn(agentID, head)
	})
}

// UpdateConsumer stores a consumer's change and, when it moved the
// tracked consumer's acknowledgement on, times every event it covers.
func (s *DeliveryStamps) UpdateConsumer(ctx context.Context, c delivery.Consumer, now time.Time) (delivery.Consumer, error) {
	out, err := s.Store.UpdateConsumer(ctx, c, now)
	if err != nil {
		return out, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if out.AgentID != s.agentID || out.Name != s.consumer || out.AckedSeq <= s.acked {
		return out, nil
	}
	at := int64(time.Since(s.epoch))
	for seq := s.acked + 1; seq <= out.AckedSeq; seq++ {
		if i := seq - s.first; i >= 0 && i < int64(len(s.stamps)) {
			s.hist.Record(time.Duration(at - s.stamps[i]))
		} else {
			// Acknowledged before its append returned or its commit was
			// told: not timed, and counted so that a report shows it.
			s.unstamped++
		}
	}
	s.ackedN += uint64(out.AckedSeq - s.acked)
	s.acked = out.AckedSeq
	if drop := min(s.acked+1-s.first, int64(len(s.stamps))); drop > 0 {
		s.stamps = s.stamps[drop:]
		s.first += drop
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return out, nil
}

// stampLocked stamps every seq after the highest stamped up to seq.
func (s *DeliveryStamps) stampLocked(seq int64) {
	if seq <= s.head {
		return
	}
	at := int64(time.Since(s.epoch))
	for ; s.head < seq; s.head++ {
		if s.head+1 > s.acked {
			s.stamps = append(s.stamps, at)
		} else {
			s.first++ // acknowledged already: never timed
		}
	}
}

// Acked is the number of the tracked consumer's events acknowledged
// since Track, and a channel closed when it next moves.
func (s *DeliveryStamps) Acked() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ackedN, s.changed
}

// Take returns the time from store to acknowledgement of the events
// acknowledged since the last Take (or Track), and how many of those
// were acknowledged before their append was seen (not timed); it starts
// the next window.
func (s *DeliveryStamps) Take() (h Histogram, unstamped uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, unstamped = s.hist, s.unstamped
	s.hist, s.unstamped = Histogram{}, 0
	return h, unstamped
}

// WaitAcked waits until n of the tracked consumer's events were
// acknowledged since Track, or ctx ends.
func (s *DeliveryStamps) WaitAcked(ctx context.Context, n uint64) error {
	for {
		got, changed := s.Acked()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("bench: %d of %d events acknowledged: %w", got, n, ctx.Err())
		}
	}
}
