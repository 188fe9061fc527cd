package app

import (
	"context"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
)

// Push-notification delivery: the database's outbox (filled by every task
// write, in its transaction) drained by one a2apush.Deliverer per server.
// Replicas on one PostgreSQL database each run one; a claim leases a
// config's stream, so they share the work. A task write through a hosted
// agent wakes this server's deliverer at once; another replica's writes
// are found at its next poll.

// pushOutbox is the outbox of the stores in use: the database's, or the
// caller's Options.PushOutbox.
func (s *Server) pushOutbox() a2asrv.PushOutbox {
	switch {
	case s.push == nil:
		return nil
	case s.db != nil:
		return s.db.PushOutbox()
	}
	return s.opts.PushOutbox
}

// startPushDelivery starts the deliverer when there is an outbox; cards
// advertise push notifications exactly then. It runs under s.mu at Start,
// after the issuer is open.
func (s *Server) startPushDelivery(seal *pushSealer) error {
	outbox := s.pushOutbox()
	if outbox == nil {
		return nil
	}
	o := s.opts.PushDelivery
	o.Policy = s.pushURLPolicy()
	o.Signer, o.Issuer = s.issuer, s.issuer.IssuerURL()
	o.Open = nil
	if seal != nil {
		o.Open = func(_ context.Context, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error) {
			return seal.openConfig(scope, cfg.TaskID, cfg.ID, cfg, true)
		}
	}
	o.Logger = s.log.With("service", "push")
	d, err := a2apush.New(outbox, &o)
	if err != nil {
		return fmt.Errorf("app: push delivery: %w", err)
	}
	s.pusher = d
	s.startWorker(func(ctx context.Context) { d.Run(ctx) })
	return nil
}

// wakePush has the deliverer look at the outbox now.
func (s *Server) wakePush() {
	if s.pusher != nil {
		s.pusher.Wake()
	}
}

// PushDeliveryState implements a2asrv.PushDeliveryStore over the
// partitioned scope, when the store keeps delivery state.
func (p agentPushConfigs) PushDeliveryState(ctx context.Context, s a2asrv.Scope, taskID, id string) (*a2asrv.PushDeliveryState, error) {
	ds, ok := p.store.(a2asrv.PushDeliveryStore)
	if !ok {
		return nil, fmt.Errorf("app: push delivery state %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	}
	return ds.PushDeliveryState(ctx, agentScope(p.agent, s), taskID, id)
}

var _ a2asrv.PushDeliveryStore = agentPushConfigs{}
