package adapter

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

// runTask works one run: it prepares, starts (or resumes) and executes
// it, one step at a time. At most one task works a run.
type runTask struct {
	a     *Adapter
	runID string

	mu      sync.Mutex
	token   string // the run's newest token
	jti     string
	pokec   chan struct{}
	state   delivery.RunState // the latest the platform told, if any
	cancel  context.CancelCauseFunc
	reason  string // why the platform cancelled the run
	stopped bool
	started bool
	handle  *Run
	last    string // the event of the entry worked last
	// recovered: the task takes up an entry a previous process
	// accepted, which may have sent a start whose answer it never saw.
	recovered bool
}

func (t *runTask) poke() {
	select {
	case t.pokec <- struct{}{}:
	default:
	}
}

func (t *runTask) currentToken() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.token
}

func (t *runTask) setToken(tok InboxToken) {
	t.mu.Lock()
	t.token, t.jti = tok.Value.Reveal(), tok.JTI
	t.mu.Unlock()
}

func (t *runTask) stateChanged(s delivery.RunState) {
	t.mu.Lock()
	t.state = s
	t.mu.Unlock()
	t.poke()
}

// cancelIfStarted cancels the execution of a started run, reporting
// whether there was one. Without one, the task is stopped at once, under
// the lock execute starts an execution under: an execution about to
// begin does not.
func (t *runTask) cancelIfStarted(reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || t.cancel == nil {
		t.stopped = true
		return false
	}
	t.reason = reason
	t.cancel(errRunCancelled)
	return true
}

// stop ends a task that did not start its run.
func (t *runTask) stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	t.poke()
}

func (t *runTask) isStopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

var errRunCancelled = errors.New("adapter: the platform cancelled the run")

// errCheckUnavailable marks a token that could not be checked for now
// (the key set could not be fetched): the check is tried again.
var errCheckUnavailable = errors.New("adapter: the token cannot be checked now")

// schedule makes sure a task works the entry's run: a new one, or the
// one already there (woken; a follow-up for a running run goes to the
// handler).
func (a *Adapter) schedule(ctx context.Context, e InboxEntry) { a.scheduleTask(ctx, e, false) }

// scheduleTask is schedule; recovered marks an entry a previous process
// left accepted.
func (a *Adapter) scheduleTask(ctx context.Context, e InboxEntry, recovered bool) {
	a.mu.Lock()
	if t, ok := a.runs[e.RunID]; ok {
		t.mu.Lock()
		running := t.started && t.handle != nil && !t.handle.awaitingInput()
		t.mu.Unlock()
		a.mu.Unlock()
		if running && e.Type != delivery.EventInvocation {
			a.tasks.Go(func() { a.followup(ctx, t, e) })
			return
		}
		t.poke()
		return
	}
	t := &runTask{a: a, runID: e.RunID, pokec: make(chan struct{}, 1), recovered: recovered}
	a.runs[e.RunID] = t
	a.mu.Unlock()
	a.tasks.Go(func() {
		defer func() {
			a.mu.Lock()
			if a.runs[t.runID] == t {
				delete(a.runs, t.runID)
			}
			a.mu.Unlock()
			// An entry accepted while the task was ending found it still
			// here and only poked it (the answer to a run that just began
			// to wait): a new task works it.
			if ctx.Err() == nil {
				if e, ok := t.next(ctx); ok && e.EventID != t.lastEntry() {
					a.schedule(ctx, e)
				}
			}
		}()
		t.work(ctx)
	})
}

func (t *runTask) lastEntry() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// next is the run's entry to work from: the latest accepted one.
func (t *runTask) next(ctx context.Context) (InboxEntry, bool) {
	entries, err := t.a.inbox.ByRun(ctx, t.runID)
	if err != nil {
		t.a.log.Error("adapter: reading the inbox failed", "run_id", t.runID, "err", err)
		return InboxEntry{}, false
	}
	sortEntries(entries)
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].State == InboxAccepted {
			return entries[i], true
		}
	}
	return InboxEntry{}, false
}

