package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

// ErrStopped is returned by Run when the platform closed the gateway for
// good (the CloseReason says why: the consumer was taken over, the
// token revoked, …): reconnecting would not help.
var ErrStopped = errors.New("adapter: the platform closed the connection for good")

// Run receives the agent's events and works its runs until ctx ends or
// the platform closes the gateway for good. It first ends the runs a
// previous process left started or waiting (failed, reason
// interrupted: a started run is never retried) and starts again the
// ones it had accepted. It returns after every run task it began ended;
// a platform's close for good winds the tasks down as a cancelled ctx
// does.
func (a *Adapter) Run(ctx context.Context) (CloseReason, error) {
	defer a.tasks.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	disc, err := a.api.Discover(ctx)
	if err != nil {
		return CloseReason{}, fmt.Errorf("adapter: discovery: %w", err)
	}
	jwksURL, err := a.api.JWKSURL(disc)
	if err != nil {
		return CloseReason{}, err
	}
	keys, err := NewJWKSCache(jwksURL, &JWKSOptions{Clock: a.clock, Settings: &a.set, Client: a.httpClient})
	if err != nil {
		return CloseReason{}, err
	}
	a.issuer = disc.Issuer
	vo := &VerifierOptions{Clock: a.clock, Settings: &a.set}
	if a.cfg.CheckTriggerers {
		a.allow = &triggerers{api: a.api, agentID: a.cfg.AgentID}
		vo.AllowList = a.allow
	}
	a.recheck = NewVerifier(keys, vo)
	withReplay := *vo
	withReplay.JTIs = a.inbox
	a.verify = NewVerifier(keys, &withReplay)

	if err := a.recover(ctx); err != nil {
		return CloseReason{}, err
	}
	if a.src == nil {
		if a.src, err = a.newSource(disc); err != nil {
			return CloseReason{}, err
		}
	} else if hs, ok := a.src.(HeartbeatSource); ok {
		hs.SetHeartbeat(a.heartbeat)
	}
	defer a.src.Close()
	a.startAcks(ctx)
	a.tasks.Go(func() { a.outbox.run(ctx) })
	for {
		events, err := a.src.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return CloseReason{}, nil
			}
			var cr CloseReason
			if errors.As(err, &cr) {
				return cr, fmt.Errorf("%w: %w", ErrStopped, err)
			}
			return CloseReason{}, err
		}
		a.process(ctx, events)
		a.mu.Lock()
		seq, ok := a.acks.ackable()
		a.mu.Unlock()
		if !ok {
			continue
		}
		if err := a.src.Ack(ctx, seq); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("adapter: acknowledging failed; the events come again", "seq", seq, "err", err)
			}
			continue
		}
		a.mu.Lock()
		a.acks.acked(seq)
		a.mu.Unlock()
	}
}

// newSource makes the gateway or polling source, heartbeats included.
func (a *Adapter) newSource(disc delivery.Discovery) (Source, error) {
	if a.cfg.Polling {
		return NewPollingSource(a.api, a.cfg.AgentID, a.cfg.Consumer, &PollingOptions{Heartbeat: a.heartbeat})
	}
	return NewGatewaySource(a.cfg.BaseURL, disc.Gateway, &GatewayOptions{AgentID: a.cfg.AgentID, Consumer: a.cfg.Consumer,
		Credentials: a.cfg.Credentials, Heartbeat: a.heartbeat, Clock: a.clock, Settings: &a.set, Logger: a.log,
		Rand: lockedFloat(child(a.rnd)), HTTPClient: a.httpClient, UserAgent: a.cfg.Adapter.Name})
}

