// Package gate is the Go SDK of the NovaOS governance gate for agents'
// writes.
//
// It is the public side of the gate: the SDK that gates an agent's writes (a
// client, sessions, read and write tool wrappers, adapters for tool seams
// and agent skills), the wire model those writes travel in, and the errors a
// stopped write returns. Its behaviour follows the Python gate SDK, so
// agents written against either see the same verdicts and errors.
//
// The gate sits in the path of an agent's irreversible writes. Read tools
// run freely and are kept as Evidence; a write is the gated moment, sent as
// an Action with the write's Context, the buffered reads and the agent's
// stated reasoning. The judge answers with a Verdict: pass (the write
// runs), hold (a person decides on the operator page) or kill (the write
// never runs). Every uncertainty fails closed.
//
//	_ = gate.SetReasoning(ctx, "Customer reported a double charge; verified in CRM.")
//	_, err := refund(ctx, Refund{Customer: "cust-4821", Amount: 240})
//	var kill *gate.KillError
//	if errors.As(err, &kill) { log(kill.Reason, kill.RuleIDCited, kill.Rationale) }
//
// # What this package holds
//
// The wire types (Action, Evidence, Provenance, the GenericContext,
// APContext and CSContext contexts, Verdict, HoldStatus, Claim, Ack, the
// session messages), strict decoders for everything the SDK reads from
// the gate and the service reads from a caller, the errors (KillError,
// PausedError, AlreadyExecutedError), Session in a context.Context with
// the configuration checks the Python gate SDK refuses before any request, and
// Config from the environment; the Store contract the service keeps its
// records in. And the SDK itself:
//
//   - Client talks to /api/v1/gate/…: Run (the Python SDK's @augur.session)
//     opens a session, runs a function under it and ends it; Begin and
//     End are the two halves.
//
//   - Read and Write wrap plain Go functions, generic over their argument
//     and result types (the Python SDK's @augur.tool): reads are buffered as
//     evidence, a write runs only once the gate granted it the claim to
//     execute, and is acknowledged with the claim's fencing token.
//
//   - ToolGate is the tool-seam adapter (the Python SDK's NovarchToolGate):
//     tools classified once as read or write, writes described by
//     WriteSpecJSON over the call's raw JSON arguments; KillSafe keeps a
//     framework's tool-error handler from swallowing a halt.
//
//   - From, AgentRead, AgentWrite and ToolGate.AgentSeam bind all of it to
//     a skill of package agent, reporting each call as tool-call-v1.
//
//   - ListActions, Action, Decide, PutRules, Rules, Audit and VerifyAudit
//     are the operator and admin calls.
//
// Put together:
//
//	c, _ := gate.NewClient(cfg, nil)
//	lookup := gate.Read("lookup_customer", crmLookup)
//	refund := gate.Write(c, gate.WriteSpec[Refund]{ActionType: "issue_refund", Context: refundContext}, issueRefund)
//	err := c.Run(ctx, gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot"}, func(ctx context.Context) error {
//		lookup(ctx, id)
//		_, err := refund(ctx, Refund{Customer: id, Amount: 240})
//		return err
//	})
//
// The server side is `novaos serve` (internal/gatesvc, with the operator
// page at /ui/gate); the README's "Governance gate" section is the guide.
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
// # Choices where the Python SDK is silent
//
// The Python gate SDK's documentation names fields and values but shows no
// request or response bodies. Where it is silent, this package chooses:
//
//   - JSON names are that SDK's snake_case names where it gives them
//     (action_id, action_type, session_id, tenant_id, team_id, agent_id,
//     verdict, rule_id_cited, rationale, max_hold_s, resumable, attach,
//     resume, record_id, summary, amount, open_dispute_count) and ours
//     elsewhere (context_type, evidence, provenance, reasoning, reason).
//   - An Action names its context's vertical in context_type: "generic",
//     "ap" or "cs", after the Python SDK's modules verticals.generic, .ap, .cs.
//   - Adopting the deployment's hold window is sent as
//     "adopt_deployment_window": true with no max_hold_s; a session that
//     declares nothing sends max_hold_s 300 (the Python SDK's 5-minute default)
//     explicitly, so the server never guesses. max_hold_s may be
//     fractional, as a Python float may.
//   - The Python SDK's fail-closed cases (judge error, judge timeout,
//     operator timeout, restart past the grace window, configuration) each
//     get a fail_closed_* Reason, and so do the further faults the gate
//     service can meet
//     (malformed or refusing judge, rule load and evaluation failures,
//     context builder, unreachable or malformed gate, store); a denied
//     hold is operator_denied; the four resume refusals keep the Python
//     SDK's names. Resume refusals, denials and execution_unconfirmed are
//     KillErrors, since the Python SDK has agents catch one error for every
//     stop.
//   - The typed AP and CS contexts refuse unknown fields (the Python SDK
//     calls them stricter); GenericContext keeps unknown members as Extra,
//     as the Python SDK keeps extra keyword fields. Counts and optional
//     amounts are pointers, so an unknown signal is absent, never zero.
//   - Everything decoded from the other side (Verdict, HoldStatus, Claim,
//     Ack, SessionInfo, and Action and SessionRequest on the service)
//     is decoded strictly: a duplicate member name at any depth, an
//     unknown field, trailing data or an out-of-enum value is refused.
//     encoding/json alone keeps the last duplicate, which would turn
//     {"verdict":"kill","verdict":"pass"} into a pass; since it also
//     matches names case-insensitively, names that differ only in case
//     ("verdict", "Verdict") count as duplicates too. A single member in
//     another case is accepted, as encoding/json accepts it.
//   - The Python SDK reports execution_unconfirmed as a verdict value; a resume
//     of an executed work item is reported the same way, as the verdict
//     already_executed with acknowledged_at. A claim (the compare-and-set
//     for the right to execute) answers granted with a fencing token, or
//     already_executed / execution_unconfirmed, since two runs can both
//     hold a pass and only one may execute.
//   - Config reads NOVAOS_GATE_URL and NOVAOS_TOKEN (the token every
//     NovaOS client reads), falling back to the Python SDK's NOVARCH_SERVER_URL
//     and NOVARCH_SDK_KEY; ours win when both are set.
//   - Attaching requires the caller's own session id; Suspend requires a
//     resumable session. The Python SDK implies both but does not state them.
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
//
// # Choices of the client
//
//   - A write submits with ?claim=1, so a pass comes back already claimed
//     and runs after one round trip; a pass without a claim (a resumed
//     standing verdict, an approval) is claimed with POST /claims. The
//     function runs only when a claim was granted.
//   - Every call of the write path (submit, wait, claim, ack) and the
//     session calls are retried on 429, 502, 503, 504 and connection
//     faults: the gate keys actions by (session, action id), so a replayed
//     submit gets the recorded verdict, and a replayed claim can at worst
//     be refused, never run a write twice. Decide and PutRules are not
//     retried. What still fails maps to a KillError: a problem's own
//     known reason; 401 and 403 as fail_closed_config; other 4xx and
//     malformed or mismatched answers as fail_closed_protocol; 5xx, 429,
//     transport faults and timeouts as fail_closed_server_unavailable.
//   - A session without an id gets a UUIDv7 made by the client, so a
//     retried open presents the same session.
//   - A hold blocks in long-polls of POST /actions/wait, asked again at
//     once when one ends pending. The client gives up on its own after
//     the hold's granted window plus ClientOptions.HoldMargin, with
//     fail_closed_operator_timeout, even if the gate never answers; a
//     caller's context that ends first does the same. A session parks
//     (PausedError, no wait) when it is Resumable and the gate granted it
//     an indefinite window, the Python SDK's two declarations.
//   - A session ends suspended after Suspend, and after a resume met
//     resume_no_standing_verdict; a paused write alone does not park it:
//     call Suspend, as in the Python SDK's nightly example.
//   - An acknowledgement that still fails after its retries does not undo
//     the write: the result is returned, the failure logged, and the
//     action shows as execution_unconfirmed until an operator confirms
//     it. A write function that returns an error is not acknowledged,
//     since whether its effect landed is an operator's call.
//   - At the tool seam, an unknown tool name fails closed: it may be a
//     write, and an ungated write is what the gate exists to stop.
package gate
