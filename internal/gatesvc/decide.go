package gatesvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/gatesvc/rules"
)

// Errors of the service a handler maps to statuses.
var (
	// ErrBadRequest: the body or a parameter is malformed (400).
	ErrBadRequest = errors.New("gate: bad request")
	// ErrForbidden: the caller may not act on that tenant or lacks the
	// scope (403).
	ErrForbidden = errors.New("gate: forbidden")
	// ErrSessionState: the session is missing, not open, or exists when a
	// new one was asked for (409).
	ErrSessionState = errors.New("gate: session state")
	// ErrNotClaimable: a claim or acknowledgement does not fit the
	// action's state (409).
	ErrNotClaimable = errors.New("gate: action not claimable")
)

// inflight is an action being judged for the first time in this
// process; a duplicate submit waits for it instead of judging twice.
type inflight struct{ done chan struct{} }

// Submit judges an action (the raw JSON an agent sent) or answers from
// its standing record. With claim set, a pass is claimed in the same step.
// It is traced ("gate.decide") and its verdict counted.
func (s *Service) Submit(ctx context.Context, c *Caller, raw []byte, claim bool) (gate.Verdict, error) {
	ctx, span := s.tel.startDecision(ctx, c)
	v, err := s.submit(ctx, c, raw, claim)
	s.tel.decided(span, v, err)
	return v, err
}

func (s *Service) submit(ctx context.Context, c *Caller, raw []byte, claim bool) (gate.Verdict, error) {
	start := s.o.Now()
	act, wireContext, err := gate.DecodeSubmitted(raw)
	if err != nil {
		return gate.Verdict{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attrActionType.String(act.ActionType))
	}
	if err := c.tenantOK(act.TenantID); err != nil {
		return gate.Verdict{}, err
	}
	if err := c.agentOK(&act.AgentID); err != nil {
		return gate.Verdict{}, err
	}
	check := act
	if check.TeamID == "" {
		check.TeamID = "-" // the session's: filled in once it is read
	}
	if err := check.Validate(); err != nil {
		return gate.Verdict{}, fmt.Errorf("%w: gate: decode action: %w", ErrBadRequest, err)
	}
	ctxType := act.Context.ContextType()
	fp, err := gate.FingerprintJSON(act.ActionType, ctxType, wireContext)
	if err != nil {
		return gate.Verdict{}, fmt.Errorf("%w: context: %w", ErrBadRequest, err)
	}
	sess, err := s.store.GetSession(ctx, act.TenantID, act.SessionID)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		return gate.Verdict{}, fmt.Errorf("%w: session %q is not open: open it first (POST %s/sessions)", ErrSessionState, act.SessionID, gate.APIPath)
	case err != nil:
		return s.failStore(act, err), nil
	case sess.State != gate.SessionStateOpen:
		return gate.Verdict{}, fmt.Errorf("%w: session %q is %s: attach to re-open it", ErrSessionState, act.SessionID, sess.State)
	}
	// The rules read the session's agent and team: an action claiming
	// another is refused, never judged under the name it gave.
	if err := c.owns(sess.AgentID, sess.ID); err != nil {
		return gate.Verdict{}, err
	}
	switch act.TeamID {
	case "":
		act.TeamID = sess.TeamID
	case sess.TeamID:
	default:
		return gate.Verdict{}, fmt.Errorf("%w: team_id %q is not session %q's team %q", ErrForbidden, act.TeamID, sess.ID, sess.TeamID)
	}
	if act.AgentID != sess.AgentID {
		return gate.Verdict{}, fmt.Errorf("%w: agent_id %q is not session %q's agent %q", ErrForbidden, act.AgentID, sess.ID, sess.AgentID)
	}
	key := actionKey{act.TenantID, act.SessionID, act.ActionID}
	for {
		rec, err := s.store.GetAction(ctx, act.TenantID, act.SessionID, act.ActionID)
		if err == nil {
			return s.answerStanding(ctx, c, rec, &act, fp, claim)
		}
		if !errors.Is(err, gate.ErrNotFound) {
			return s.failStore(act, err), nil
		}
		s.inflightMu.Lock()
		f := s.inflight[key]
		if f == nil {
			f = &inflight{done: make(chan struct{})}
			s.inflight[key] = f
			s.inflightMu.Unlock()
			v, err := s.judgeFresh(ctx, c, sess, &act, raw, wireContext, fp, claim, start)
			s.inflightMu.Lock()
			delete(s.inflight, key)
			s.inflightMu.Unlock()
			close(f.done)
			return v, err
		}
		s.inflightMu.Unlock()
		if act.Resume {
			// Nothing decided yet, or the first attempt is still in front
			// of the judge: the caller retries, never re-mints.
			return refusal(&act, gate.ResumeNoStandingVerdict, "the action is still being judged; retry the resume"), nil
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return gate.Verdict{}, ctx.Err()
		}
	}
}