// maxRenewals bounds the renewals of one start: a renewed token may
// expire again before it is used (the clock jumped, the start waited),
// and is renewed again; a platform whose renewed tokens are expired when
// they come (its clock far from the adapter's) is not asked forever.
const maxRenewals = 3

// work starts or resumes the run from its latest accepted entry, and
// executes it once the platform said yes. Nothing is retried after a
// start: a run that fails stays failed.
func (t *runTask) work(ctx context.Context) {
	a := t.a
	prepared, renewals := false, 0
	// unsure is the key (the id of the token it is made of) of a start
	// of the entry unsureOf whose answer did not come: the platform may
	// have taken it. It is sent again with that key before anything
	// else, and the platform answers a repeated key with its first
	// answer, whatever token comes with it now; a start with a new key
	// would find the run started, by this adapter, never executed.
	unsure, unsureOf := "", ""
	// A previous process may have sent the start of what it left
	// accepted, with the stored token, and stopped before the answer.
	recovering := t.recovered
	for ctx.Err() == nil && !t.isStopped() {
		entry, ok := t.next(ctx)
		if !ok {
			return
		}
		t.mu.Lock()
		t.last = entry.EventID
		t.mu.Unlock()
		if recovering {
			recovering = false
			unsure, unsureOf = entry.Token.JTI, entry.EventID
		}
		if unsureOf != entry.EventID {
			unsure = ""
		}
		log := a.log.With("run_id", t.runID, "event_id", entry.EventID)
		inv, check, err := a.reread(ctx, entry)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, errCheckUnavailable) {
				log.Warn("adapter: the run's token cannot be checked now; trying again", "err", err)
				if a.sleep(ctx, a.set.RetryBackoffCap) != nil {
					return
				}
				continue
			}
			log.Warn("adapter: a stored event cannot be read again; it is closed", "err", err)
			_ = a.inbox.SetState(ctx, entry.EventID, InboxAccepted, InboxClosed, "unreadable")
			continue
		}
		t.setToken(entry.Token)
		bound := WithRun(ctx, t.runID, t.currentToken)
		resume := entry.Type != delivery.EventInvocation
		if !resume && !prepared {
			if err := safeCall(func() error { return a.h.Prepare(bound, inv) }); err != nil {
				if ctx.Err() != nil {
					return
				}
				log.Warn("adapter: preparing a run failed; it is refused", "err", err)
				t.refuseAndClose(ctx, entry, delivery.ReasonAdapterError)
				return
			}
			prepared = true
			continue // a newer token may have come meanwhile
		}
		act := a.actual(ctx, inv)
		if v := grants(check.Claims, act); v != "" {
			log.Warn("adapter: the agent would use more than the token grants; the run is refused", "reason", v)
			t.refuseAndClose(ctx, entry, v)
			return
		}
		if a.expired(entry.Token) && unsure == "" {
			if renewals >= maxRenewals {
				log.Warn("adapter: the renewed token is expired too; the run is left to the platform")
				return
			}
			renewals++
			if err := t.renew(ctx, entry, inv); err != nil {
				switch {
				case refusedFor(err, delivery.TokenSuperseded):
					// A newer token is on its way: wait for it.
					renewals--
					if !t.awaitNewer(ctx, entry, log) {
						return
					}
				case t.refused(ctx, entry, err, log):
					return
				default:
					if err := a.sleep(ctx, a.set.RetryBackoffCap); err != nil {
						return
					}
					renewals--
				}
			}
			continue
		}
		key := entry.Token.JTI
		if unsure != "" {
			key = unsure
		}
		run, err := t.start(ctx, entry, act, resume, key)
		unsure = ""
		if err == nil {
			// The platform started the run: that is recorded even when the
			// adapter is stopping, or the next process would start it
			// again (answered from the start's key) and execute it twice.
			kept := context.WithoutCancel(ctx)
			if err := a.inbox.SetState(kept, entry.EventID, InboxAccepted, InboxStarted, ""); err != nil {
				log.Warn("adapter: a started run could not be recorded; it is not executed here", "err", err)
				return
			}
			if resume {
				t.closeWaiting(kept, entry)
			}
			if ctx.Err() != nil {
				return // stopping: the next process ends the run as interrupted
			}
			t.execute(ctx, run, inv, entry)
			return
		}
		switch {
		case refusedFor(err, delivery.TokenExpired) && renewals < maxRenewals:
			renewals++
			if rerr := t.renew(ctx, entry, inv); rerr != nil && !refusedFor(rerr, delivery.TokenSuperseded) && t.refused(ctx, entry, rerr, log) {
				return
			}
		case refusedFor(err, delivery.TokenSuperseded):
			if !t.awaitNewer(ctx, entry, log) {
				return
			}
		case t.refused(ctx, entry, err, log):
			return
		default:
			if ctx.Err() != nil {
				return
			}
			log.Warn("adapter: starting a run failed for now; trying again with the same key", "err", err)
			unsure, unsureOf = key, entry.EventID
			if a.sleep(ctx, a.set.RetryBackoffCap) != nil {
				return
			}
		}
	}
}