// heartbeat is the agent's state for the platform: its active runs are
// the runs of its started and waiting entries.
func (a *Adapter) heartbeat() delivery.Heartbeat {
	var active []string
	if entries, err := a.inbox.List(context.Background(), InboxStarted, InboxWaiting); err == nil {
		seen := map[string]bool{}
		for _, e := range entries {
			if e.RunID != "" && !seen[e.RunID] {
				seen[e.RunID] = true
				active = append(active, e.RunID)
			}
		}
	}
	hb, err := BuildHeartbeat(HeartbeatInput{AdapterName: a.cfg.Adapter.Name, AdapterVersion: a.cfg.Adapter.Version,
		RuntimeName: a.cfg.Runtime.Name, Capabilities: a.cfg.Capabilities, ActiveRuns: active})
	if err != nil {
		a.log.Warn("adapter: the heartbeat is refused; sending a plain one", "err", err)
		return delivery.Heartbeat{Status: delivery.HeartbeatOK}
	}
	return hb
}

// recover takes up what a previous process left: the runs of started
// and waiting entries were interrupted and are never retried (each is
// ended as failed, reason interrupted, and its entry closed), accepted
// ones are started again.
func (a *Adapter) recover(ctx context.Context) error {
	left, err := a.inbox.List(ctx, InboxStarted, InboxWaiting)
	if err != nil {
		return fmt.Errorf("adapter: reading the inbox: %w", err)
	}
	for _, e := range left {
		a.log.Info("adapter: a run the previous process started was interrupted; it is not retried", "run_id", e.RunID)
		a.tasks.Go(func() { a.interrupted(ctx, e) })
	}
	accepted, err := a.inbox.List(ctx, InboxAccepted)
	if err != nil {
		return fmt.Errorf("adapter: reading the inbox: %w", err)
	}
	for _, e := range accepted {
		a.scheduleTask(ctx, e, true)
	}
	return nil
}

// startAcks prepares the acknowledgements of a polling source, whose
// pages skip the events of a page whose answer was lost (a poll takes
// the events after those sent; they come again after the ack timeout):
// a gap in the sequence stops the acknowledgement, and where the
// consumer is acknowledged is learned before any event comes, so that
// the events a previous process was sent and did not acknowledge are a
// gap too. The gateway sends again what is not acknowledged on every
// connection, and settles with cursor frames sequences it sends no event
// for. startAcks acknowledges nothing (seq 0): that opens a new consumer
// at the head and answers where it stands.
func (a *Adapter) startAcks(ctx context.Context) {
	if _, ok := a.src.(*PollingSource); !ok {
		return
	}
	cs, err := a.api.AckEvents(ctx, a.cfg.AgentID, a.cfg.Consumer, 0)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("adapter: the consumer's state could not be read; the first events are taken as they come", "err", err)
		}
		return
	}
	a.mu.Lock()
	a.acks.start(cs.AckedSeq)
	a.mu.Unlock()
}

// interrupted ends the run of an entry a previous process started and
// left: the platform would keep it running for good. It tries for as
// long as the platform cannot take it, then closes the entry (a process
// stopped before that ends the run in turn). A run that ended already
// is answered run_inactive.
func (a *Adapter) interrupted(ctx context.Context, e InboxEntry) {
	bound := WithRun(ctx, e.RunID, e.Token.Value.Reveal)
	for {
		_, err := a.api.FinishRun(bound, e.RunID, delivery.RunFinish{State: delivery.RunFailed, Reason: delivery.ReasonInterrupted})
		if err == nil || !IsTransient(err) && !errors.Is(err, ErrUnauthenticated) {
			if err != nil && !errors.Is(err, ErrRunInactive) && !errors.Is(err, ErrRunNotActive) && ctx.Err() == nil {
				a.log.Warn("adapter: the platform refused to end an interrupted run", "run_id", e.RunID, "err", err)
			}
			break
		}
		if a.sleep(ctx, a.set.RetryBackoffCap) != nil {
			return
		}
	}
	if err := a.inbox.SetState(ctx, e.EventID, e.State, InboxClosed, "interrupted by a restart"); err != nil && !errors.Is(err, ErrInboxStateConflict) {
		a.log.Warn("adapter: closing an interrupted run's entry failed", "run_id", e.RunID, "err", err)
	}
}

