package toolgw

import (
	"context"
	"encoding/json"
	"errors"

	"novaos.dev/novaos/gateway"
)

// The run events of a call.
const (
	eventToolCall    = gateway.EventToolCall
	eventToolResult  = gateway.EventToolResult
	eventWriteHeld   = gateway.EventWriteConfirmationRequired
	maxEventArgBytes = 4 << 10
)

// runEvent shows a call made with a run's token in that run. A run that
// ended, or a failure to write, does not fail the call: the call's audit
// entry is its record.
func (s *Service) runEvent(ctx context.Context, c *Caller, typ string, fields map[string]any) {
	if s.deps.Runs == nil || c.Run == "" {
		return
	}
	payload, err := json.Marshal(fields)
	if err != nil {
		return
	}
	err = s.deps.Runs.AppendEvents(context.WithoutCancel(ctx), c.Tenant, c.Run, gateway.Event{Type: typ, Payload: payload})
	if err != nil && !errors.Is(err, gateway.ErrNotFound) {
		s.log.Warn("toolgw: show a call in its run", "run", c.Run, "event", typ, "err", err)
	}
}