// refused handles the answers that end an entry: it reports whether the
// task is done with it.
func (t *runTask) refused(ctx context.Context, entry InboxEntry, err error, log interface{ Warn(string, ...any) }) bool {
	switch {
	case refusedFor(err, delivery.TokenInvalid):
		log.Warn("adapter: the platform refused the run's token; the run is refused")
		t.refuseAndClose(ctx, entry, delivery.ReasonInvalidToken)
	case errors.Is(err, ErrAlreadyStarted), errors.Is(err, ErrBillingModeMismatch), errors.Is(err, ErrToolClassMismatch),
		errors.Is(err, ErrAgentInvocationDenied), errors.Is(err, ErrRunInactive), errors.Is(err, ErrRunNotActive),
		errors.Is(err, ErrInvocationTokenInvalid), errors.Is(err, ErrNotFound), errors.Is(err, ErrBadRequest),
		// A resume of a run that waits no more (resumed by another
		// adapter of the agent): 409 conflict, reason run_not_waiting.
		problemCode(err) == delivery.CodeConflict:
		log.Warn("adapter: the platform will not start the run here; its entry is closed", "err", err)
		_ = t.a.inbox.SetState(ctx, entry.EventID, InboxAccepted, InboxClosed, "not started: "+problemCode(err))
	default:
		return false
	}
	return true
}

