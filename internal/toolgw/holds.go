package toolgw

import (
	"context"
	"errors"
	"time"

	"novaos.dev/novaos/gate"
)

// Decided tells the gateway a gate decision was made, so runs waiting on
// held writes are checked at once rather than at the next tick.
func (s *Service) Decided() {
	select {
	case s.decided <- struct{}{}:
	default:
	}
}

// watchHolds answers the runs that wait on held writes once the gate
// decided them: an approval queues the run again with a token bound to
// the call, a denial (or an expired hold, or a kill) tells the agent
// no. Both records are durable, the run's pause and the gate's action, so
// whichever replica looks first answers, and a restart loses nothing.
func (s *Service) watchHolds(ctx context.Context) {
	if s.deps.Runs == nil || s.deps.Gate == nil {
		return
	}
	t := time.NewTicker(s.o.HoldCheckEvery)
	defer t.Stop()
	for {
		if err := s.checkHolds(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("toolgw: check held writes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.decided:
		}
	}
}

// checkHolds answers every waiting run whose held write was decided.
func (s *Service) checkHolds(ctx context.Context) error {
	after := ""
	for {
		list, next, err := s.deps.Runs.WaitingWrites(ctx, after, 200)
		if err != nil {
			return err
		}
		for _, w := range list {
			if err := s.answerHold(ctx, w); err != nil {
				s.log.Warn("toolgw: answer a run's held write", "run", w.RunID, "call", w.CallID, "err", err)
			}
		}
		if next == "" || next == after {
			return nil
		}
		after = next
	}
}

func (s *Service) answerHold(ctx context.Context, w WaitingWrite) error {
	session := sessionOf(&Caller{Run: w.RunID})
	rec, err := s.deps.Gate.Action(ctx, w.Tenant, session, w.CallID)
	if errors.Is(err, gate.ErrNotFound) {
		// A pause the agent made without the gateway: a person answers
		// it on the run.
		return nil
	}
	if err != nil {
		return err
	}
	var approved bool
	switch rec.State {
	case gate.ActionApproved, gate.ActionPassed:
		approved = true
	case gate.ActionKilled, gate.ActionDenied, gate.ActionExpired:
	default:
		return nil // still held, or being judged
	}
	actor := "gate"
	if rec.DecidedBy != "" {
		actor = rec.DecidedBy
	}
	return s.deps.Runs.AnswerWrite(ctx, w.Tenant, w.RunID, w.CallID, approved, actor)
}
