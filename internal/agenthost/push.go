package agenthost

import (
	"context"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/instrument"
)

// Push-notification delivery: the database's outbox (filled by every task
// write, in its transaction) drained by one a2apush.Deliverer per server.
// Replicas on one PostgreSQL database each run one; a claim leases a
// config's stream, so they share the work. A task write through a hosted
// agent wakes this server's deliverer at once; another replica's writes
// are found at its next poll.

// newPushDelivery makes the deliverer when there is an outbox; cards
// advertise push notifications exactly then. Run runs it.
func (h *Host) newPushDelivery(seal *pushSealer) error {
	outbox := h.stores.PushOutbox
	if outbox == nil || h.stores.PushConfigs == nil {
		return nil
	}
	o := h.opts.PushDelivery
	o.Policy = h.pushURLPolicy()
	o.Signer, o.Issuer = nil, ""
	if t := h.deps.Tokens; t != nil {
		o.Signer, o.Issuer = t, t.IssuerURL()
	}
	o.Open = nil
	if seal != nil {
		o.Open = func(_ context.Context, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error) {
			return seal.openConfig(scope, cfg.TaskID, cfg.ID, cfg, true)
		}
	}
	o.Logger = h.log.With("service", "push")
	o.TracerProvider = h.tracing()
	d, err := a2apush.New(outbox, &o)
	if err != nil {
		return fmt.Errorf("agenthost: push delivery: %w", err)
	}
	instrument.Register(h.deps.Metrics, d.Collector(), h.log)
	h.pusher = d
	return nil
}

// wakePush has the deliverer look at the outbox now.
func (h *Host) wakePush() {
	if h.pusher != nil {
		h.pusher.Wake()
	}
}

// PushDeliveryState implements a2asrv.PushDeliveryStore over the
// partitioned scope, when the store keeps delivery state.
func (p agentPushConfigs) PushDeliveryState(ctx context.Context, s a2asrv.Scope, taskID, id string) (*a2asrv.PushDeliveryState, error) {
	ds, ok := p.store.(a2asrv.PushDeliveryStore)
	if !ok {
		return nil, fmt.Errorf("agenthost: push delivery state %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	}
	return ds.PushDeliveryState(ctx, agentScope(p.agent, s), taskID, id)
}

var _ a2asrv.PushDeliveryStore = agentPushConfigs{}
