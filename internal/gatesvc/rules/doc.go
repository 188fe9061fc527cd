// Package rules is the governance gate's deterministic rule engine.
//
// It is the embedded default judge that runs before any model is asked.
//
// A Rule is plain-English text (what a human and the LLM judge read), an
// optional CEL condition (the deterministic floor) and the verdict the
// rule imposes when its condition holds: hold or kill. A Set is one
// tenant's rules at one version; Compile type-checks every condition up
// front, and a Set that fails to compile is an error the caller must turn
// into "refuse every gated write" — there is no partially loaded set.
//
// Conditions see exactly these variables (the Activation keys), declared
// so that a condition using anything else is a compile error:
//
//	action    map(string, dyn)            the write: "type", "args", …
//	ctx       map(string, dyn)            the typed context the caller built
//	evidence  list(map(string, dyn))      the buffered reads
//	agg       map(string, double)         trajectory aggregates computed by the
//	                                      caller from its ledger, e.g. agg.refunds_168h;
//	                                      integer values are widened to double
//	session   map(string, string)         tenant, team, agent, session id
//	now       timestamp                   the decision time; rules never read a clock
//
// The contents of action, ctx and evidence are dyn because their shape is
// per tool; a field a condition reads but the activation lacks is a
// runtime error, and runtime errors fail closed (below). Mixed int/double
// comparisons work (agg.refunds_168h >= 3).
//
// Evaluation is bounded twice. At load, each condition's worst-case cost
// is estimated assuming no list, map or string is larger than
// Options.SizeHint (default 256), and a condition above
// Options.MaxEstimatedCost (default 10 × the cost limit) is a compile
// error — a triple loop over the evidence never loads. At run time every
// program has a CEL cost limit (Options.CostLimit, default 100,000 units),
// and a rule not yet run when the context ends fails closed. Tracking the
// cost at run time costs more than most conditions themselves, so a
// condition runs untracked when the load-time estimate proves it inside
// the limit for the activation at hand: Compile finds, per condition, the
// largest value size for which the estimate stays within the limit, and
// Evaluate measures the largest list, map or string of the activation
// once. A larger activation runs tracked. The exact
// fail-closed choice: a rule whose evaluation errors for any reason —
// missing field, type error, cost limit exceeded, context cancelled — is
// reported as matched with Verdict Kill and its Error set, whatever its
// own verdict is. A rule without a condition never matches here; it exists
// for the LLM judge. The combined verdict is the most severe match
// (kill > hold > pass).
//
// A shadow (log-only) Set evaluates the same way but enforces Pass: its
// Result carries what would have happened in Would and the matches, so the
// caller can record "would have" decisions before enforcing.
//
//	set, err := rules.Compile(rules.Set{Tenant: "t1", Version: 3, Rules: []rules.Rule{{
//		ID: "refund-disputes", Text: "Hold refunds over 500 while a dispute is open.",
//		When: `action.type == "refund" && action.args.amount > 500 && ctx.open_disputes > 0`,
//		Verdict: rules.Hold,
//	}}}, nil)
//	if err != nil { /* refuse every gated write */ }
//	res := set.Evaluate(ctx, rules.Activation{"action": …, "ctx": …, "agg": …})
package rules