// answerStanding answers a submit of an action that has a record: a
// resume, or a retried submit. The content must be the commitment's.
func (s *Service) answerStanding(ctx context.Context, c *Caller, rec gate.ActionRecord, act *gate.Action, fp string, claim bool) (gate.Verdict, error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attrStanding.Bool(true))
	}
	var reason gate.Reason
	switch {
	case rec.Fingerprint == "":
		reason = gate.ResumeCommitmentUnversioned
	case rec.CommitmentVersion != s.o.CommitmentVersion:
		reason = gate.ResumeCommitmentVersionChanged
	case rec.Fingerprint != fp || rec.FingerprintScheme != gate.FingerprintScheme:
		reason = gate.ResumeFingerprintMismatch
	case rec.State == gate.ActionHeld && act.Resume:
		reason = gate.ResumeNoStandingVerdict
	}
	if reason != "" {
		if _, err := s.store.AppendAudit(ctx, gate.AuditEntry{Kind: "resume_refused", TenantID: rec.TenantID,
			SessionID: rec.SessionID, ActionID: rec.ActionID, Actor: c.Actor,
			Body: mustJSON(map[string]any{"reason": reason, "fingerprint": fp, "standing_fingerprint": rec.Fingerprint,
				"commitment_version": s.o.CommitmentVersion, "standing_commitment_version": rec.CommitmentVersion})}); err != nil {
			return s.failStore(*act, err), nil
		}
		v := refusal(act, reason, resumeText[reason])
		if reason == gate.ResumeNoStandingVerdict {
			v.Hold = holdStatus(rec)
		}
		return v, nil
	}
	switch rec.State {
	case gate.ActionPassed, gate.ActionApproved:
		if !claim {
			return verdictOf(rec), nil
		}
		cl, rec2, err := s.claim(ctx, c, rec)
		if err != nil {
			return gate.Verdict{}, err
		}
		if cl.Status != gate.ClaimGranted {
			return verdictOf(rec2), nil
		}
		v := verdictOf(rec)
		v.Claim = &cl
		return v, nil
	case gate.ActionClaimed:
		if s.claimLive(rec, s.o.Now()) {
			v := verdictOf(rec)
			v.Verdict = gate.ExecutionUnconfirmed
			v.Rationale = "another run holds the claim and has not acknowledged it; the write may be running"
			return v, nil
		}
		rec2, err := s.markUnconfirmed(ctx, rec, "claimed again without an acknowledgement")
		if err != nil && !errors.Is(err, gate.ErrConflict) {
			return s.failStore(*act, err), nil
		}
		return verdictOf(rec2), nil
	}
	return verdictOf(rec), nil
}

var resumeText = map[gate.Reason]string{
	gate.ResumeFingerprintMismatch:      "the action's content does not match the commitment under this action id; present a new action id",
	gate.ResumeCommitmentUnversioned:    "the standing verdict predates fingerprints; present a new action id",
	gate.ResumeCommitmentVersionChanged: "a release changed what a commitment means; approvals under the old meaning are void; present a new action id",
	gate.ResumeNoStandingVerdict:        "nothing has been decided yet; retry the resume later with the same ids",
}

func refusal(act *gate.Action, reason gate.Reason, text string) gate.Verdict {
	return gate.Verdict{ActionID: act.ActionID, SessionID: act.SessionID, Verdict: gate.Kill, Reason: reason, Rationale: text}
}

