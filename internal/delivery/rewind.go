package delivery

import (
	"context"
	"errors"
	"net/http"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
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

func (s *Service) serveRewind(w http.ResponseWriter, r *http.Request) {
	st, err := s.rewind(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// rewind is Rewind for a tenant admin (or a platform token with
// ScopeTokens) of the agent's tenant.
func (s *Service) rewind(w http.ResponseWriter, r *http.Request) (delivery.ConsumerState, error) {
	tc, err := s.tenantAdmin(r)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	var in delivery.ConsumerRewind
	if err := s.decode(w, r, &in, false); err != nil {
		return delivery.ConsumerState{}, err
	}
	ctx := r.Context()
	agentID, name := r.PathValue("agent"), r.PathValue("consumer")
	if err := checkConsumer(name); err != nil {
		return delivery.ConsumerState{}, err
	}
	inst, err := s.runs.GetInstance(ctx, tc.Tenant, agentID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !inst.Pulls() {
		return delivery.ConsumerState{}, notFound("no pull instance " + bounded(agentID) + " in the tenant")
	}
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	st, err := s.Rewind(ctx, inst.ID, name, in.AckedSeq)
	switch {
	case errors.Is(err, delivery.ErrNotFound):
		return st, notFound("the agent has no consumer " + bounded(name))
	case errors.Is(err, delivery.ErrInvalidSeq):
		return st, validationFailed("acked_seq is 0 to the agent's newest event",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/acked_seq"})
	case err != nil:
		return st, err
	}
	s.log.InfoContext(ctx, "delivery: consumer rewound", "tenant_id", inst.TenantID, "agent_id", inst.ID,
		"consumer", name, "acked_seq", in.AckedSeq, "caller", tc.Subject)
	return st, nil
}
