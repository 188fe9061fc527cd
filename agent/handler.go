package agent

import (
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// CardAt returns the agent's card with one JSON-RPC interface at url, the
// agent's public endpoint ("" leaves supportedInterfaces empty).
func (a *Agent) CardAt(url string) *a2a.AgentCard {
	card := a.Card()
	if url != "" {
		card.SupportedInterfaces = []a2a.AgentInterface{{
			URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion,
		}}
	}
	return card
}

// Handler returns an a2asrv.Handler serving the agent: JSON-RPC at its root
// and the card at /.well-known/agent-card.json. url is the agent's public
// endpoint for the card. The card advertises push notifications exactly
// when opts has a PushConfigStore, so it cannot promise what the server
// would refuse.
func (a *Agent) Handler(url string, opts *a2asrv.Options) *a2asrv.Handler {
	card := a.CardAt(url)
	push := opts != nil && opts.PushConfigStore != nil
	card.Capabilities.PushNotifications = a2a.Bool(push)
	return a2asrv.NewHandler(card, a, opts)
}