// ackTracker says how far the agent's events are settled: an event is
// settled once it is stored, refused with its run ended, a duplicate,
// handled, or skipped. The acknowledgement is cumulative, so it stops
// before the first delivered event that is not settled, and, once
// started (startAcks), before the first one that was not delivered:
// events are numbered without gaps.
type ackTracker struct {
	last      int64            // acknowledged
	delivered int64            // the highest seq delivered
	gapless   bool             // a gap after delivered is an event that did not come
	unsettled map[int64]string // seq -> event id; "" for one not delivered yet
}

// start sets the consumer's acknowledged seq before any delivery and
// holds the acknowledgement before each gap from then on.
func (t *ackTracker) start(acked int64) {
	if !t.gapless && t.delivered == 0 {
		t.last, t.delivered, t.gapless = acked, acked, true
	}
}

func (t *ackTracker) deliver(seq int64) {
	if seq <= 0 {
		return
	}
	if id, ok := t.unsettled[seq]; ok && id == "" {
		delete(t.unsettled, seq) // a missing one came
	}
	if t.gapless {
		for missing := t.delivered + 1; missing < seq; missing++ {
			t.hold(missing, "")
		}
	}
	if seq > t.delivered {
		t.delivered = seq
	}
	if seq <= t.last {
		// The platform sends again what was acknowledged: it lost the
		// acknowledgement (a restore, a rewind). Acknowledge it again.
		t.last = seq - 1
	}
}

func (t *ackTracker) hold(seq int64, eventID string) {
	if t.unsettled == nil {
		t.unsettled = map[int64]string{}
	}
	t.unsettled[seq] = eventID
}

func (t *ackTracker) settle(seq int64) { delete(t.unsettled, seq) }

// ackable is the seq to acknowledge, when it moved on.
func (t *ackTracker) ackable() (int64, bool) {
	to := t.delivered
	for seq := range t.unsettled {
		if seq-1 < to {
			to = seq - 1
		}
	}
	return to, to > t.last
}

func (t *ackTracker) acked(seq int64) { t.last = max(t.last, seq) }

// process handles one batch of delivered events in order: tokens are
// checked, the accepted events stored in one commit, refusals ended.
func (a *Adapter) process(ctx context.Context, events []delivery.Event) {
	var accepts []InboxAccept
	var acceptSeqs []int64
	for _, ev := range events {
		a.mu.Lock()
		a.acks.deliver(ev.Seq)
		a.mu.Unlock()
		switch {
		case delivery.Ephemeral(ev.Type):
			a.log.Info("adapter: an autocomplete request is not answered by this adapter", "event", ev)
		case !delivery.TokenBearing(ev.Type):
			a.plain(ctx, ev)
		default:
			acc, ok := a.check(ctx, ev)
			if !ok {
				if _, err := a.inbox.Get(ctx, ev.ID); err == nil {
					// Stored, and settled, at an earlier delivery: the
					// platform may have its acknowledgement already and
					// send it no more. Its new token is dropped.
					continue
				}
				a.hold(ev)
				continue
			}
			if acc != nil {
				accepts = append(accepts, *acc)
				acceptSeqs = append(acceptSeqs, ev.Seq)
				a.hold(ev) // settled once stored
			}
		}
	}
	if len(accepts) == 0 {
		return
	}
	results, err := a.inbox.Accept(ctx, accepts)
	if err != nil {
		a.log.Error("adapter: storing events failed; they are not acknowledged and come again", "err", err)
		return
	}
	for i, r := range results {
		a.settle(acceptSeqs[i])
		a.accepted(ctx, r)
	}
}

func (a *Adapter) hold(ev delivery.Event) {
	a.mu.Lock()
	a.acks.hold(ev.Seq, ev.ID)
	a.mu.Unlock()
}

func (a *Adapter) settle(seq int64) {
	a.mu.Lock()
	a.acks.settle(seq)
	a.mu.Unlock()
}

