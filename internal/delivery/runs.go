package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// maxRunTries bounds the compare-and-set retries of one run change: a
// run has few writers (its agent, a cancel, a reply, its dispatcher).
const maxRunTries = 16

// Limits of a run's ending.
const (
	maxReasonChars  = 200
	maxSummaryChars = gateway.MaxInputChars
)

var (
	reasonCode = regexp.MustCompile(`^[a-z0-9][a-z0-9_.:-]{0,199}$`)
	metricName = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// runState is how an agent sees a run's status.
func runState(st gateway.Status) delivery.RunState {
	switch st {
	case gateway.StatusRunning:
		return delivery.RunRunning
	case gateway.StatusWaitingUser:
		return delivery.RunWaiting
	case gateway.StatusCompleted:
		return delivery.RunCompleted
	case gateway.StatusFailed:
		return delivery.RunFailed
	case gateway.StatusCancelled:
		return delivery.RunCancelled
	}
	return delivery.RunQueued
}

// threadOf is the thread a run is in: its own when it names none.
func threadOf(r *gateway.Run) string {
	if r.ThreadID != "" {
		return r.ThreadID
	}
	return r.ID
}

// messageID is the id of the message that triggered a run's turn: the
// run's input for turn 1, a person's follow-up for each later one.
func messageID(runID string, turn int) string { return runID + "/" + strconv.Itoa(max(turn, 1)) }

func starts(r *gateway.Run) int {
	if r.Pull == nil {
		return 0
	}
	return r.Pull.Starts
}

// View is the run as its agent sees it.
func View(r gateway.Run) delivery.Run {
	v := delivery.Run{ID: r.ID, AgentID: r.InstanceID, ThreadID: threadOf(&r), State: runState(r.Status), StateReason: r.Reason,
		Version: r.Version, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt}
	if r.Pull != nil {
		v.Starts, v.Progress = r.Pull.Starts, r.Pull.Progress
	}
	return v
}

// runFor reads the agent's run runID after checking tok: an invocation
// token this service signed for the agent and this run (whatever its
// age). A missing or forged token is 403 invocation_token_invalid
// reason invalid, before anything about the run is read; a run of
// another agent is not there (404).
func (s *Service) runFor(ctx context.Context, a Agent, runID, tok string) (gateway.Run, delivery.Claims, error) {
	c, err := s.verifyToken(ctx, tok, a.ID, runID)
	if err != nil {
		return gateway.Run{}, c, tokenInvalid(delivery.TokenInvalid, "the "+delivery.InvocationTokenHeader+" is missing, or not a token of this platform for this agent and run")
	}
	run, err := s.agentRun(ctx, a, runID)
	return run, c, err
}

// agentRun reads the agent's run runID; 404 for none or another's.
func (s *Service) agentRun(ctx context.Context, a Agent, runID string) (gateway.Run, error) {
	run, err := s.runs.GetRun(ctx, a.TenantID, runID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && run.InstanceID != a.ID {
		return gateway.Run{}, notFound("no run " + strconv.Quote(bounded(runID)) + " of this agent")
	}
	return run, err
}

// active refuses a run that has ended: run-scoped calls of an ended run
// are 403 run_inactive.
func active(run gateway.Run) error {
	if run.Status.Terminal() {
		return tokenInvalid(delivery.RunInactive, "the run has ended ("+string(runState(run.Status))+")")
	}
	return nil
}

// newest refuses a token that is not the run's newest (superseded), and
// returns the newest's record. A token delivered with the same event as
// a newest that was delivered too (not renewed) counts as the newest
// once the newest has expired and the consumer it went to has
// acknowledged past its event: the newest may have been lost on its way
// or not taken (its adapter had the event stored already), no delivery
// will bring it again, and refusing the older token for good would
// leave the run queued for good. While the newest can still be used, it
// alone can; and a start stays at most once either way.
func (s *Service) newest(ctx context.Context, a Agent, c delivery.Claims, refusal string) (delivery.TokenRecord, error) {
	rec, err := s.store.NewestToken(ctx, c.RunID)
	if errors.Is(err, delivery.ErrNotFound) {
		return rec, tokenInvalid(delivery.TokenInvalid, "no token was delivered for this run")
	}
	if err != nil || rec.JTI == c.ID {
		return rec, err
	}
	if rec.EventID == c.EventID && rec.Seq > 0 && !s.o.Now().Before(rec.ExpiresAt.Add(s.o.ClockLeeway)) {
		cons, err := s.store.GetConsumer(ctx, a.ID, rec.Consumer)
		switch {
		case err == nil && cons.AckedSeq >= rec.Seq:
			return rec, nil
		case err != nil && !errors.Is(err, delivery.ErrNotFound):
			return rec, err
		}
	}
	return rec, tokenInvalid(delivery.TokenSuperseded, refusal)
}

// writeRun applies change to a copy of cur and writes it with the events
// change returns, reading the run again and retrying on a version
// conflict. An error of change is returned as it is, nothing written.
func (s *Service) writeRun(ctx context.Context, cur gateway.Run, change func(r *gateway.Run, now time.Time) ([]gateway.Event, error)) (gateway.Run, error) {
	for range maxRunTries {
		next := cur
		if cur.Pull != nil {
			p := *cur.Pull
			next.Pull = &p
		} else {
			next.Pull = &gateway.PullState{}
		}
		now := s.o.Now()
		events, err := change(&next, now)
		if err != nil {
			return cur, err
		}
		stored, _, err := s.runs.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: cur.Version, Events: events, Now: now})
		if errors.Is(err, gateway.ErrConflict) {
			if cur, err = s.runs.GetRun(ctx, cur.TenantID, cur.ID); err != nil {
				return cur, err
			}
			continue
		}
		return stored, err
	}
	return cur, fmt.Errorf("delivery: run %s: %w after %d tries", cur.ID, gateway.ErrConflict, maxRunTries)
}

