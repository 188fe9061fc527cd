package delivery

import (
	"context"

	"novaos.dev/novaos/delivery"
)

// Rewind sets an agent's consumer back to seq, as an operator replaying
// its events (or a platform restored from a backup) would: the events
// after seq go to it again, each with a fresh token, and the agent's
// waiting polls and sessions are woken to send them.
func (s *Service) Rewind(ctx context.Context, agentID, consumer string, seq int64) (delivery.ConsumerState, error) {
	c, err := s.store.RewindConsumer(ctx, agentID, consumer, seq, s.o.Now())
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	s.watch.notify(agentID)
	head, err := s.store.HeadSeq(ctx, agentID)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	return delivery.ConsumerState{Consumer: c.Name, AckedSeq: c.AckedSeq, HeadSeq: head, UpdatedAt: c.UpdatedAt}, nil
}

// WakeAll wakes every waiting poll and session of every agent, to look
// at the clock again: a test that moved the service's clock on calls it,
// so that events fallen due by the new time go out without waiting for
// a real timer.
func (s *Service) WakeAll() { s.watch.notify("") }
