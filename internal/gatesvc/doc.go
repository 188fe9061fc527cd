// Package gatesvc is the governance gate service that judges agents' gated
// writes.
//
// `novaos serve` serves it at /api/v1/gate and, for operators, at /ui/gate.
// It is the server side of the public package gate: that package holds the
// wire types, the HTTP API's shape and the Store contract.
//
// # A gated write's life
//
// An agent opens a session, then submits each write as an Action. The
// agent is the verified token's (Caller.Agent), never the body's, and a
// session and its actions are that agent's alone. The
// service judges it in layers and records the decision durably before it
// answers:
//
//  1. The tenant's rule set (package rules: CEL conditions with cost
//     limits), with trajectory aggregates read from a time-indexed ledger
//     in the store ("refunds for this customer in 168 h"). A rule set that
//     cannot be loaded refuses every write ([fail_closed_rules_unavailable]).
//  2. The optional LLM judge (package judge), unless the rules already
//     killed. It may escalate, never lower; any failure kills with its
//     fail_closed_judge_* reason.
//
// The final verdict is the most severe. A pass may be claimed in the same
// request (?claim=1). A hold waits for an operator within the hold window;
// the SDK long-polls /actions/wait and is answered the moment this process
// records the decision (a decision made on another replica is seen within
// a second). Expiry kills ([fail_closed_operator_timeout]).
//
// # Exactly once
//
// A standing verdict is bound to the action's fingerprint (gate.Fingerprint:
// SHA-256 over the RFC 8785 canonical JSON of action type, context type and
// context) and the commitment version of this release. The right to execute
// is a claim: a compare-and-set on the action's version that moves it to
// claimed and issues the next fencing token, so one of any number of
// concurrent claimers wins. The acknowledgement must present that token.
// A claim found again without its acknowledgement (a crash between claim
// and ack, or a duplicate run) is refused as execution_unconfirmed. Once
// the claim timeout has passed since the claim (and not before: its holder
// may still be writing) the action becomes unconfirmed, and only an
// operator settles it: confirm executed closes it, confirm not executed
// makes it claimable again under a new token. Nothing is retried on its own.
//
// A resume or retried submit of a known action id answers from its record:
// the four refusals of the Python gate SDK (fingerprint mismatch, unversioned
// commitment, commitment version changed, no standing verdict while still
// held or being judged), the standing pass, already_executed with the
// acknowledgement time, or the original kill.
//
// # Choices where the Python gate SDK is silent
//
//   - An unknown action id in a resumed session is judged fresh: a resumed
//     batch may carry new work items.
//   - A decision is a standing verdict, kept with the action so a retry
//     of the same action id gets the same answer — except when the gate
//     could not decide (a fail_closed_* kill: judge or rule set faults, a
//     store failure). That kill is audited (kind decision_failed_closed)
//     but leaves no record, so a later retry of the work item is judged
//     afresh; the write never ran either way.
//   - A shadow (log-only) rule set records what the rules and the judge
//     would have decided (Decision.Would, audit kind shadow_decision) and
//     enforces pass, including for judge failures; a set that fails to
//     load still refuses.
//   - Ledger entries are filed when a claim is granted (the write is then
//     committed), under the subject field the rule set's aggregates name
//     for the action type, else the vertical's key: record_id (generic),
//     vendor_id (ap), customer_id (cs).
//   - Sessions: opening an existing session id without attach is refused;
//     attach re-opens a suspended or completed session, so a third run can
//     learn that its work item was already executed.
//   - The hold window is the smaller of the deployment's (serve
//     --gate-hold-window, or indefinite) and the session's declaration.
//     Restart grace: the service records a heartbeat; when it starts after
//     being down longer than the grace, pending holds fail closed
//     ([fail_closed_restart_past_grace]); within it they keep their windows.
//   - Claims unacknowledged for the claim timeout are shown to operators as
//     unconfirmed.
//
// # Audit
//
// Every decision, shadow decision, resume refusal, claim, acknowledgement,
// expiry, rule change and operator action appends an entry to one
// hash-chained log (gate.ChainHash) in the same transaction as the change it
// records. `novaos gate audit verify` pages through it and detects any
// altered, removed or reordered entry, and entries removed from the end.
//
// # Telemetry
//
// Each submit is a "gate.decide" span: the verdict, the reason, the rule
// cited, how many rules the tenant's set holds, the action type, whether
// a standing record answered; never the action's context or arguments. A
// judge call is a "gate.judge" span under it (its model, its verdict or
// why it gave none). Metrics: novaos_gate_verdicts_total{verdict},
// novaos_gate_holds_pending and novaos_gate_oldest_hold_age_seconds (read
// from the store's state index at each scrape, gate.Store.CountActions),
// and novaos_gate_hold_age_seconds{decision}, the age of each hold when
// it was approved, denied or expired.
package gatesvc