// end moves r to the terminal status st with reason.
func end(r *gateway.Run, st gateway.Status, reason string, now time.Time) []gateway.Event {
	r.Status, r.Reason, r.EndedAt = st, reason, now
	r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, time.Time{}
	r.PendingInput, r.Pause = nil, nil
	return gateway.EndEvents(st, reason)
}

// GetRun returns the agent's run (also an ended one) for a token of it.
func (s *Service) GetRun(ctx context.Context, a Agent, runID, tok string) (delivery.Run, error) {
	run, _, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.Run{}, err
	}
	return View(run), nil
}

// checkUse refuses a start or resume whose billing mode and tool class
// are missing.
func checkUse(mode delivery.BillingMode, class delivery.ToolClass) error {
	var errs []delivery.FieldError
	if mode == "" {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/billing_mode_used", Detail: "required"})
	}
	if class == "" {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/tool_class_used", Detail: "required"})
	}
	if errs != nil {
		return validationFailed("say the billing mode and tool class the run will use", errs...)
	}
	return nil
}

// mismatch fails a run whose agent would use another billing mode or a
// higher tool class than its token grants, and answers 409 with the
// mismatch's code. A run that moved on meanwhile is left as it is.
func (s *Service) mismatch(ctx context.Context, run gateway.Run, c delivery.Claims, mode delivery.BillingMode, class delivery.ToolClass,
	still func(r *gateway.Run) error) error {
	code, reason, detail := "", "", ""
	switch {
	case mode != c.BillingMode:
		code, reason = delivery.CodeBillingModeMismatch, delivery.ReasonBillingModeMismatch
		detail = "the token grants billing mode " + string(c.BillingMode) + ", not " + strconv.Quote(bounded(string(mode)))
	case !c.ToolClass.Allows(class):
		code, reason = delivery.CodeToolClassMismatch, delivery.ReasonToolClassMismatch
		detail = "the token grants tool class " + string(c.ToolClass) + ", which does not allow " + strconv.Quote(bounded(string(class)))
	default:
		return nil
	}
	failed, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		// A run that moved on meanwhile (another start won) is not failed:
		// the caller hears what it moved to.
		if err := still(r); err != nil {
			return nil, err
		}
		return end(r, gateway.StatusFailed, reason, now), nil
	})
	if err != nil {
		return err
	}
	return withCurrent(conflict(code, "", detail+"; the run failed"), View(failed))
}