// awaitNewer waits, after a start refused as superseded, for the run's
// newer token (a redelivery) or for news that the run moved on; it
// reports whether to try again. It tries again after
// Settings.RetryBackoffCap regardless: the newer delivery may never come
// (lost on its way after this adapter acknowledged the event, which the
// platform then takes the older token for), and another adapter's start
// is not always told.
func (t *runTask) awaitNewer(ctx context.Context, entry InboxEntry, log interface{ Warn(string, ...any) }) bool {
	a := t.a
	run, err := a.api.GetRun(WithRun(ctx, t.runID, t.currentToken), t.runID)
	if err == nil && run.State != delivery.RunQueued && run.State != delivery.RunWaiting {
		_ = a.inbox.SetState(ctx, entry.EventID, InboxAccepted, InboxClosed, "superseded: the run is "+string(run.State))
		return false
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	again := make(chan struct{})
	go func() {
		if a.sleep(wctx, a.set.RetryBackoffCap) == nil {
			close(again)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-again:
			return true
		case <-t.pokec:
		}
		if t.isStopped() {
			return false
		}
		t.mu.Lock()
		st := t.state
		t.mu.Unlock()
		if st != "" && st != delivery.RunQueued && st != delivery.RunWaiting {
			_ = a.inbox.SetState(ctx, entry.EventID, InboxAccepted, InboxClosed, "superseded: the run is "+string(st))
			return false
		}
		if cur, err := a.inbox.Get(ctx, entry.EventID); err == nil && cur.Token.JTI != entry.Token.JTI {
			return true
		}
		if next, ok := t.next(ctx); ok && next.EventID != entry.EventID {
			return true
		}
	}
}

// start sends startRun (or resumeRun) with the entry's token, keyed by
// the id of a token (the entry's, or the one of a start whose answer
// was lost), so a start whose answer was lost is answered again, not
// refused.
func (t *runTask) start(ctx context.Context, entry InboxEntry, act Actual, resume bool, keyJTI string) (delivery.Run, error) {
	bound := WithRun(ctx, t.runID, t.currentToken)
	if resume {
		return t.a.api.ResumeRun(WithIdempotencyKey(bound, startKey("resume", keyJTI)), t.runID,
			delivery.RunResume{BillingModeUsed: act.BillingMode, ToolClassUsed: act.ToolClass})
	}
	body := delivery.RunStart{BillingModeUsed: act.BillingMode, ToolClassUsed: act.ToolClass}
	if so, ok := t.a.h.(StartOptioner); ok {
		o := so.StartOptions(ctx, t.runID)
		body.Model, body.ExternalSessionRef, body.BillingEvidence = o.Model, o.ExternalSessionRef, o.BillingEvidence
	}
	return t.a.api.StartRun(WithIdempotencyKey(bound, startKey("start", keyJTI)), t.runID, body)
}

// StartOptions are what an agent tells the platform when a run starts.
type StartOptions struct {
	Model              string
	ExternalSessionRef string
	BillingEvidence    *delivery.BillingEvidence
}

// StartOptioner is a Handler that tells the platform more when a run
// starts.
type StartOptioner interface {
	StartOptions(ctx context.Context, runID string) StartOptions
}

// renew asks for a fresh token for the run and stores it as the entry's
// newest. The request is keyed by the renewed token's id: a renewal whose
// answer was lost is answered again with the token it made (which
// superseded the renewed one), not refused as superseded.
func (t *runTask) renew(ctx context.Context, entry InboxEntry, inv *Invocation) error {
	a := t.a
	grant, err := a.api.RenewInvocationToken(WithIdempotencyKey(WithRun(ctx, t.runID, t.currentToken),
		startKey("renew", entry.Token.JTI)), t.runID)
	if err != nil {
		return err
	}
	ev, _ := entry.Event()
	want, err := ExpectationFor(ev, a.cfg.AgentID, a.issuer)
	if err != nil {
		return err
	}
	check, err := a.recheck.Check(ctx, grant.InvocationToken, want, a.actual(ctx, inv))
	if err != nil {
		return err
	}
	if check.Verdict != VerdictValid && check.Verdict != VerdictExpired {
		return fmt.Errorf("adapter: the renewed token is %s", check.Verdict)
	}
	tok := InboxToken{Value: secret.New(grant.InvocationToken), JTI: check.JTI, IssuedAt: check.IssuedAt, ExpiresAt: check.ExpiresAt}
	if _, err := a.inbox.ReplaceToken(ctx, entry.EventID, tok); err != nil {
		return err
	}
	t.setToken(tok)
	if check.Verdict == VerdictExpired {
		// The answer of an earlier renewal, come again: it is the run's
		// newest token, and is renewed in turn.
		return errRenewedExpired
	}
	return nil
}

// errRenewedExpired: a renewal answered an expired token (the first
// answer of a renewal asked again long after).
var errRenewedExpired = errors.New("adapter: the renewed token is expired")

// reread decodes a stored entry and reads its token's claims again.
func (a *Adapter) reread(ctx context.Context, e InboxEntry) (*Invocation, TokenCheck, error) {
	ev, err := e.Event()
	if err != nil {
		return nil, TokenCheck{}, err
	}
	want, err := ExpectationFor(ev, a.cfg.AgentID, a.issuer)
	if err != nil {
		return nil, TokenCheck{}, err
	}
	inv := invocationOf(ev, want)
	check, err := a.recheck.Check(ctx, e.Token.Value.Reveal(), want, Actual{BillingMode: delivery.BillingUnknown})
	if err != nil {
		return nil, TokenCheck{}, fmt.Errorf("%w: %w", errCheckUnavailable, err)
	}
	if check.Claims == nil {
		return nil, TokenCheck{}, fmt.Errorf("the stored token is %s", check.Verdict)
	}
	inv.Claims = *check.Claims
	return inv, check, nil
}

// grants says which refusal reason, if any, the actual billing and tool
// class give against the token's claims.
func grants(c *delivery.Claims, act Actual) string {
	if c == nil {
		return delivery.ReasonInvalidToken
	}
	if act.BillingMode == delivery.BillingUnknown || act.BillingMode != c.BillingMode {
		return delivery.ReasonBillingModeMismatch
	}
	if !c.ToolClass.Allows(act.ToolClass) {
		return delivery.ReasonToolClassMismatch
	}
	return ""
}

// refuseAndClose ends the run with reason and closes its entry.
func (t *runTask) refuseAndClose(ctx context.Context, entry InboxEntry, reason string) {
	if err := t.a.refuse(ctx, t.runID, entry.Token.Value.Reveal(), reason); err != nil {
		t.a.log.Warn("adapter: ending a refused run failed", "run_id", t.runID, "err", err)
	}
	_ = t.a.inbox.SetState(ctx, entry.EventID, InboxAccepted, InboxClosed, reason)
}

// closeWaiting closes the entries a resumed run waited on.
func (t *runTask) closeWaiting(ctx context.Context, resumedBy InboxEntry) {
	entries, err := t.a.inbox.ByRun(ctx, t.runID)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.State == InboxWaiting && e.EventID != resumedBy.EventID {
			_ = t.a.inbox.SetState(ctx, e.EventID, InboxWaiting, InboxClosed, "resumed")
		}
	}
}

