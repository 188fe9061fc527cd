package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// Offer puts a run's current turn in its agent's stream: turn 1 as
// agent.invocation, a later one (a person's reply) as agent.followup,
// with the grant every token delivered with it carries (the instance's
// billing mode and tool class, platform and chat by default, its
// version as the permission version). It is idempotent: an offer of a
// turn stored already stores nothing more. The execution gateway calls
// it when it dispatches a run of a pull instance (and records the
// offered turn on the run itself); an ended run is not offered.
func (s *Service) Offer(ctx context.Context, run gateway.Run, inst gateway.Instance) error {
	if !inst.Pulls() || inst.ID != run.InstanceID || inst.TenantID != run.TenantID {
		return fmt.Errorf("delivery: offer run %s: instance %s is not the run's pull instance", run.ID, inst.ID)
	}
	if run.Status.Terminal() {
		return nil // nothing to do for its agent
	}
	turn := max(run.Turn, 1)
	thread := threadOf(&run)
	msg := messageID(run.ID, turn)
	typ := delivery.EventInvocation
	var payload any = delivery.InvocationPayload{TriggerKind: delivery.TriggerMessage, RunID: run.ID, ThreadID: thread, MessageID: msg}
	if turn > 1 {
		typ = delivery.EventFollowup
		payload = delivery.FollowupPayload{RunID: run.ID, ThreadID: thread, MessageID: msg}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("delivery: offer run %s: %w", run.ID, err)
	}
	id := a2a.NewID()
	subject := run.Caller.UserID
	if subject == "" {
		subject = run.Caller.Subject
	}
	grant := &delivery.Claims{Issuer: s.issuer, Audience: inst.ID, Subject: subject, TenantID: run.TenantID, RunID: run.ID,
		ThreadID: thread, EventID: id, TriggerKind: delivery.TriggerMessage, MessageID: msg,
		BillingMode: billingMode(inst), ToolClass: toolClass(inst), PermissionVersion: inst.Version}
	ev := delivery.StoredEvent{AgentID: inst.ID, TenantID: run.TenantID, ID: id, Type: typ, RunID: run.ID,
		DedupeKey: typ + ":" + run.ID + ":" + strconv.Itoa(turn), Payload: body, TraceContext: traceContext(ctx),
		Grant: grant, CreatedAt: s.o.Now()}
	if err := s.append(ctx, ev); err != nil {
		return fmt.Errorf("delivery: offer run %s: %w", run.ID, err)
	}
	return nil
}

// Cancelled tells a cancelled run's agent to stop (run.cancel_requested,
// with the run's reason); idempotent.
func (s *Service) Cancelled(ctx context.Context, run gateway.Run) error {
	body, err := json.Marshal(delivery.CancelRequestedPayload{RunID: run.ID, Reason: run.Reason})
	if err != nil {
		return fmt.Errorf("delivery: cancel run %s: %w", run.ID, err)
	}
	ev := delivery.StoredEvent{AgentID: run.InstanceID, TenantID: run.TenantID, ID: a2a.NewID(), Type: delivery.EventCancelRequested,
		RunID: run.ID, DedupeKey: delivery.EventCancelRequested + ":" + run.ID, Payload: body, TraceContext: traceContext(ctx),
		CreatedAt: s.o.Now()}
	if err := s.append(ctx, ev); err != nil {
		return fmt.Errorf("delivery: cancel run %s: %w", run.ID, err)
	}
	return nil
}

// append stores an event in its agent's stream and wakes the agent's
// waits in this process at once (others hear of it from the store).
func (s *Service) append(ctx context.Context, ev delivery.StoredEvent) error {
	if _, err := s.store.AppendEvents(ctx, []delivery.StoredEvent{ev}); err != nil {
		return err
	}
	s.watch.notify(ev.AgentID)
	return nil
}

func billingMode(inst gateway.Instance) delivery.BillingMode {
	if inst.BillingMode == "" {
		return delivery.BillingPlatform
	}
	return delivery.BillingMode(inst.BillingMode)
}

func toolClass(inst gateway.Instance) delivery.ToolClass {
	if inst.ToolClass == "" {
		return delivery.ToolChat
	}
	return delivery.ToolClass(inst.ToolClass)
}

// traceContext is the W3C trace context of ctx, nil outside a trace.
func traceContext(ctx context.Context) *delivery.TraceContext {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if carrier["traceparent"] == "" {
		return nil
	}
	return &delivery.TraceContext{Traceparent: carrier["traceparent"], Tracestate: carrier["tracestate"]}
}

// errRunMovedOn: a change found the run no longer in a state it applies
// to, and writes nothing.
var errRunMovedOn = errors.New("delivery: the run moved on")