// StartRun starts a queued run once: with the run's newest token (an
// older one is superseded), not expired, while no start was accepted
// (else already_started), with the billing mode and a tool class the
// token grants (else the run fails, 409 with the mismatch). The run
// moves QUEUED to RUNNING with one start in one compare-and-set write,
// so of concurrent starts exactly one succeeds.
func (s *Service) StartRun(ctx context.Context, a Agent, runID, tok string, in delivery.RunStart) (_ delivery.Run, err error) {
	defer func() { s.tel.started(err) }()
	run, c, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.Run{}, err
	}
	if err := active(run); err != nil {
		return delivery.Run{}, err
	}
	if _, err := s.newest(ctx, a, c, "a newer token was delivered for this run: start nothing with this one"); err != nil {
		return delivery.Run{}, err
	}
	if s.expired(c, s.o.Now()) {
		return delivery.Run{}, tokenInvalid(delivery.TokenExpired, "the token has expired: renew it, then start with the new one")
	}
	if err := checkUse(in.BillingModeUsed, in.ToolClassUsed); err != nil {
		return delivery.Run{}, err
	}
	if utf8.RuneCountInString(in.Model) > delivery.MaxModelChars {
		return delivery.Run{}, validationFailed("the model's name is too long",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/model", Detail: "at most " + strconv.Itoa(delivery.MaxModelChars) + " characters"})
	}
	if utf8.RuneCountInString(in.ExternalSessionRef) > maxReasonChars {
		return delivery.Run{}, validationFailed("the external session reference is too long",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/external_session_ref", Detail: "at most " + strconv.Itoa(maxReasonChars) + " characters"})
	}
	if err := startable(&run); err != nil {
		return delivery.Run{}, err
	}
	if err := s.mismatch(ctx, run, c, in.BillingModeUsed, in.ToolClassUsed, startable); err != nil {
		return delivery.Run{}, err
	}
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		if err := startable(r); err != nil {
			return nil, err
		}
		r.Status, r.Reason = gateway.StatusRunning, "started by its agent"
		if r.StartedAt.IsZero() {
			r.StartedAt = now
		}
		r.Pull.Starts = 1
		if in.Model != "" {
			r.Pull.Progress.Model = in.Model
		}
		s.alive(r, now)
		return []gateway.Event{gateway.StatusEvent(gateway.StatusRunning, r.Reason)}, nil
	})
	if err != nil {
		return delivery.Run{}, err
	}
	s.noted(stored)
	s.log.InfoContext(ctx, "delivery: run started", "run_id", stored.ID, "agent_id", a.ID, "jti", c.ID)
	return View(stored), nil
}

// startable refuses a run that may not start: ended (run_inactive), or
// started already.
func startable(r *gateway.Run) error {
	if err := active(*r); err != nil {
		return err
	}
	if r.Status != gateway.StatusQueued || starts(r) > 0 {
		return withCurrent(conflict(delivery.CodeAlreadyStarted, "", "the run was started already"), View(*r))
	}
	return nil
}

// waiting refuses a run that does not wait for its agent to take a
// person's follow-up: one that ended (run_inactive), or one neither
// WAITING_USER nor queued again by a reply after it started.
func waiting(r *gateway.Run) error {
	if err := active(*r); err != nil {
		return err
	}
	if r.Status == gateway.StatusWaitingUser || r.Status == gateway.StatusQueued && starts(r) > 0 {
		return nil
	}
	return withCurrent(conflict(delivery.CodeConflict, "run_not_waiting", "the run waits for no input"), View(*r))
}

// resumable refuses a resume of the run's turn when the turn was
// resumed already: its follow-up is used once, whichever of its tokens
// comes, for as long as the run waits in that turn. The run itself
// records it, not only the used tokens' table: a follow-up's tokens are
// delivered again and renewed for as long as the run lasts, past any
// time that table keeps a record until.
func resumable(r *gateway.Run) error {
	if r.Pull != nil && r.Pull.ResumedTurn == r.Turn {
		return tokenInvalid(delivery.TokenConsumed, "the follow-up resumed the run already")
	}
	return nil
}