// execute runs the handler on a started run and ends the run as the
// handler left it.
func (t *runTask) execute(ctx context.Context, run delivery.Run, inv *Invocation, entry InboxEntry) {
	a := t.a
	execCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	bound := WithRun(execCtx, t.runID, t.currentToken)
	h := &Run{ID: t.runID, ThreadID: run.ThreadID, Invocation: inv, a: a, t: t, entry: entry.EventID,
		done: execCtx.Done()}
	h.patcher = newPatcher(WithRun(ctx, t.runID, t.currentToken), t.runID, run.Version, a.api, a.clock, a.set, a.log)
	t.mu.Lock()
	if t.stopped {
		// Cancelled after the start and before this: the platform ended
		// the run when it was cancelled, and nothing of it is done.
		t.mu.Unlock()
		_ = a.inbox.SetState(ctx, entry.EventID, InboxStarted, InboxClosed, "cancelled before its execution")
		return
	}
	t.started, t.cancel, t.handle = true, cancel, h
	t.mu.Unlock()
	go h.patcher.loop(execCtx)

	err := safeCall(func() error { return a.h.Execute(bound, h) })
	t.mu.Lock()
	reason := t.reason
	t.mu.Unlock()
	cancel(nil)
	if ctx.Err() != nil && reason == "" {
		return // the adapter stops: the next one ends the run as interrupted
	}
	h.mu.Lock()
	finished, waiting := h.finished, h.waiting
	h.mu.Unlock()
	switch {
	case finished || waiting:
		return
	case reason != "":
		t.finish(ctx, h, delivery.RunFinish{State: delivery.RunCancelled, Reason: delivery.ReasonCancelled})
	case err == nil:
		t.finish(ctx, h, delivery.RunFinish{State: delivery.RunCompleted})
	default:
		why := delivery.ReasonAdapterError
		var rf *RuntimeFailure
		if errors.As(err, &rf) {
			why = delivery.ReasonRuntimeError
		}
		a.log.Warn("adapter: a run failed", "run_id", t.runID, "reason", why, "err", err)
		t.finish(ctx, h, delivery.RunFinish{State: delivery.RunFailed, Reason: why})
	}
}

