package adapter

import (
	"context"

	"novaos.dev/novaos/delivery"
)

// GatewaySource is a Source that receives an agent's events over the
// WebSocket gateway and acknowledges them with the ack operation.
type GatewaySource struct {
	g *Gateway
}

// NewGatewaySource starts a Gateway session (see DialGateway for
// baseURL, info and opts) that connects in the background: a failed
// connection is retried as a lost one would be, and a close code the
// agent stops on is returned by Receive, wrapping ErrGatewayStopped.
// The heartbeat's agent member comes from opts.Heartbeat.
func NewGatewaySource(baseURL string, info delivery.GatewayInfo, opts *GatewayOptions) (*GatewaySource, error) {
	g, err := newGateway(baseURL, info, opts)
	if err != nil {
		return nil, err
	}
	g.start()
	return &GatewaySource{g: g}, nil
}

// Receive blocks until at least one event arrived, or ctx ends; events
// arrive across reconnects. After a stop it returns an error wrapping
// ErrGatewayStopped, from which errors.As takes the CloseReason.
func (s *GatewaySource) Receive(ctx context.Context) ([]delivery.Event, error) {
	return s.g.Receive(ctx)
}

// Ack acknowledges every event up to and including seq (cumulative);
// the next session resumes from it.
func (s *GatewaySource) Ack(ctx context.Context, seq int64) error { return s.g.Ack(ctx, seq) }

// Close ends the session (close code 1000) and stops reconnecting.
func (s *GatewaySource) Close() error { return s.g.Close() }

// Gateway is the source's session, for run.update and autocomplete
// results.
func (s *GatewaySource) Gateway() *Gateway { return s.g }

// String names the source; it never shows the token.
func (s *GatewaySource) String() string { return "GatewaySource{" + s.g.String() + "}" }

// GoString is String.
func (s *GatewaySource) GoString() string { return s.String() }

var _ Source = (*GatewaySource)(nil)