// ResumeRun takes a waiting run up again with the token of the event
// that answered it (its follow-up): the run's newest, unexpired, used
// once (consumed), with a billing mode and tool class the token grants.
func (s *Service) ResumeRun(ctx context.Context, a Agent, runID, tok string, in delivery.RunResume) (delivery.Run, error) {
	run, c, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.Run{}, err
	}
	if err := active(run); err != nil {
		return delivery.Run{}, err
	}
	if _, err := s.newest(ctx, a, c, "a newer token was delivered for this run: resume nothing with this one"); err != nil {
		return delivery.Run{}, err
	}
	now := s.o.Now()
	if s.expired(c, now) {
		return delivery.Run{}, tokenInvalid(delivery.TokenExpired, "the token has expired: renew it, then resume with the new one")
	}
	if err := checkUse(in.BillingModeUsed, in.ToolClassUsed); err != nil {
		return delivery.Run{}, err
	}
	if err := waiting(&run); err != nil {
		return delivery.Run{}, err
	}
	if c.MessageID != messageID(run.ID, run.Turn) || run.Turn < 2 {
		return delivery.Run{}, tokenInvalid(delivery.TokenInvalid, "the token is not the one of the run's follow-up")
	}
	if err := resumable(&run); err != nil {
		return delivery.Run{}, err
	}
	if err := s.mismatch(ctx, run, c, in.BillingModeUsed, in.ToolClassUsed, waiting); err != nil {
		return delivery.Run{}, err
	}
	// Of resumes racing with tokens of one follow-up, one passes: the key
	// is the follow-up's. The run records the resume for good (resumable);
	// the key is kept while this token can be used (its expiry and the
	// leeway), and a token of the follow-up that comes later finds the
	// run's record. A resume that consumed the key and failed to write
	// the run leaves the follow-up usable again after that.
	until := time.Unix(c.ExpiresAt, 0).Add(s.o.ClockLeeway)
	err = s.store.ConsumeToken(ctx, "resume:"+c.MessageID, until)
	if errors.Is(err, delivery.ErrExists) {
		return delivery.Run{}, tokenInvalid(delivery.TokenConsumed, "the follow-up resumed the run already")
	}
	if err != nil {
		return delivery.Run{}, err
	}
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		if err := waiting(r); err != nil {
			return nil, err
		}
		if err := resumable(r); err != nil {
			return nil, err
		}
		r.Pull.ResumedTurn = r.Turn
		r.Status, r.Reason, r.Pause, r.PendingInput = gateway.StatusRunning, "resumed by its agent", nil, nil
		s.alive(r, now)
		return []gateway.Event{gateway.StatusEvent(gateway.StatusRunning, r.Reason)}, nil
	})
	if err != nil {
		return delivery.Run{}, err
	}
	s.noted(stored)
	return View(stored), nil
}

// RenewToken answers a fresh token for the run's newest one, expired or
// not (but issued within Options.MaxRenewAge), recorded as the newest.
func (s *Service) RenewToken(ctx context.Context, a Agent, runID, tok string) (delivery.InvocationTokenGrant, error) {
	run, c, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.InvocationTokenGrant{}, err
	}
	if err := active(run); err != nil {
		return delivery.InvocationTokenGrant{}, err
	}
	rec, err := s.newest(ctx, a, c, "a newer token was delivered for this run: renew that one")
	if err != nil {
		return delivery.InvocationTokenGrant{}, err
	}
	now := s.o.Now()
	if now.Sub(time.Unix(c.IssuedAt, 0)) > s.o.MaxRenewAge {
		return delivery.InvocationTokenGrant{}, tokenInvalid(delivery.TokenInvalid, "the token is too old to renew")
	}
	grant := c
	fresh, nc, err := s.mint(ctx, grant, now)
	if err != nil {
		return delivery.InvocationTokenGrant{}, err
	}
	if err := s.store.RecordTokens(ctx, []delivery.TokenRecord{{RunID: runID, JTI: nc.ID, EventID: rec.EventID, Consumer: rec.Consumer,
		IssuedAt: time.Unix(nc.IssuedAt, 0), ExpiresAt: time.Unix(nc.ExpiresAt, 0)}}); err != nil {
		return delivery.InvocationTokenGrant{}, err
	}
	return delivery.InvocationTokenGrant{InvocationToken: fresh, ExpiresAt: nc.ExpiresAt}, nil
}

