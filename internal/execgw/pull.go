package execgw

import (
	"context"
	"time"

	"novaos.dev/novaos/gateway"
)

// Puller delivers the runs of pull instances, whose agents connect out
// and pull their invocations (the platform's pull delivery service).
type Puller interface {
	// Offer stores the run's current turn for its agent to pull: the
	// invocation of a new run, the follow-up of an answered one. Offering
	// one turn again stores nothing new.
	Offer(ctx context.Context, run gateway.Run, inst gateway.Instance) error
	// Cancelled tells the run's agent that the run was cancelled.
	Cancelled(ctx context.Context, run gateway.Run) error
}

// A run offered to its agent is leased to pullOwner until parkedUntil:
// no dispatcher claims it again. The agent moves it on; an answer to it
// queues it afresh (its lease cleared), and the next turn is offered.
const pullOwner = "pull"

var parkedUntil = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// pullState marks a new run of inst as pulled.
func pullState(inst *gateway.Instance) *gateway.PullState {
	if !inst.Pulls() {
		return nil
	}
	return &gateway.PullState{}
}

// offer hands a claimed run of a pull instance to the pull delivery
// service and parks it. A failed offer leaves the run to be claimed
// again after a backoff, counting the attempt.
func (d *dispatcher) offer(ctx context.Context, claimed *gateway.Run) {
	s := d.s
	log := s.log.With("run_id", claimed.ID, "tenant_id", claimed.TenantID, "instance_id", claimed.InstanceID)
	inst, err := s.store.GetInstance(ctx, claimed.TenantID, claimed.InstanceID)
	if err == nil && s.deps.Pull == nil {
		err = permanentf("this server delivers no pull runs")
	} else if isNotFound(err) {
		err = permanentf("the instance %s was removed", claimed.InstanceID)
	}
	if err == nil {
		err = s.deps.Pull.Offer(ctx, *claimed, inst)
	}
	_, _, werr := s.mutate(ctx, claimed, claimed.ID, func(r *gateway.Run) ([]gateway.Event, error) {
		if r.LeaseOwner != s.owner || r.Status.Terminal() {
			return nil, errStop
		}
		now := s.o.Now()
		if p, ok := err.(*permanent); ok {
			return end(r, gateway.StatusFailed, p.reason, now), nil
		}
		if err != nil {
			r.Attempt++
			if r.Attempt >= s.o.MaxAttempts {
				return end(r, gateway.StatusFailed, "the run could not be offered to its agent: "+describe(err), now), nil
			}
			r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, now.Add(s.o.RetryBackoff<<(r.Attempt-1))
			return nil, nil
		}
		if r.Pull == nil {
			r.Pull = &gateway.PullState{}
		}
		r.Pull.OfferedTurn = r.Turn
		r.Attempt = 0
		r.LeaseOwner, r.LeaseUntil, r.NotBefore = pullOwner, parkedUntil, time.Time{}
		return []gateway.Event{statusEvent(r.Status, "waiting for its agent to pull it")}, nil
	})
	if err != nil || werr != nil {
		log.Warn("gateway: offering a pull run failed", "err", err, "write_err", werr)
	}
}

// cancelled tells a pulled run's agent that the run was cancelled, best
// effort: an agent that misses it learns at its next call for the run.
func (s *Service) cancelled(ctx context.Context, run *gateway.Run) {
	if run.Pull == nil || s.deps.Pull == nil {
		return
	}
	if err := s.deps.Pull.Cancelled(ctx, *run); err != nil {
		s.log.Warn("gateway: telling a pull agent of a cancel failed", "run_id", run.ID, "err", err)
	}
}
