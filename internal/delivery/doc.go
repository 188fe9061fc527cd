// Package delivery serves pull delivery: agents that connect out take their runs here.
//
// A pull instance (gateway.Instance with Delivery "pull") is an agent
// that cannot be called by URL; its id is the agent's id, the audience
// of its invocation tokens and the {agent} of its paths, and its tenant
// is the agent's. The execution gateway dispatches a run of such an
// instance by calling Offer, which stores the run's turn in the agent's
// event stream (delivery.Store); Cancelled tells the agent a run was
// cancelled. The agent pulls its stream over REST (pollAgentEvents, a
// long poll woken by the store's news) or over the WebSocket gateway,
// acknowledges it per named consumer, and works the run with the run
// endpoints, which read and write the execution gateway's run
// (gateway.Store, compare-and-set on its Version) and append the status
// events its event stream and the runs page show.
//
//	svc, err := delivery.Mount(stores, delivery.Deps{Keys: ring, Tokens: issuer.Authenticator(), BaseURL: base}, nil)
//	for _, rt := range svc.Routes() { mux.Handle(rt.Pattern, rt.Handler) }
//	go svc.Run(ctx)
//	err = svc.Offer(ctx, run, inst) // when a pull instance's run is dispatched
//
// # Invocation tokens
//
// Every delivery of a token-bearing event carries a fresh token: a
// compact JWS (alg EdDSA, typ agent-invocation+jwt, the kid of a key of
// Deps.Keys, an Ed25519 ring of its own, KeyFile in the data directory)
// of the event's grant (delivery.Claims: iss the base URL, aud the
// agent, sub the run's caller, a new jti, Options.TokenTTL), recorded as
// its run's newest before the delivery is handed out (but one of a turn
// the run has moved past, which would supersede the current turn's
// token). The keys are
// published at delivery.JWKSPath with Cache-Control max-age
// Options.JWKSMaxAge.
//
// # Agents
//
// A tenant admin (the operator naming the tenant, or a platform token
// with instances:write) issues an agent's API token (createToken); the
// platform keeps its SHA-256. A token bound to a key (dpop_jkt) is
// accepted only as "Authorization: DPoP" with a proof (package dpop) of
// the request, checked against the server's public URL and path, with a
// current nonce (every answer carries DPoP-Nonce; a proof without one is
// 401 use_dpop_nonce) and never accepted before (else 401
// unauthenticated, reason invalid_dpop_proof). A proof is remembered by
// the SHA-256 of its key's thumbprint and its jti (never the proof)
// until it is too old to be accepted anywhere: its iat, plus
// Options.ProofWindow and a second, whatever the clocks of the replicas.
// This process remembers proofs in its memory, at most
// Options.MaxProofIDs, the oldest forgotten first, which refuses a
// replay to the same process without a write. Replicas sharing the
// sealing key take each other's nonces, so where other processes serve
// from the store (Deps.SharedStore, which Mount takes from
// store.Stores.Shared: replicas on one PostgreSQL database) a proof
// this process has not seen is also recorded in the store, with one
// insert-if-absent that exactly one replica wins (delivery.Store's
// RecordProof), and Run drops the ones past their time every
// ProofWindow in batches of a thousand. A store no other process serves
// from (SQLite, the default: one server on its file) keeps no proofs:
// there the memory refuses every replay, and the write a request would
// cost slows sequential polling measurably (docs/benchmarks.md). An
// unbound token comes as Bearer (or as DPoP with a proof, which is then
// checked the same way). A token of one agent finds no other agent's
// resources (404).
//
// # Consumers
//
// A consumer is a named cursor of the agent's stream. A new one starts
// at the head. A poll takes the events after those sent; events sent
// but not acknowledged within Options.AckTimeout are sent again, marked
// redelivered, each with a fresh token (which supersedes the one sent
// before). Acknowledgements are cumulative; one beyond the head is 400.
//
// # Runs
//
// Every run-scoped operation carries the run's token in
// Invocation-Token: one this service signed for the agent and the run
// (its age is checked only where it matters: start, resume, renew);
// missing or forged is 403 invocation_token_invalid reason invalid, and
// after the run ended every one but getRun is 403 reason run_inactive.
// startRun needs the run's newest token (else superseded; an earlier
// token of the same event counts once the newest expired and the
// consumer it was delivered to acknowledged past it, for nothing will
// bring it again), unexpired
// (else expired), a queued run never started (else 409
// already_started), and the billing mode and a tool class the token
// grants (else 409 billing_mode_mismatch or tool_class_mismatch, and the
// run fails); the run then moves QUEUED to RUNNING with one start, in
// one compare-and-set write. resumeRun takes a waiting run up again with
// the token of its follow-up, once (then consumed: the run records the
// turn it was resumed at, and the store the follow-up's key until the
// token expires, which Run prunes after); renewInvocationToken
// renews the newest token, expired or not; patchRun applies
// delivery.PatchPaths operations at a base version (409
// base_version_conflict with the current run otherwise) to a started
// run that has not ended (else 409 conflict run_not_active). An agent
// may fail a run it never started, refusing it (invalid_invocation_token
// and the mismatches), with whatever token it was given.
//
// A run its agent started is leased to the agent (gateway.PullLeaseOwner)
// until its last sign of life plus Options.RunStaleAfter: the writes its
// agent makes of it (start, resume, patch, run.update, a message in it)
// set the lease in the same write, and a heartbeat listing it in
// active_runs extends it when less than three quarters of the window
// is left (only the heartbeat's agent's own running runs; a lease this
// process saw fresh is not read again). The execution gateway claims a
// RUNNING run whose lease lapsed; for a started pull run it ends it
// FAILED with reason delivery.ReasonStale, tells the agent with
// run.cancel_requested (Cancelled) and never offers it again. A waiting
// run is claimed by no one; its resume starts a new window.
//
// # Idempotency
//
// Every agent's POST and PATCH its route does not exempt honours
// Idempotency-Key, per agent: a repeat gets the first answer (a start
// whose answer was lost is answered 200 again, not already_started), the
// same key while the first is answered 409 request_in_progress, with
// another body 422 idempotency_key_reused. Without a key a write is
// served as it is; the adapter SDK always sends one; Run drops the keys
// older than Options.IdempotencyTTL. createToken honours
// a key per tenant but never keeps the token it answered: a repeat
// revokes that token and answers a new one.
//
// # The gateway
//
// delivery.GatewayPath upgrades an agent's connection to a WebSocket (an
// Origin other than the server's own, a page of another site, is
// refused with 403). hello carries the heartbeat interval, the resume
// window (Options.ResumeWindow) and a DPoP nonce; identify is checked
// like a request (AuthenticateAgent, the proof naming GET and the
// gateway's URL; a refused one closes 4004, a proof without a current
// nonce 4003, so that the agent connects again for a new hello's), opens
// the consumer and takes it over: its SessionID in
// the store becomes the new session's, and the session that held it is
// closed 4015 (at once in this process, at its next read of the
// consumer on another replica). ready is followed by every event after
// the consumer's acknowledged sequence (those sent before sent again),
// catchup_complete, and new events as the store tells of them; at most
// Options.GatewayMaxInFlight are out beyond the acknowledged sequence,
// and NextEvents' ack timeout sends the rest again. A dropped session
// is remembered in this process for the resume window (two per
// consumer at most: its holder, and the last one that lost it, whose
// resume is 4015); resume acknowledges its cursor and sends the events
// after it, and before them once more those at or before the cursor that
// the session had sent again (an agent that settled one from its first
// delivery may never have read the later, whose token superseded the
// one it holds). run.update is UpdateRun, answered only when refused (an
// error frame with the problem's code, status and detail, and the run
// with base_version_conflict). Heartbeats check that the API token is
// not revoked (4017), the instance still pulls (4016, also checked at
// the store's news) and the session still holds its consumer; two
// silent intervals close it 4009, no identify within
// Options.GatewayIdentifyTimeout 4003. Frames wait to be written in a
// buffer of Options.GatewayMaxBufferedBytes (events take half of it); an
// answer that finds it full is an agent that does not read (4014), and
// a write past Options.GatewayWriteTimeout cuts the connection. Shutdown
// closes every connection 4013.
//
// # Telemetry
//
// Each agent request is a span, "delivery <operationId>" (novaos.agent_id),
// and so are the gateway's identify, resume and run.update; a 500's
// correlation_id is its trace id. Metrics:
// novaos_delivery_events_sent_total{kind} (first, redelivery),
// novaos_delivery_run_starts_total{outcome},
// novaos_delivery_requests_refused_total{code} (gateway operations
// too), novaos_delivery_gateway_sessions and
// novaos_delivery_gateway_closes_total{code}.
package delivery