// AwaitInput moves a running run to WAITING_USER, showing the status
// line to the person it waits for; a run that waits already is answered
// as it is.
func (s *Service) AwaitInput(ctx context.Context, a Agent, runID, tok string, in delivery.RunAwaitInput) (delivery.Run, error) {
	if utf8.RuneCountInString(in.StatusLine) > delivery.MaxStatusLineChars {
		return delivery.Run{}, validationFailed("the status line is too long",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/status_line", Detail: "at most " + strconv.Itoa(delivery.MaxStatusLineChars) + " characters"})
	}
	run, _, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.Run{}, err
	}
	if err := active(run); err != nil {
		return delivery.Run{}, err
	}
	if run.Status == gateway.StatusWaitingUser {
		return View(run), nil
	}
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, _ time.Time) ([]gateway.Event, error) {
		if err := active(*r); err != nil {
			return nil, err
		}
		if r.Status != gateway.StatusRunning {
			return nil, withCurrent(conflict(delivery.CodeConflict, delivery.RunNotActive, "the run is not running"), View(*r))
		}
		line := in.StatusLine
		reason := line
		if reason == "" {
			reason = "waiting for input"
		}
		body := map[string]any{hitl.KeyHITL: hitl.InputRequest(reason, hitl.InputText, nil, ""), "content": reason}
		payload, _ := json.Marshal(body)
		pause, _ := json.Marshal(map[string]any{"type": gateway.EventHITL, "payload": json.RawMessage(payload)})
		r.Status, r.Reason, r.Pause = gateway.StatusWaitingUser, reason, pause
		r.Pull.Progress.StatusLine = line
		return []gateway.Event{gateway.StatusEvent(gateway.StatusWaitingUser, reason), {Type: gateway.EventHITL, Payload: payload}}, nil
	})
	if err != nil {
		return delivery.Run{}, err
	}
	return View(stored), nil
}

// refusals are the reasons an agent fails a run it refused before
// starting it, because its token did not pass its checks.
var refusals = map[string]bool{delivery.ReasonInvalidToken: true, delivery.ReasonBillingModeMismatch: true, delivery.ReasonToolClassMismatch: true}

// checkFinish refuses a finish that is not an ending with its fields'
// forms.
func checkFinish(in delivery.RunFinish) error {
	var errs []delivery.FieldError
	bad := func(ptr, detail string) {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: ptr, Detail: detail})
	}
	switch in.State {
	case delivery.RunCompleted:
	case delivery.RunFailed, delivery.RunCancelled:
		if in.Reason == "" {
			bad("/reason", "a failed or cancelled run says why")
		}
	default:
		bad("/state", "state is completed, failed or cancelled")
	}
	if in.Reason != "" && !reasonCode.MatchString(in.Reason) {
		bad("/reason", "a reason is a code of a-z 0-9 _ . : -, at most 200 characters")
	}
	if utf8.RuneCountInString(in.Summary) > maxSummaryChars || !utf8.ValidString(in.Summary) {
		bad("/summary", "at most "+strconv.Itoa(maxSummaryChars)+" characters of UTF-8")
	}
	if len(in.Metrics) > delivery.MaxMetrics {
		bad("/metrics", "at most "+strconv.Itoa(delivery.MaxMetrics)+" metrics")
	}
	for name, v := range in.Metrics {
		if !metricName.MatchString(name) || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("/metrics/"+escapeToken(bounded(name)), "a metric is named a-z 0-9 _ . and is a finite number")
		}
	}
	if c := in.Costs; c != nil {
		money := append([]delivery.Money{c.Total}, func() []delivery.Money {
			var m []delivery.Money
			for _, it := range c.Items {
				m = append(m, it.Amount)
			}
			return m
		}()...)
		if len(c.Items) > delivery.MaxMetrics {
			bad("/costs/items", "at most "+strconv.Itoa(delivery.MaxMetrics)+" items")
		}
		for _, m := range money {
			if m.AmountMicros < 0 || !currencyRE.MatchString(m.Currency) {
				bad("/costs", "amounts are not negative, in an ISO 4217 currency")
				break
			}
		}
	}
	if errs != nil {
		return validationFailed("the finish breaks "+strconv.Itoa(len(errs))+" rule(s)", errs...)
	}
	return nil
}