// finish ends the run as its execution left it, trying again for as
// long as the platform cannot take it (the client's own tries may run
// out): a run whose end is never reported stays running for good. A
// repeat of a finish the platform took is answered run_inactive, which
// Run.finish takes as done.
func (t *runTask) finish(ctx context.Context, h *Run, f delivery.RunFinish) {
	for {
		err := h.finish(ctx, f)
		if err == nil || ctx.Err() != nil {
			return
		}
		// A proof refused twice (a nonce gone stale again while the
		// first repeat went) is for now too.
		if !IsTransient(err) && !errors.Is(err, ErrUnauthenticated) {
			t.a.log.Warn("adapter: the platform refused the run's end", "run_id", t.runID, "state", f.State, "err", err)
			return
		}
		t.a.log.Warn("adapter: ending a run failed for now; trying again", "run_id", t.runID, "err", err)
		if t.a.sleep(ctx, t.a.set.RetryBackoffCap) != nil {
			return
		}
	}
}

// followup hands a follow-up of a running run to the handler, once.
func (a *Adapter) followup(ctx context.Context, t *runTask, e InboxEntry) {
	t.mu.Lock()
	h := t.handle
	t.mu.Unlock()
	reason := "no follow-up handler"
	if fh, ok := a.h.(FollowupHandler); ok && h != nil {
		inv, _, err := a.reread(ctx, e)
		if err == nil {
			err = safeCall(func() error { return fh.OnFollowup(WithRun(ctx, t.runID, t.currentToken), h, inv) })
		}
		reason = "delivered to the running run"
		if err != nil {
			a.log.Warn("adapter: the handler failed on a follow-up", "run_id", t.runID, "err", err)
		}
	}
	_ = a.inbox.SetState(ctx, e.EventID, InboxAccepted, InboxClosed, reason)
}

