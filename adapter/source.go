package adapter

import (
	"context"
	"errors"

	"novaos.dev/novaos/delivery"
)

// Source delivers an agent's events to an adapter: over the WebSocket
// gateway or by polling the REST API. An adapter receives a batch,
// stores and settles its events, and then acknowledges them.
type Source interface {
	// Receive blocks until at least one event has arrived, the source
	// fails for good, or ctx ends. Events come in sequence order; an
	// event not acknowledged in time comes again (Redelivered).
	Receive(ctx context.Context) ([]delivery.Event, error)
	// Ack acknowledges every event up to and including seq: it is
	// cumulative, so acknowledge only up to the first event that is not
	// settled yet.
	Ack(ctx context.Context, seq int64) error
	// Close stops the source and whatever it runs; Receive and Ack then
	// return ErrSourceClosed.
	Close() error
}

// HeartbeatSource is a Source that sends the agent's heartbeat itself,
// as often as the platform asks: the adapter tells it what to say.
type HeartbeatSource interface {
	Source
	// SetHeartbeat sets the function asked for each heartbeat before it
	// is sent; nil sends none.
	SetHeartbeat(build func() delivery.Heartbeat)
}

// ErrSourceClosed is what a Source's Receive and Ack return after Close.
var ErrSourceClosed = errors.New("adapter: source closed")