// failStore answers a write the gate could not record: it fails closed.
func (s *Service) failStore(act gate.Action, err error) gate.Verdict {
	s.log.Error("gate: store", "tenant", act.TenantID, "session", act.SessionID, "action", act.ActionID, "err", err)
	return gate.Verdict{ActionID: act.ActionID, SessionID: act.SessionID, Verdict: gate.Kill, Reason: gate.ReasonStore,
		Rationale: "the gate could not read or record its decision"}
}

// judgeFresh runs the layers on an action never seen before and records
// the decision.
func (s *Service) judgeFresh(ctx context.Context, c *Caller, sess gate.SessionRecord, act *gate.Action, raw, ctxRaw json.RawMessage, fp string, claim bool, start time.Time) (gate.Verdict, error) {
	now := s.o.Now()
	d := gate.Decision{FingerprintScheme: gate.FingerprintScheme, CommitmentVersion: s.o.CommitmentVersion}
	out := outcome{verdict: gate.Pass}
	set, err := s.rules.current(ctx, act.TenantID)
	ctxMap := map[string]any{}
	if err == nil {
		if err = json.Unmarshal(ctxRaw, &ctxMap); err != nil {
			err = fmt.Errorf("context: %w", err)
		}
	}
	if err != nil {
		s.log.Error("gate: rule set unavailable; refusing the write", "tenant", act.TenantID, "err", err)
		out = outcome{verdict: gate.Kill, reason: gate.ReasonRulesUnavailable, rationale: "the tenant's rule set could not be loaded"}
	} else {
		if span := trace.SpanFromContext(ctx); span.IsRecording() && set != nil {
			span.SetAttributes(attrRuleCount.Int(len(set.doc.Rules)))
		}
		t0 := time.Now()
		out, err = s.applyRules(ctx, set, sess, act, ctxMap, now, &d)
		d.RulesMicros = time.Since(t0).Microseconds()
		if err != nil {
			return s.failStore(*act, err), nil
		}
		if s.o.Judge != nil && (out.verdict != gate.Kill || d.Shadow) && d.Would != gate.Kill {
			t1 := time.Now()
			out = s.applyJudge(ctx, set, act, out, &d)
			d.JudgeMicros = time.Since(t1).Microseconds()
		}
	}
	if act.Floor != "" && severity[act.Floor] > severity[out.verdict] && out.reason == "" {
		// The caller asked for at least this verdict; a fail-closed kill
		// or a rule's own harder verdict stands.
		d.Floor = act.Floor
		out = outcome{verdict: act.Floor, rule: FloorRule, rationale: "the caller asked that a person decide this write (" + string(act.Floor) + " at least)"}
	}
	d.TotalMicros = s.o.Now().Sub(start).Microseconds()

	rec := gate.ActionRecord{TenantID: act.TenantID, SessionID: act.SessionID, ActionID: act.ActionID,
		ActionType: act.ActionType, TeamID: act.TeamID, AgentID: act.AgentID, Action: raw,
		Fingerprint: fp, FingerprintScheme: gate.FingerprintScheme, CommitmentVersion: s.o.CommitmentVersion,
		Verdict: out.verdict, RuleIDCited: out.rule, Rationale: out.rationale, Reason: out.reason, Decision: mustJSON(d)}
	var ledger []gate.LedgerEntry
	switch out.verdict {
	case gate.Pass:
		rec.State = gate.ActionPassed
		if claim {
			rec.State, rec.FencingToken, rec.ClaimedAt = gate.ActionClaimed, 1, now
			ledger = s.ledgerFor(set, rec, act.Context.ContextType(), ctxMap, now)
		}
	case gate.Hold:
		rec.State = gate.ActionHeld
		rec.HoldWindow, rec.HoldIndefinite = sess.HoldWindow, sess.HoldIndefinite
		if !sess.HoldIndefinite {
			rec.HoldExpiresAt = now.Add(sess.HoldWindow)
		}
	default:
		rec.State = gate.ActionKilled
	}
	kind := "decision"
	if d.Shadow {
		kind = "shadow_decision"
	}
	body := map[string]any{"verdict": rec.Verdict, "reason": rec.Reason, "rule_id_cited": rec.RuleIDCited,
		"rationale": rec.Rationale, "fingerprint": fp, "decision": d}
	if rec.State == gate.ActionClaimed {
		body["fencing_token"] = rec.FencingToken
	}
	e := &gate.AuditEntry{Kind: kind, TenantID: rec.TenantID, SessionID: rec.SessionID, ActionID: rec.ActionID,
		Actor: c.Actor, Body: mustJSON(body)}
	if rec.Reason.FailClosed() {
		// The gate could not decide (a judge or rule set fault): the kill
		// is audited but leaves no standing verdict, so a retry of the same
		// work item is judged afresh rather than killed for good.
		e.Kind = "decision_failed_closed"
		if _, err := s.store.AppendAudit(ctx, *e); err != nil {
			return s.failStore(*act, err), nil
		}
		return verdictOf(rec), nil
	}
	stored, err := s.store.WriteAction(ctx, gate.ActionWrite{Record: rec, Now: now, Audit: e, Ledger: ledger})
	switch {
	case errors.Is(err, gate.ErrExists):
		// Another replica judged it first: its decision stands.
		return s.answerStanding(ctx, c, stored, act, fp, claim)
	case err != nil:
		return s.failStore(*act, err), nil
	}
	v := verdictOf(stored)
	if stored.State == gate.ActionClaimed {
		v.Verdict, v.Claim = gate.Pass, claimOf(stored)
	}
	v.Shadow = d.Shadow
	return v, nil
}