// check verifies a token-bearing event. It returns the delivery to store
// (nil when the event is settled without storing: refused with its run
// ended, or ignored), and false when the event stays unsettled.
func (a *Adapter) check(ctx context.Context, ev delivery.Event) (*InboxAccept, bool) {
	log := a.log.With("event", ev)
	want, err := ExpectationFor(ev, a.cfg.AgentID, a.issuer)
	verdict := TokenCheck{Verdict: VerdictInvalid}
	var inv *Invocation
	if err == nil {
		inv = invocationOf(ev, want)
		verdict, err = a.verify.Check(ctx, ev.InvocationToken, want, a.actual(ctx, inv))
		if err != nil {
			log.Warn("adapter: the token could not be checked; the event comes again", "err", err)
			return nil, false
		}
	} else {
		log.Warn("adapter: an event's payload is malformed", "err", err)
	}
	switch verdict.Verdict {
	case VerdictValid, VerdictExpired:
		return &InboxAccept{Event: ev, RunID: want.RunID, Token: InboxToken{Value: secret.New(ev.InvocationToken),
			JTI: verdict.JTI, IssuedAt: verdict.IssuedAt, ExpiresAt: verdict.ExpiresAt},
			RememberUntil: verdict.ExpiresAt.Add(a.set.InvocationTokenLeeway)}, true
	case VerdictUnknownKey:
		log.Warn("adapter: the token's key is unknown; the event comes again")
		return nil, false
	case VerdictReplay:
		if _, err := a.inbox.Get(ctx, ev.ID); err == nil {
			return nil, true // a duplicate of a stored event
		}
		log.Warn("adapter: a token seen before came with a new event; it is ignored")
		return nil, false
	}
	// Invalid, or a billing or tool class the agent does not have.
	if !a.refusable(ctx, ev, want) {
		log.Warn("adapter: an event with a refused token is ignored; its run goes on", "verdict", verdict.Verdict.String())
		return nil, true
	}
	if err := a.refuse(ctx, want.RunID, ev.InvocationToken, verdict.Verdict.FinishReason()); err != nil {
		log.Warn("adapter: refusing a run failed; the event comes again", "err", err)
		return nil, false
	}
	log.Warn("adapter: a run was refused", "run_id", want.RunID, "reason", verdict.Verdict.FinishReason())
	return &InboxAccept{Event: ev, RunID: want.RunID, Token: InboxToken{Value: secret.New(ev.InvocationToken)},
		State: InboxClosed, CloseReason: verdict.Verdict.FinishReason()}, true
}

// refusable reports whether a refused event's run is ended for it: an
// invocation of a run the adapter does not know yet, or the answer to a
// run waiting for input. A refused event about a run the adapter works
// on otherwise leaves the run alone.
func (a *Adapter) refusable(ctx context.Context, ev delivery.Event, want Expectation) bool {
	if want.RunID == "" {
		return false
	}
	entries, err := a.inbox.ByRun(ctx, want.RunID)
	if err != nil {
		return false
	}
	switch ev.Type {
	case delivery.EventInvocation:
		return len(entries) == 0
	case delivery.EventFollowup, delivery.EventInteractionCreated:
		for _, e := range entries {
			if e.State == InboxWaiting {
				return true
			}
		}
	}
	return false
}

// refuse ends a run the adapter will not start.
func (a *Adapter) refuse(ctx context.Context, runID, token, reason string) error {
	bound := WithRun(ctx, runID, func() string { return token })
	_, err := a.api.FinishRun(bound, runID, delivery.RunFinish{State: delivery.RunFailed, Reason: reason})
	if err == nil || errors.Is(err, ErrRunInactive) || errors.Is(err, ErrRunNotActive) || errors.Is(err, ErrNotFound) {
		return nil // ended now, or already
	}
	return err
}

