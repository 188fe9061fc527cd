package adapter

import (
	"context"

	"novaos.dev/novaos/delivery"
)

// Source: placeholder until the client's source.go lands.
type Source interface {
	Receive(ctx context.Context) ([]delivery.Event, error)
	Ack(ctx context.Context, seq int64) error
	Close() error
}

type PollingOptions struct{ Heartbeat func() delivery.Heartbeat }

func NewPollingSource(c *Client, agentID, consumer string, opts *PollingOptions) (Source, error) {
	panic("placeholder")
}

type GatewayOptions struct {
	Heartbeat func() delivery.Heartbeat
	Clock     Clock
	Settings  *Settings
	Logger    any
	Rand      any
}

func NewGatewaySource(c *Client, d delivery.Discovery, agentID, consumer string, opts *GatewayOptions) (Source, error) {
	panic("placeholder")
}