// FloorRule is the rule an action's floor is cited as when it raised
// the verdict.
const FloorRule = "floor"

// outcome is a verdict with its citation.
type outcome struct {
	verdict   gate.Outcome
	rule      string
	rationale string
	reason    gate.Reason
}

var severity = map[gate.Outcome]int{gate.Pass: 0, gate.Hold: 1, gate.Kill: 2}

// applyRules computes the aggregates and evaluates the tenant's rules.
// Its error is a store failure reading the ledger.
func (s *Service) applyRules(ctx context.Context, set *ruleSet, sess gate.SessionRecord, act *gate.Action, ctxMap map[string]any, now time.Time, d *gate.Decision) (outcome, error) {
	if set == nil {
		d.Rules = gate.Pass
		return outcome{verdict: gate.Pass}, nil
	}
	d.RuleSetVersion, d.RuleSetHash, d.Shadow = set.version, set.hash, set.doc.Shadow
	ctxType := act.Context.ContextType()
	agg, err := aggregates(ctx, s.store, set, act.TenantID, now, func(a gate.AggregateSpec) (string, bool) {
		if a.Scope == "tenant" {
			return "", true
		}
		return subjectOf(ctxMap, set.subjectField(a.ActionType, ctxType)) // absent: a rule that reads it fails closed
	})
	if err != nil {
		return outcome{}, err
	}
	d.Aggregates = agg
	res := set.compiled.Evaluate(ctx, rules.Activation{
		"action":   map[string]any{"type": act.ActionType, "id": act.ActionID, "context_type": act.Context.ContextType(), "reasoning": act.Reasoning, "resume": act.Resume},
		"ctx":      ctxMap,
		"evidence": evidenceList(act.Evidence),
		"agg":      agg,
		"session":  map[string]string{"tenant": act.TenantID, "team": act.TeamID, "agent": act.AgentID, "id": act.SessionID},
		"now":      now,
	})
	texts := map[string]string{}
	for _, r := range set.doc.Rules {
		texts[r.ID] = r.Text
	}
	var cited *rules.Match
	for i, m := range res.Matched {
		rm := gate.RuleMatch{RuleID: m.RuleID, Text: texts[m.RuleID], Verdict: gate.Outcome(m.Verdict.String())}
		if m.Err != nil {
			rm.Error = m.Err.Error()
		}
		d.Matched = append(d.Matched, rm)
		if cited == nil || m.Verdict > cited.Verdict {
			cited = &res.Matched[i]
		}
	}
	d.Rules = gate.Outcome(res.Verdict.String())
	d.Would = gate.Outcome(res.Would.String())
	if !set.doc.Shadow {
		d.Would = ""
	}
	out := outcome{verdict: d.Rules}
	if cited != nil && !set.doc.Shadow {
		out.rule, out.rationale = cited.RuleID, texts[cited.RuleID]
		if cited.Err != nil {
			out.reason = gate.ReasonRuleError
			out.rationale = "rule " + cited.RuleID + " could not be evaluated: " + cited.Err.Error()
		}
	}
	return out, nil
}

