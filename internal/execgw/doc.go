// Package execgw is the execution gateway: it runs installed agents and streams their events.
//
// A tenant installs an agent as an instance (a hosted agent, or an A2A
// agent by URL, registered in the agent registry with its card fetched
// and, when signed, verified); an application starts a run on it with
// POST /api/v1/execute and follows GET /api/v1/events/{runId}. The
// wire model, the store contract and the Go client are package gateway's.
//
// # Delivery
//
// A run is stored QUEUED and delivered by a dispatcher: this process's,
// or any replica's on a shared database. The dispatcher claims the run
// with a lease it renews (Options.Lease); a replica that dies leaves its
// runs to be claimed again when the lease lapses. It calls the agent with
// SendStreamingMessage, the platform context under
// agent.ContextMetadataKey (run, thread, tenant, user, instance,
// idempotency key, trace context, the thread's history oldest first,
// config, output schema, memory budget, and an execution token minted for
// the delivery with the instance's scopes), the instance's secrets sealed
// to the agent's recipient key (user-context/v1), and the custom headers
// a service account passed. Delivery is at least once: a stream that
// ends without a terminal or interrupted state is delivered again under
// the same idempotency key, up to Options.MaxAttempts with a doubling
// backoff, and the run then fails saying so. An agent's refusal (an A2A
// error) fails the run at once.
//
// A run of a pull instance is handed to Deps.Pull instead (Puller.Offer
// stores its turn for its agent to pull) and parked, leased to
// gateway.PullLeaseOwner; once its agent started it, the agent's signs
// of life keep that lease Puller.StaleAfter ahead. A dispatcher that
// claims a started pull run whose lease lapsed ends it FAILED with
// reason stale (delivery.ReasonStale) and tells its agent as of a
// cancel: it is never offered again.
//
// # Events
//
// Every event is stored before it is streamed, numbered per run from 1;
// the SSE id of an event is its number, and Last-Event-ID resumes
// strictly after it, on any replica (the store's WatchEvents wakes
// followers across processes). Every ending is recorded as a status
// event with the terminal status and why, followed by done (completed)
// or error (failed, cancelled), after which the stream closes. A pause
// (INPUT_REQUIRED or AUTH_REQUIRED) records status WAITING_USER and the
// pause payload as a hitl, connector.oauth_required or
// tool.write_confirmation_required event; a reply queues the run again
// on the same task under a new idempotency key. A write confirmation is
// answered with its call_id, and the resumed delivery's token is bound
// to that call.
//
// An event recorded within a trace (a span in the context of the write)
// keeps its trace and span ids; the event index returns them.
//
// # Debugging
//
// POST /api/v1/runs/{id}/debug/{pause|step|resume|abort} drives a run's
// debugger (gateway.DebugSession, kept with the run), with the rights a
// cancel needs. pause holds the run at its next event boundary: its
// delivery records none of the agent's further events and stops reading
// the agent's stream, which holds the agent back with nothing lost, and
// a held run is not claimed, so no further turn starts. step lets one
// more of the agent's events through a paused run (a turn's ending, its
// artifacts, final message and status, counts as one), then holds it
// again; resume lets it go on; abort cancels it, "aborted by" the
// caller. A pause of a paused run, or a resume of a running one, writes
// nothing and answers the debugger as it is; a step of a run that is
// not paused and any action on an ended run are 409. Each action is
// recorded as a debug.<action> event, and no agent may report an event
// by such a name. The action reaches the replica delivering the run as
// a cancel does: its event wakes that delivery's watch of the run (the
// store's WatchEvents), which reads the run again; a delivery held by
// the debugger waits on that watch, renewing its lease meanwhile.
//
// # Telemetry
//
// Each delivery is a span, "invoke_agent <instance name>" (novaos.run_id,
// novaos.tenant_id, novaos.instance_id, gen_ai.agent.id, the turn, the
// attempt and the status the run was left in), a root of its own linked
// to the request that queued the turn (execute, reply, a gate decision)
// when this process served it: a turn may outlive that request by hours.
// The call of the agent is its child (package a2a/a2aotel), and the
// agent receives that trace context in its traceparent header and its
// platform context; with nothing tracing, the platform context carries a
// trace id made from the run id, as before. Card and key fetches carry
// the trace context too. Metrics: novaos_runs_started_total (first
// deliveries begun), novaos_runs_finished_total{state} (runs ended, in
// this process) and novaos_runs{state}, read from the store at each
// scrape (gateway.Store.CountRuns).
//
// # Callers
//
// The operator (the admin token) acts for any tenant, named by the
// X-Tenant-ID header. A platform token acts for its own tenant: a user
// token (one naming user_id) sees the runs its user started; a service
// account (a token without user_id that has the scope runs:service) sees
// every run of its tenant, may pass custom headers, and reads the
// service routes under /api/v1/service/runs, which refuse a user token
// with 403. Runs need runs:execute (start, reply, cancel) and runs:read;
// instances need instances:read and instances:write.
package execgw
