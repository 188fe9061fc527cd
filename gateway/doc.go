// Package gateway is the client and wire model of the NovaOS execution gateway.
//
// The gateway runs installed agents for applications. An application installs an agent for a tenant as an [Instance], starts a
// [Run] on it with POST /api/v1/execute ([ExecuteRequest]), and follows
// what happens on GET /api/v1/events/{runId}: server-sent events, each
// "event: message" with a JSON body {type, payload, run_id, sequence} and
// an "id:" line. [Client] does all three; [Client.EventsWithReconnect]
// resumes a dropped stream from the last id it saw, so every event
// arrives exactly once and in order.
//
// A run ends in one of three terminal statuses (COMPLETED, FAILED,
// CANCELLED) and may pause in WAITING_USER for a person's answer. Every
// ending is recorded as a "status" event naming the terminal status and
// why; a live stream then also sends "done" (completed) or "error".
// [StreamEvent.IsTerminal] and [StreamEvent.IsFailure] recognise every
// one of those shapes: branch on them, never on the event type alone, or
// a run that fails after its agent returned looks like a success.
//
// A run's recorded events are also an index to page through
// ([Client.RunEvents]), and a run can be held and let through one event
// at a time ([Client.SendDebugControl], [DebugSession]): the run
// observability of the NovaOS Python SDK's ObservabilityClient.
//
// [Store] is the contract the platform keeps instances, runs and events
// in; store/sqlite and store/postgres implement it and store/storetest
// checks them, and [NewMemoryStore] keeps them in process.
package gateway
