package execgw

import (
	"context"
	"errors"
	"time"

	pull "novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// Puller delivers the runs of pull instances, whose agents connect out
// and pull their invocations (the platform's pull delivery service).
type Puller interface {
	// Offer stores the run's current turn for its agent to pull: the
	// invocation of a new run, the follow-up of an answered one. Offering
	// one turn again stores nothing new.
	Offer(ctx context.Context, run gateway.Run, inst gateway.Instance) error
	// Cancelled tells the run's agent that the run was cancelled (or
	// ended for it: Run.Reason says why).
	Cancelled(ctx context.Context, run gateway.Run) error
	// StaleAfter is how long a started run's agent may go without a sign
	// of life of it (a heartbeat listing it, a call that writes it)
	// before the run is taken for abandoned. The Puller keeps the lease
	// of such a run (gateway.PullLeaseOwner) that far ahead of the last
	// sign; the dispatcher that claims it once it lapsed ends it.
	StaleAfter() time.Duration
}

// A run offered to its agent is leased to pullOwner until parkedUntil:
// no dispatcher claims it again. The agent moves it on: a start or a
// resume leases it to pullOwner until its last sign of life plus
// Puller.StaleAfter (then a lapse is an agent gone, see stale); an
// answer to it queues it afresh (its lease cleared), and the next turn
// is offered.
const pullOwner = gateway.PullLeaseOwner

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
		if err == nil && r.LeaseOwner == pullOwner && r.Status == gateway.StatusRunning && r.Pull != nil {
			// The agent pulled the turn and took the run up before this
			// write: the lease is its own now.
			r.Pull.OfferedTurn, r.Attempt = r.Turn, 0
			return nil, nil
		}
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
	if err != nil || werr != nil && !errors.Is(werr, errStop) {
		log.Warn("gateway: offering a pull run failed", "err", err, "write_err", werr)
	}
}

// lapsed reports whether a claimed pull run was started by its agent,
// for the turn it is on, and its lease lapsed: its agent gave no sign
// of life of it for Puller.StaleAfter.
func lapsed(claimed *gateway.Run) bool {
	return claimed.Pull != nil && claimed.Pull.Starts > 0 && claimed.Status == gateway.StatusRunning
}

// stale ends a claimed pull run whose agent stopped reporting it: FAILED
// with reason delivery.ReasonStale, never offered again (the agent may
// have done part of the work; only a person retries it). The agent is
// told as of a cancel, in case it is alive and only its reports were
// lost. A sign of life that came after the claim took the lease back
// (gateway.PullLeaseOwner): then the run is left to its agent.
func (d *dispatcher) stale(ctx context.Context, claimed *gateway.Run) {
	s := d.s
	window := s.deps.Pull.StaleAfter()
	why := "its agent stopped reporting the run: no heartbeat listed it and no call of it came for " + window.String()
	run, _, err := s.mutate(ctx, claimed, claimed.ID, func(r *gateway.Run) ([]gateway.Event, error) {
		if r.LeaseOwner != s.owner || r.Status != gateway.StatusRunning {
			return nil, errStop
		}
		return append([]gateway.Event{statusEvent(gateway.StatusRunning, why)}, end(r, gateway.StatusFailed, pull.ReasonStale, s.o.Now())...), nil
	})
	log := s.log.With("run_id", claimed.ID, "tenant_id", claimed.TenantID, "instance_id", claimed.InstanceID)
	if err != nil {
		if !errors.Is(err, errStop) {
			log.Warn("gateway: ending a stale pull run failed", "err", err)
		}
		return
	}
	log.Warn("gateway: pull run ended stale", "reason", pull.ReasonStale, "stale_after", window.String())
	s.cancelled(ctx, run)
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
