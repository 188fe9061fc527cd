package adapter

import (
	"novaos.dev/novaos/delivery"
)

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