// aggregates totals the set's aggregates that subject selects, in one
// store call and so from one snapshot of the ledger. subject is asked of
// every aggregate: false leaves it out, and the name it gives is what a
// subject-scoped one is about (tenant-wide ones ignore it).
func aggregates(ctx context.Context, store gate.Store, set *ruleSet, tenant string, now time.Time, subject func(gate.AggregateSpec) (string, bool)) (map[string]float64, error) {
	var qs []gate.LedgerQuery
	var asked []int // qs[i] is set.doc.Aggregates[asked[i]]
	for i, a := range set.doc.Aggregates {
		about, ok := subject(a)
		if !ok {
			continue
		}
		q := gate.LedgerQuery{TenantID: tenant, ActionType: a.ActionType, Since: now.Add(-time.Duration(a.Window))}
		if a.Scope != "tenant" {
			q.Subject = about
		}
		qs, asked = append(qs, q), append(asked, i)
	}
	totals, err := store.Aggregate(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("aggregates: %w", err)
	}
	agg := make(map[string]float64, len(totals))
	for i, total := range totals {
		a := set.doc.Aggregates[asked[i]]
		if a.Measure == "sum" {
			agg[a.Name] = total.Sum
		} else {
			agg[a.Name] = float64(total.Count)
		}
	}
	return agg, nil
}

// applyJudge asks the LLM judge and combines: it may escalate, never
// lower. A failed judgement fails closed. Under a shadow set the judge's
// verdict, like the rules', is only what would have happened.
func (s *Service) applyJudge(ctx context.Context, set *ruleSet, act *gate.Action, out outcome, d *gate.Decision) outcome {
	req := judge.Request{Reasoning: act.Reasoning}
	req.Action = string(mustJSON(map[string]any{"action_type": act.ActionType, "context_type": act.Context.ContextType(), "context": act.Context}))
	for _, e := range act.Evidence {
		content := string(e.Result)
		if e.Error != "" {
			content = "error: " + e.Error
		}
		req.Evidence = append(req.Evidence, judge.Evidence{Source: e.Tool + " #" + strconv.Itoa(e.Provenance.Sequence), Content: content})
	}
	if set != nil {
		for _, r := range set.doc.Rules {
			req.Rules = append(req.Rules, judge.Rule{ID: r.ID, Text: r.Text})
		}
	}
	jd := &gate.JudgeDecision{Model: s.o.JudgeModel, PromptVersion: JudgePromptVersion}
	d.Judge = jd
	jctx, span := s.tel.startJudge(ctx, s.o.JudgeModel)
	defer func() { endJudge(span, jd.Verdict, gate.Reason(jd.Failure)) }()
	v, err := s.o.Judge.Judge(jctx, req)
	var got outcome
	if err != nil {
		reason := gate.ReasonJudgeError
		var je *judge.Error
		if errors.As(err, &je) {
			switch je.Failure {
			case judge.Malformed:
				reason = gate.ReasonJudgeMalformed
			case judge.Refused:
				reason = gate.ReasonJudgeRefused
			}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			reason = gate.ReasonJudgeTimeout
		}
		jd.Failure = string(reason)
		got = outcome{verdict: gate.Kill, reason: reason, rationale: "the judge gave no usable verdict: " + err.Error()}
	} else {
		jd.Verdict, jd.RuleIDCited, jd.Rationale, jd.Signals = gate.Outcome(v.Verdict), v.RuleIDCited, v.Rationale, v.Signals
		got = outcome{verdict: gate.Outcome(v.Verdict), rule: v.RuleIDCited, rationale: v.Rationale}
	}
	if d.Shadow {
		if severity[got.verdict] > severity[d.Would] {
			d.Would = got.verdict
		}
		return out
	}
	if severity[got.verdict] > severity[out.verdict] {
		return got
	}
	return out
}

