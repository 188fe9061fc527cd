package agent

import (
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// CardAt returns the agent's card with the interfaces Handler serves at
// url, the agent's public endpoint: JSON-RPC, then HTTP+JSON ("" leaves
// supportedInterfaces empty). An agent also served over gRPC (package
// a2agrpc/grpcsrv) appends that interface itself.
func (a *Agent) CardAt(url string) *a2a.AgentCard {
	card := a.Card()
	if url != "" {
		card.SupportedInterfaces = httpInterfaces(url)
	}
	return card
}

// httpInterfaces are the interfaces an a2asrv.Handler serves at url, in
// the order a card lists them: JSON-RPC, which every A2A SDK speaks,
// then HTTP+JSON.
func httpInterfaces(url string) []a2a.AgentInterface {
	return []a2a.AgentInterface{
		{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
		{URL: url, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
	}
}

// Handler returns an a2asrv.Handler serving the agent: JSON-RPC at its
// root, HTTP+JSON under it and the card at /.well-known/agent-card.json.
// url is the agent's public endpoint for the card, which lists both
// bindings. The card advertises push notifications exactly
// when opts has a PushConfigStore, so it cannot promise what the server
// would refuse. Unless opts sets its own, a new task's id is the
// platform's run id (see NewTaskID).
func (a *Agent) Handler(url string, opts *a2asrv.Options) *a2asrv.Handler {
	card := a.CardAt(url)
	var o a2asrv.Options
	if opts != nil {
		o = *opts
	}
	card.Capabilities.PushNotifications = a2a.Bool(o.PushConfigStore != nil)
	if o.NewTaskID == nil {
		o.NewTaskID = a.NewTaskID
	}
	return a2asrv.NewHandler(card, a, &o)
}

// NewTaskID proposes the id of the task a SendMessage creates: the run id
// of its platform context (request metadata first, then message metadata,
// as the Context reads it), "" when there is none. As in the NovaOS Python
// SDK, a platform-originated run and its task then share one id. It is meant
// for a2asrv.Options.NewTaskID, which falls back to a fresh id when the run
// id is unusable or already names a task, so a retried run, or a human-in-
// the-loop continuation sent as a new task, never lands on an existing task.
func (a *Agent) NewTaskID(req *a2a.SendMessageRequest) string {
	var msgMD map[string]any
	if req.Message != nil {
		msgMD = req.Message.Metadata
	}
	pc, _ := ParsePlatformContext(req.Metadata, msgMD)
	return pc.RunID
}