// actual asks the handler what it will use for a run.
func (a *Adapter) actual(ctx context.Context, inv *Invocation) Actual {
	if br, ok := a.h.(BillingReporter); ok {
		m, c := br.Actual(ctx, inv)
		return Actual{BillingMode: m, ToolClass: c}
	}
	return Actual{BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolChat}
}

func invocationOf(ev delivery.Event, want Expectation) *Invocation {
	return &Invocation{EventID: ev.ID, Seq: ev.Seq, Type: ev.Type, RunID: want.RunID, ThreadID: want.ThreadID,
		MessageID: want.MessageID, InteractionID: want.InteractionID, CommandID: want.CommandID, Payload: ev.Payload}
}

// accepted acts on a stored delivery: a new entry starts or resumes its
// run, a newer token wakes the run's task.
func (a *Adapter) accepted(ctx context.Context, r InboxResult) {
	switch r.Outcome {
	case InboxNew:
		if r.Entry.State == InboxAccepted {
			a.schedule(ctx, r.Entry)
		}
	case InboxTokenReplaced:
		a.mu.Lock()
		t := a.runs[r.Entry.RunID]
		a.mu.Unlock()
		if t != nil {
			t.poke()
		}
	}
}

// plain handles an event that carries no token.
func (a *Adapter) plain(ctx context.Context, ev delivery.Event) {
	switch ev.Type {
	case delivery.EventCancelRequested:
		var p delivery.CancelRequestedPayload
		if json.Unmarshal(ev.Payload, &p) == nil {
			a.cancelRun(ctx, p.RunID, p.Reason)
		}
	case delivery.EventRunStateChanged:
		var p delivery.RunStateChangedPayload
		if json.Unmarshal(ev.Payload, &p) == nil {
			a.mu.Lock()
			t := a.runs[p.RunID]
			a.mu.Unlock()
			if t != nil {
				t.stateChanged(p.State)
			}
		}
	case delivery.EventAccessChanged:
		if a.allow != nil {
			var p delivery.AccessChangedPayload
			_ = json.Unmarshal(ev.Payload, &p)
			a.allow.invalidate(p.PermissionVersion)
		}
	default:
		if eh, ok := a.h.(EventHandler); ok {
			if err := eh.OnEvent(ctx, ev); err != nil {
				a.log.Warn("adapter: the handler failed on an event", "event", ev, "err", err)
			}
		}
	}
}

// cancelRun stops a run the platform wants cancelled: a running task is
// cancelled (it then finishes the run cancelled); an entry not yet
// started is closed, and the platform cancels the queued run itself.
func (a *Adapter) cancelRun(ctx context.Context, runID, reason string) {
	a.mu.Lock()
	t := a.runs[runID]
	a.mu.Unlock()
	if t != nil && t.cancelIfStarted(reason) {
		return
	}
	entries, err := a.inbox.ByRun(ctx, runID)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.State == InboxAccepted || e.State == InboxWaiting {
			_ = a.inbox.SetState(ctx, e.EventID, e.State, InboxClosed, "cancelled: "+reason)
		}
	}
	if t != nil {
		t.stop()
	}
}

// startKey is the Idempotency-Key of a start or resume made with a
// token: the same token starts once, however often the start is sent
// (again after a lost answer, or by the next process).
func startKey(op, jti string) string {
	sum := sha256.Sum256([]byte(op + ":" + jti))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-8" + h[13:16] + "-" + h[16:20] + "-" + h[20:32]
}

// sortEntries orders entries by sequence.
func sortEntries(es []InboxEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
}

// expired reports whether a stored token is past its expiry at now, by
// the adapter's leeway the other way: a token about to expire is renewed
// before a start rather than refused after it.
func (a *Adapter) expired(tok InboxToken) bool {
	return !tok.ExpiresAt.IsZero() && !a.clock.Now().Before(tok.ExpiresAt.Add(-a.set.InvocationTokenLeeway/2))
}

// sleep waits d through the clock.
func (a *Adapter) sleep(ctx context.Context, d time.Duration) error { return a.clock.Sleep(ctx, d) }