// subjectOf reads the subject field of a context as text.
func subjectOf(ctx map[string]any, field string) (string, bool) {
	switch v := ctx[field].(type) {
	case string:
		return v, v != ""
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// ledgerFor is the ledger entry a granted claim files: the write is now
// committed, and later aggregates count it.
func (s *Service) ledgerFor(set *ruleSet, rec gate.ActionRecord, contextType string, ctxMap map[string]any, at time.Time) []gate.LedgerEntry {
	subject, _ := subjectOf(ctxMap, set.subjectField(rec.ActionType, contextType))
	amount, _ := ctxMap["amount"].(float64)
	return []gate.LedgerEntry{{TenantID: rec.TenantID, ActionType: rec.ActionType, Subject: subject, Amount: amount,
		At: at, SessionID: rec.SessionID, ActionID: rec.ActionID}}
}

// evidenceList renders the buffered reads for rule conditions.
func evidenceList(ev []gate.Evidence) []any {
	out := make([]any, 0, len(ev))
	for _, e := range ev {
		m := map[string]any{"tool": e.Tool, "seq": int64(e.Provenance.Sequence), "error": e.Error, "truncated": e.Provenance.Truncated}
		var v any
		if len(e.Result) > 0 && json.Unmarshal(e.Result, &v) == nil {
			m["result"] = v
		}
		if len(e.Arguments) > 0 && json.Unmarshal(e.Arguments, &v) == nil {
			m["arguments"] = v
		}
		out = append(out, m)
	}
	return out
}

// verdictOf is the verdict an action's record stands for.
func verdictOf(r gate.ActionRecord) gate.Verdict {
	v := gate.Verdict{ActionID: r.ActionID, SessionID: r.SessionID, RuleIDCited: r.RuleIDCited, Rationale: r.Rationale}
	switch r.State {
	case gate.ActionPassed, gate.ActionClaimed:
		v.Verdict = gate.Pass
	case gate.ActionApproved:
		v.Verdict = gate.Pass
		v.Hold = holdStatus(r)
	case gate.ActionHeld:
		v.Verdict = gate.Hold
		v.Hold = holdStatus(r)
	case gate.ActionDenied, gate.ActionExpired:
		v.Verdict, v.Reason = gate.Kill, r.Reason
		v.Hold = holdStatus(r)
	case gate.ActionUnconfirmed:
		v.Verdict = gate.ExecutionUnconfirmed
		v.Rationale = "a claim was granted and never acknowledged; an operator must confirm whether the write ran"
	case gate.ActionExecuted:
		v.Verdict = gate.AlreadyExecuted
		at := r.AcknowledgedAt
		v.AcknowledgedAt = &at
	default:
		v.Verdict, v.Reason = gate.Kill, r.Reason
	}
	if v.Verdict == gate.Kill && v.RuleIDCited == "" && v.Reason == "" {
		v.Reason = gate.ReasonStore // a kill must say why; never reached by records this service writes
	}
	return v
}

// holdStatus renders a record's hold (nil when it was never held).
func holdStatus(r gate.ActionRecord) *gate.HoldStatus {
	if r.Verdict != gate.Hold {
		return nil
	}
	h := &gate.HoldStatus{ActionID: r.ActionID, Indefinite: r.HoldIndefinite, DecidedBy: r.DecidedBy}
	switch r.State {
	case gate.ActionHeld:
		h.State = gate.HoldPending
	case gate.ActionDenied:
		h.State = gate.HoldDenied
	case gate.ActionExpired:
		h.State = gate.HoldExpired
	default:
		h.State = gate.HoldApproved
	}
	if !r.HoldIndefinite {
		h.WindowS = r.HoldWindow.Seconds()
		at := r.HoldExpiresAt
		h.ExpiresAt = &at
	}
	if !r.DecidedAt.IsZero() {
		at := r.DecidedAt
		h.DecidedAt = &at
	}
	return h
}

func claimOf(r gate.ActionRecord) *gate.Claim {
	at := r.ClaimedAt
	return &gate.Claim{SessionID: r.SessionID, ActionID: r.ActionID, Status: gate.ClaimGranted, FencingToken: r.FencingToken, ClaimedAt: &at}
}
