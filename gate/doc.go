// Package gate is the public side of the NovaOS governance gate (seed 004,
// issue 9): the wire model an agent's gated writes travel in, the errors a
// stopped write returns, and the session an agent run is governed under.
//
// The gate sits in the path of an agent's irreversible writes. Read tools
// run freely and are kept as Evidence; a write is the gated moment, sent as
// an Action with the write's Context, the buffered reads and the agent's
// stated reasoning. The judge answers with a Verdict: pass (the write
// runs), hold (a person decides on the operator page) or kill (the write
// never runs). Every uncertainty fails closed.
//
//	ctx = gate.WithSession(ctx, gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot"})
//	_ = gate.SetReasoning(ctx, "Customer reported a double charge; verified in CRM.")
//	if err := gate.ValidateWrite(ctx, ""); err != nil { ... } // [fail_closed_config] …
//	var kill *gate.KillError
//	if errors.As(err, &kill) { log(kill.Reason, kill.RuleIDCited, kill.Rationale) }
//
// # What this package holds now, and what comes next
//
// Now: the wire types (Action, Evidence, Provenance, the GenericContext,
// APContext and CSContext contexts, Verdict, HoldStatus, Claim, Ack, the
// session messages), strict decoders for everything the SDK reads from the
// gate and the service reads from a caller, the errors (KillError,
// PausedError, AlreadyExecutedError), Session in a context.Context with
// the configuration checks seed 004 refuses before any request, and Config
// from the environment. Later steps add the client that talks to
// /api/v1/gate/…, the generic read and write tool wrappers that buffer
// evidence and turn verdicts into these errors, and the tool-seam adapter.
//
// # Errors
//
// Agent code catches one error type, *KillError, for every way a write
// can be stopped: a kill, an operator's deny, an expired hold, a resume
// refusal, execution_unconfirmed, and every fail-closed case, each with a
// stable Reason that the message shows as a bracketed prefix
// ("[fail_closed_judge_timeout] gate: write failed closed …"). A session
// that declared it can park gets *PausedError for a hold instead of
// blocking, and a resume presenting an executed work item gets
// *AlreadyExecutedError with the acknowledgement time. No error message
// includes the token.
//
// # Choices where seed 004 is silent
//
// Seed 004 is the Python SDK's documentation; it names fields and values
// but shows no request or response bodies. Where it is silent, this
// package chooses:
//
//   - JSON names are the seed's snake_case names where it gives them
//     (action_id, action_type, session_id, tenant_id, team_id, agent_id,
//     verdict, rule_id_cited, rationale, max_hold_s, resumable, attach,
//     resume, record_id, summary, amount, open_dispute_count) and ours
//     elsewhere (context_type, evidence, provenance, reasoning, reason).
//   - An Action names its context's vertical in context_type: "generic",
//     "ap" or "cs", after the seed's modules verticals.generic, .ap, .cs.
//   - Adopting the deployment's hold window is sent as
//     "adopt_deployment_window": true with no max_hold_s; a session that
//     declares nothing sends max_hold_s 300 (the seed's 5-minute default)
//     explicitly, so the server never guesses. max_hold_s may be
//     fractional, as a Python float may.
//   - The seed's fail-closed cases (judge error, judge timeout, operator
//     timeout, restart past the grace window, configuration) each get a
//     fail_closed_* Reason, and so do the further faults issue 9 lists
//     (malformed or refusing judge, rule load and evaluation failures,
//     context builder, unreachable or malformed gate, store); a denied
//     hold is operator_denied; the four resume refusals keep the seed's
//     names. Resume refusals, denials and execution_unconfirmed are
//     KillErrors, since the seed has agents catch one error for every stop.
//   - The typed AP and CS contexts refuse unknown fields (the seed calls
//     them stricter); GenericContext keeps unknown members as Extra, as
//     the seed's extra keyword fields. Counts and optional amounts are
//     pointers, so an unknown signal is absent, never zero.
//   - Everything decoded from the other side (Verdict, HoldStatus, Claim,
//     Ack, SessionInfo, and Action and SessionRequest on the service)
//     is decoded strictly: a duplicate member name at any depth, an
//     unknown field, trailing data or an out-of-enum value is refused.
//     encoding/json alone keeps the last duplicate, which would turn
//     {"verdict":"kill","verdict":"pass"} into a pass; since it also
//     matches names case-insensitively, names that differ only in case
//     ("verdict", "Verdict") count as duplicates too. A single member in
//     another case is accepted, as encoding/json accepts it.
//   - The seed reports execution_unconfirmed as a verdict value; a resume
//     of an executed work item is reported the same way, as the verdict
//     already_executed with acknowledged_at. A claim (the compare-and-set
//     for the right to execute) answers granted with a fencing token, or
//     already_executed / execution_unconfirmed, since two runs can both
//     hold a pass and only one may execute.
//   - Config reads NOVAOS_GATE_URL and NOVAOS_TOKEN (the token every
//     NovaOS client reads), falling back to the seed's NOVARCH_SERVER_URL
//     and NOVARCH_SDK_KEY; ours win when both are set.
//   - Attaching requires the caller's own session id; Suspend requires a
//     resumable session. The seed implies both but does not state them.
//   - A standing verdict is bound to a fingerprint of what it approved
//     (FingerprintScheme "sha256-jcs-1"): the hex SHA-256 of the RFC 8785
//     canonical JSON of {"action_type", "context", "context_type"}. The
//     service fingerprints the raw context it received, the SDK the typed
//     context it sends; a resume whose fingerprint differs is refused
//     (resume_fingerprint_mismatch), while member order, white space,
//     escapes and number spellings (1, 1.0, 1e0) never matter. So that
//     two different amounts can never share a fingerprint, Canonicalize
//     refuses numbers whose decimal value is not exactly a double's
//     shortest form (0.30000000000000001) and magnitudes beyond 2^53-1:
//     such values travel as strings. Strings are compared as written, so
//     a timestamp re-spelt in another zone is a different context.
package gate