// safeCall runs a handler's function, turning a panic into an error.
func safeCall(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("adapter: the handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

// refusedFor reports whether err is invocation_token_invalid for reason.
func refusedFor(err error, reason string) bool {
	return errors.Is(err, ErrInvocationTokenInvalid) && problemReason(err) == reason
}

func problemReason(err error) string {
	var pe *ProblemError
	if errors.As(err, &pe) {
		return pe.Reason()
	}
	return ""
}

func problemCode(err error) string {
	var pe *ProblemError
	if errors.As(err, &pe) {
		return pe.Code()
	}
	return "error"
}

// Run is a started run, as the handler works it. Every call it makes
// carries the run's newest token.
type Run struct {
	ID         string
	ThreadID   string
	Invocation *Invocation

	a       *Adapter
	t       *runTask
	entry   string
	patcher *Patcher
	done    <-chan struct{}

	mu       sync.Mutex
	finished bool
	waiting  bool
	// awaiting is set from the start of AwaitInput on (until it fails):
	// an answer that comes while it is under way resumes the run.
	awaiting bool
}

func (r *Run) awaitingInput() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.awaiting
}

// Version is the run's version as the adapter last saw it.
func (r *Run) Version() int64 { return r.patcher.Version() }

// TokenJTI is the id of the run's newest token.
func (r *Run) TokenJTI() string {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.t.jti
}

// Patch is the run's progress reporter.
func (r *Run) Patch() *Patcher { return r.patcher }

// Done is closed when the run is cancelled (the platform asked, or the
// adapter stops).
func (r *Run) Done() <-chan struct{} { return r.done }

// CancelReason is why the platform cancelled the run, "" while it has
// not.
func (r *Run) CancelReason() string {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.t.reason
}

func (r *Run) bind(ctx context.Context) context.Context { return WithRun(ctx, r.ID, r.t.currentToken) }

// LoadContext reads the run's context: the triggering message and the
// thread before it.
func (r *Run) LoadContext(ctx context.Context) (delivery.RunContext, error) {
	return r.a.api.GetRunContext(r.bind(ctx), r.ID)
}

// Reply sends a message to the run's thread through the outbox: stored
// before it is sent, sent once however often it is tried. It returns the
// message's client id.
func (r *Run) Reply(ctx context.Context, contentMD string) (string, error) {
	return r.a.outbox.SendMessage(ctx, delivery.MessageCreate{ThreadID: r.ThreadID, RunID: r.ID, ContentMD: contentMD,
		ReplyToMessageID: r.Invocation.MessageID})
}

// AwaitInput moves the run to waiting for a person's answer; the
// handler then returns, and the answer resumes the run with a new
// Execute.
func (r *Run) AwaitInput(ctx context.Context, statusLine string) error {
	r.sendPending(ctx)
	// The platform may wait, and the person answer, before this call
	// returns: the answer is a resume from now on, never a follow-up of
	// the running execution.
	r.mu.Lock()
	r.awaiting = true
	r.mu.Unlock()
	if _, err := r.a.api.AwaitRunInput(r.bind(ctx), r.ID, delivery.RunAwaitInput{StatusLine: statusLine}); err != nil {
		r.mu.Lock()
		r.awaiting = false
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	r.waiting = true
	r.mu.Unlock()
	return r.a.inbox.SetState(ctx, r.entry, InboxStarted, InboxWaiting, "")
}

// sendPending sends what the run's patcher holds and the replies the
// outbox holds for its thread, so that they reach the run before it
// waits or ends; what stays pending goes later, in order.
func (r *Run) sendPending(ctx context.Context) {
	if err := r.patcher.Flush(ctx); err != nil && !errors.Is(err, ErrPatcherStopped) {
		r.a.log.Warn("adapter: sending a run's progress failed", "run_id", r.ID, "err", err)
	}
	if err := r.a.outbox.flushThread(ctx, r.ThreadID); err != nil {
		r.a.log.Warn("adapter: sending a run's replies failed; they go later", "run_id", r.ID, "err", err)
	}
}

// Finish ends the run as f says. What the patcher and the outbox hold
// for it is sent first.
// A run the platform ended already is not an error.
func (r *Run) Finish(ctx context.Context, f delivery.RunFinish) error { return r.finish(ctx, f) }

func (r *Run) finish(ctx context.Context, f delivery.RunFinish) error {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	r.sendPending(ctx)
	_, err := r.a.api.FinishRun(r.bind(ctx), r.ID, f)
	if errors.Is(err, ErrRunInactive) || errors.Is(err, ErrRunNotActive) {
		r.a.log.Info("adapter: the run had ended already", "run_id", r.ID)
		err = nil
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	r.patcher.stop()
	entries, _ := r.a.inbox.ByRun(ctx, r.ID)
	for _, e := range entries {
		if e.State == InboxStarted || e.State == InboxWaiting {
			_ = r.a.inbox.SetState(ctx, e.EventID, e.State, InboxClosed, "finished: "+string(f.State))
		}
	}
	return nil
}

// tokenOf is the newest token of a run the adapter works, for the
// outbox's sends.
func (a *Adapter) tokenOf(runID string) string {
	a.mu.Lock()
	t := a.runs[runID]
	a.mu.Unlock()
	if t != nil {
		return t.currentToken()
	}
	entries, err := a.inbox.ByRun(context.Background(), runID)
	if err != nil || len(entries) == 0 {
		return ""
	}
	newest := entries[0]
	for _, e := range entries[1:] {
		if e.Token.IssuedAt.After(newest.Token.IssuedAt) {
			newest = e
		}
	}
	return newest.Token.Value.Reveal()
}