// FinishRun ends the run: completed (a run that was started), failed or
// cancelled, with its reason, its summary as the run's output, and its
// metrics and cost. An agent that refuses a run it never started (its
// token failed the agent's own checks: failed with
// invalid_invocation_token, billing_mode_mismatch or
// tool_class_mismatch) may fail it with the token it has, even one that
// is not valid: it is the run's own agent (its API token says so), and
// it gives up the run rather than acting for it.
func (s *Service) FinishRun(ctx context.Context, a Agent, runID, tok string, in delivery.RunFinish) (delivery.Run, error) {
	if err := checkFinish(in); err != nil {
		return delivery.Run{}, err
	}
	run, _, err := s.runFor(ctx, a, runID, tok)
	if p := (*delivery.Problem)(nil); errors.As(err, &p) && p.Code == delivery.CodeInvocationTokenInvalid &&
		in.State == delivery.RunFailed && refusals[in.Reason] {
		if run, err = s.agentRun(ctx, a, runID); err == nil && (run.Status != gateway.StatusQueued || starts(&run) > 0) {
			err = p // only a refusal of a run never started goes without a token
		}
	}
	if err != nil {
		return delivery.Run{}, err
	}
	if err := active(run); err != nil {
		return delivery.Run{}, err
	}
	status := map[delivery.RunState]gateway.Status{delivery.RunCompleted: gateway.StatusCompleted,
		delivery.RunFailed: gateway.StatusFailed, delivery.RunCancelled: gateway.StatusCancelled}[in.State]
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		if err := active(*r); err != nil {
			return nil, err
		}
		if status == gateway.StatusCompleted && starts(r) == 0 {
			return nil, withCurrent(conflict(delivery.CodeConflict, delivery.RunNotActive, "a run that was never started cannot complete"), View(*r))
		}
		var events []gateway.Event
		if in.Summary != "" {
			r.Output = in.Summary
			if status == gateway.StatusCompleted {
				final, _ := json.Marshal(map[string]string{"content": in.Summary})
				events = append(events, gateway.Event{Type: gateway.EventMessageFinal, Payload: final})
			}
		}
		if len(in.Metrics) > 0 {
			m := cloneMetrics(r.Pull.Progress.Metrics)
			for name, v := range in.Metrics {
				m[name] = v
			}
			r.Pull.Progress.Metrics = m
		}
		if in.Costs != nil {
			total := in.Costs.Total
			total.IsEstimate = true
			r.Pull.Progress.Cost = &total
		}
		reason := in.Reason
		if reason == "" {
			reason = "completed by its agent"
		}
		return append(events, end(r, status, reason, now)...), nil
	})
	if err != nil {
		return delivery.Run{}, err
	}
	return View(stored), nil
}

func cloneMetrics(m map[string]float64) map[string]float64 {
	c := make(map[string]float64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// UpdateRun applies a patch to the progress of a started run that has
// not ended (else 409 conflict run_not_active) at the patch's base
// version (else 409 base_version_conflict with the current run): only
// the paths of delivery.PatchPaths (else 400 validation_failed,
// patch_path_forbidden at /ops/<i>). A new status line is shown on the
// run's event stream.
func (s *Service) UpdateRun(ctx context.Context, a Agent, runID, tok string, p delivery.RunPatch) (delivery.RunPatchResult, error) {
	if errs := delivery.CheckPatch(p.Ops); errs != nil {
		return delivery.RunPatchResult{}, validationFailed("the patch touches what it may not", errs...)
	}
	run, _, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.RunPatchResult{}, err
	}
	stored, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
		if r.Status.Terminal() || r.Pull.Starts == 0 {
			return nil, withCurrent(conflict(delivery.CodeConflict, delivery.RunNotActive, "the run is not active: patch a started run that has not ended"), View(*r))
		}
		if r.Version != p.BaseVersion {
			return nil, withCurrent(conflict(delivery.CodeBaseVersionConflict, "", "the run is at version "+strconv.FormatInt(r.Version, 10)+
				", not "+strconv.FormatInt(p.BaseVersion, 10)+": rebase on current"), View(*r))
		}
		before := r.Pull.Progress.StatusLine
		if errs := delivery.ApplyPatch(&r.Pull.Progress, p.Ops); errs != nil {
			return nil, validationFailed("the patch's values break its paths' rules", errs...)
		}
		s.alive(r, now)
		if line := r.Pull.Progress.StatusLine; line != before && line != "" {
			payload, _ := json.Marshal(map[string]string{"message": line})
			return []gateway.Event{{Type: gateway.EventStatus, Payload: payload}}, nil
		}
		return nil, nil
	})
	if err != nil {
		return delivery.RunPatchResult{}, err
	}
	s.noted(stored)
	return delivery.RunPatchResult{Version: stored.Version}, nil
}

// bounded cuts what an answer repeats of a caller's input.
func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// escapeToken escapes a JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
