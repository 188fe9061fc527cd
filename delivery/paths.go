package delivery

import "net/url"

// BasePath is where the delivery API is served under a platform's base URL.
const BasePath = "/api/v1/delivery"

// Paths of the API. Agent and run ids are path-escaped where they are
// joined.
const (
	// DiscoveryPath answers a Discovery (getDiscovery).
	DiscoveryPath = BasePath + "/discovery"
	// JWKSPath publishes the invocation-token keys (getJwks), with
	// Cache-Control max-age.
	JWKSPath = BasePath + "/jwks"
	// GatewayPath is the WebSocket gateway.
	GatewayPath = BasePath + "/gateway"
	// MessagesPath takes a MessageCreate (createMessage).
	MessagesPath = BasePath + "/messages"
)

// AgentPath is an agent's root: + "/heartbeat" (sendHeartbeat),
// "/triggerers" (getAgentTriggerers), "/tokens" (createToken),
// "/consumers/{name}" (getConsumerState), "/consumers/{name}/events"
// (pollAgentEvents), "/consumers/{name}/ack" (ackAgentEvents).
func AgentPath(agentID string) string { return BasePath + "/agents/" + url.PathEscape(agentID) }

// ConsumerPath is a consumer's state (getConsumerState).
func ConsumerPath(agentID, consumer string) string {
	return AgentPath(agentID) + "/consumers/" + url.PathEscape(consumer)
}

// ConsumerEventsPath is a consumer's events page (pollAgentEvents).
func ConsumerEventsPath(agentID, consumer string) string {
	return ConsumerPath(agentID, consumer) + "/events"
}

// ConsumerRewindPath takes a ConsumerRewind from an operator
// (rewindConsumer) and answers the ConsumerState.
func ConsumerRewindPath(agentID, consumer string) string {
	return ConsumerPath(agentID, consumer) + "/rewind"
}

// ConsumerAckPath takes a ConsumerAck (ackAgentEvents).
func ConsumerAckPath(agentID, consumer string) string {
	return ConsumerPath(agentID, consumer) + "/ack"
}

// HeartbeatPath takes a Heartbeat (sendHeartbeat).
func HeartbeatPath(agentID string) string { return AgentPath(agentID) + "/heartbeat" }

// TriggerersPath answers an AgentTriggerers (getAgentTriggerers).
func TriggerersPath(agentID string) string { return AgentPath(agentID) + "/triggerers" }

// TokensPath takes a TokenCreate and answers a TokenGrant (createToken):
// the agent's API token, issued by a tenant admin.
func TokensPath(agentID string) string { return AgentPath(agentID) + "/tokens" }

// RunPath is a run: GET (getRun), PATCH with a RunPatch (patchRun).
func RunPath(runID string) string { return BasePath + "/runs/" + url.PathEscape(runID) }

// Run-scoped operation paths, each a POST but RunContextPath's GET.
func StartRunPath(runID string) string   { return RunPath(runID) + "/start" }       // startRun: RunStart
func ResumeRunPath(runID string) string  { return RunPath(runID) + "/resume" }      // resumeRun: RunResume
func RenewTokenPath(runID string) string { return RunPath(runID) + "/token" }       // renewInvocationToken: InvocationTokenRenew
func AwaitInputPath(runID string) string { return RunPath(runID) + "/await-input" } // awaitRunInput: RunAwaitInput
func FinishRunPath(runID string) string  { return RunPath(runID) + "/finish" }      // finishRun: RunFinish
func RunContextPath(runID string) string { return RunPath(runID) + "/context" }     // getRunContext

// Route is one operation of the API: its method, its path template (with
// {agent}, {consumer} and {run} standing for the escaped ids), its
// operation id, the action a caller must be allowed, and why a POST or
// PATCH needs no Idempotency-Key (ExemptReason, empty when it needs one).
type Route struct {
	Method       string
	Template     string
	OperationID  string
	Action       string
	RunScoped    bool
	ExemptReason string
}

// Idempotency exemptions: a write that may be repeated without a key,
// because a field of its body already names it once (ExemptClientID),
// because the agent runtime's own state makes a repeat harmless
// (ExemptAgentRuntime), or because its body states the outcome, not a
// change (ExemptStatesOutcome: a repeat sets the same again).
const (
	ExemptClientID      = "client_id"
	ExemptAgentRuntime  = "agent_runtime"
	ExemptStatesOutcome = "states_outcome"
)

// Routes lists every operation of the API. Clients retry a POST or PATCH
// only when it carries an Idempotency-Key or its route is exempt; the
// platform answers a repeated key with the first answer (a run is
// started once however often its start is sent), and the same key on a
// request still being answered with request_in_progress.
var Routes = []Route{
	{"GET", DiscoveryPath, "getDiscovery", "", false, ""},
	{"GET", JWKSPath, "getJwks", "", false, ""},
	{"GET", BasePath + "/agents/{agent}/consumers/{consumer}/events", "pollAgentEvents", "agent.events.consume", false, ""},
	{"POST", BasePath + "/agents/{agent}/consumers/{consumer}/ack", "ackAgentEvents", "agent.events.consume", false, ExemptAgentRuntime},
	{"GET", BasePath + "/agents/{agent}/consumers/{consumer}", "getConsumerState", "agent.events.consume", false, ""},
	{"POST", BasePath + "/agents/{agent}/heartbeat", "sendHeartbeat", "agent.heartbeat", false, ExemptAgentRuntime},
	{"GET", BasePath + "/agents/{agent}/triggerers", "getAgentTriggerers", "agent.triggerers.read", false, ""},
	{"POST", BasePath + "/agents/{agent}/tokens", "createToken", "agent.tokens.create", false, ""},
	{"POST", BasePath + "/agents/{agent}/consumers/{consumer}/rewind", "rewindConsumer", "agent.consumers.rewind", false, ExemptStatesOutcome},
	{"GET", BasePath + "/runs/{run}", "getRun", "run.context.read", true, ""},
	{"PATCH", BasePath + "/runs/{run}", "patchRun", "run.update", true, ""},
	{"GET", BasePath + "/runs/{run}/context", "getRunContext", "run.context.read", true, ""},
	{"POST", BasePath + "/runs/{run}/start", "startRun", "run.start", true, ""},
	{"POST", BasePath + "/runs/{run}/resume", "resumeRun", "run.start", true, ""},
	{"POST", BasePath + "/runs/{run}/token", "renewInvocationToken", "run.token.renew", true, ""},
	{"POST", BasePath + "/runs/{run}/await-input", "awaitRunInput", "run.update", true, ""},
	{"POST", BasePath + "/runs/{run}/finish", "finishRun", "run.finish", true, ""},
	{"POST", MessagesPath, "createMessage", "run.update", false, ExemptClientID},
}
