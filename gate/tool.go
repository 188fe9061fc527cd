package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/resilience"
)

// EvidenceLimits bound a session's buffer of reads, so a long trajectory
// cannot grow an Action past what the gate accepts (MaxDocumentSize).
// When a read would exceed MaxItems or MaxBytes, the oldest buffered
// reads are dropped first: the reads nearest the write are the ones a
// rule about that write most likely needs.
type EvidenceLimits struct {
	// MaxItems is the most reads buffered (0: 64).
	MaxItems int
	// MaxBytes bounds the buffered arguments, results and error texts
	// together (0: 1 MiB).
	MaxBytes int
	// MaxItemBytes bounds one read's arguments and, separately, its
	// result and error text (0: 32 KiB). A longer one is cut and kept as
	// a JSON string of at most MaxItemBytes bytes holding its first
	// bytes, with
	// Provenance.Truncated set and OriginalBytes the size of the
	// arguments and result before cutting.
	MaxItemBytes int
}

func (l EvidenceLimits) withDefaults() EvidenceLimits {
	if l.MaxItems <= 0 {
		l.MaxItems = 64
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 20
	}
	if l.MaxItemBytes <= 0 {
		l.MaxItemBytes = 32 << 10
	}
	return l
}

// Read wraps a read tool (the Python gate SDK's @augur.tool(kind="read")): the
// wrapped function runs freely, and its call (arguments, result or
// error) is buffered as Evidence in the session ctx carries, for the
// session's next gated writes. Outside a session it just runs.
func Read[A, R any](name string, fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	return func(ctx context.Context, args A) (R, error) {
		r, err := fn(ctx, args)
		var result any = r
		if err != nil {
			result = nil
		}
		recordRead(ctx, name, "", args, result, err)
		return r, err
	}
}

// recordRead buffers one read in ctx's session; callID "" gets one.
func recordRead(ctx context.Context, name, callID string, args, result any, readErr error) {
	st, ok := ctx.Value(sessionKey{}).(*sessionState)
	if !ok {
		return
	}
	lim := st.limits.withDefaults()
	argJSON, argN, argCut := evidenceJSON(args, lim.MaxItemBytes)
	var resJSON json.RawMessage
	resN, resCut := 0, false
	if readErr == nil {
		resJSON, resN, resCut = evidenceJSON(result, lim.MaxItemBytes)
	}
	e := Evidence{Tool: name, Arguments: argJSON, Result: resJSON}
	if readErr != nil {
		e.Error = clip(readErr.Error(), lim.MaxItemBytes)
	}
	if callID == "" {
		callID = a2a.NewID()
	}
	e.Provenance = Provenance{CallID: callID, ObservedAt: time.Now().UTC()}
	if argCut || resCut {
		e.Provenance.Truncated = true
		e.Provenance.OriginalBytes = argN + resN
	}
	size := len(e.Arguments) + len(e.Result) + len(e.Error)

	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls++
	e.Provenance.Sequence = st.calls
	st.evidence = append(st.evidence, e)
	st.evBytes += size
	for len(st.evidence) > 0 && (len(st.evidence) > lim.MaxItems || st.evBytes > lim.MaxBytes) {
		old := st.evidence[0]
		st.evBytes -= len(old.Arguments) + len(old.Result) + len(old.Error)
		st.evidence = st.evidence[1:]
	}
}

// evidenceJSON encodes v for the evidence buffer: as is when it fits in
// limit bytes, else as a JSON string of its first bytes. It returns the
// JSON, the size before cutting and whether it was cut. A value that does
// not encode is recorded as a string naming its type: the read happened,
// and the judge should know that much.
func evidenceJSON(v any, limit int) (json.RawMessage, int, bool) {
	if raw, ok := v.(json.RawMessage); ok && json.Valid(raw) {
		if len(raw) == 0 {
			return nil, 0, false
		}
		v = raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("<not encodable as JSON: %T>", v))
	}
	if string(b) == "null" {
		return nil, 0, false
	}
	if len(b) <= limit {
		return b, len(b), false
	}
	// Escaping can lengthen the cut text; shorten it until the JSON
	// string fits.
	n := limit - 2
	for {
		cut, _ := json.Marshal(clip(string(b), max(n, 0)))
		if len(cut) <= limit || n <= 0 {
			return cut, len(b), true
		}
		n -= len(cut) - limit
	}
}

// evidenceSnapshot copies the buffered reads for an Action, and counts
// the write as one of the session's tool calls.
func (st *sessionState) evidenceSnapshot() []Evidence {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls++
	return append([]Evidence(nil), st.evidence...)
}

// WriteSpec says how a write tool is gated (the Python gate SDK's
// @augur.tool(kind="write", action_type=…, context_builder=…,
// action_id_builder=…)).
type WriteSpec[A any] struct {
	// ActionType names the write to the rules ("issue_refund").
	ActionType string
	// Context builds the evidence the rules judge from the write's own
	// arguments. Put every field that decides what the write does into
	// it: a standing approval is bound to it. Required.
	Context func(A) (Context, error)
	// ActionID derives the work item's own id from the arguments
	// ("po-1234"), so a later run presents the same one. Without it a
	// write gets a generated id; a resumed session requires it.
	ActionID func(A) (string, error)
}

// Write wraps a write tool: each call is submitted to the gate as an
// Action (the context fn's arguments build, the session's buffered reads,
// the SetReasoning text) and fn runs only once the gate granted this call
// the claim to execute. A pass runs at once; a hold waits for an operator
// (or, in a session that parks, returns *PausedError); a kill, a denial,
// an expired hold, a resume refusal, execution_unconfirmed and every
// fail-closed case return *KillError; a resume of an executed work item
// returns *AlreadyExecutedError. fn's own error is returned as is.
//
// After fn returns without error the execution is acknowledged with the
// claim's fencing token, retried on transient faults. If the
// acknowledgement still fails, the write did run: its result is returned
// and the failure logged, and operators will see the action as
// execution_unconfirmed until they confirm it. A fn that fails is not
// acknowledged either, for the same reason: whether its effect landed is
// for an operator to settle, never for a retry to guess.
func Write[A, R any](c *Client, spec WriteSpec[A], fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	return func(ctx context.Context, args A) (R, error) {
		var out R
		w := writeCall{actionType: spec.ActionType}
		if spec.Context != nil {
			w.context = func() (Context, error) { return spec.Context(args) }
		}
		if spec.ActionID != nil {
			w.actionID = func() (string, error) { return spec.ActionID(args) }
		}
		err := c.gated(ctx, w, func(ctx context.Context) error {
			var err error
			out, err = fn(ctx, args)
			return err
		})
		return out, err
	}
}

// writeCall is one gated write, with its builders bound to its arguments.
type writeCall struct {
	actionType string
	context    func() (Context, error)
	actionID   func() (string, error)
}

// gated submits w and runs exec when, and only when, a claim to execute
// was granted. It returns exec's error, or the error that stopped it.
func (c *Client) gated(ctx context.Context, w writeCall, exec func(context.Context) error) error {
	actionID := ""
	if w.actionID != nil {
		id, err := w.actionID()
		if err != nil {
			return &KillError{Verdict: Kill, Reason: ReasonContextBuilder, Rationale: "the action-id builder failed", Err: err}
		}
		actionID = id
	}
	if err := ValidateWrite(ctx, actionID); err != nil {
		return err
	}
	st, err := openedState(ctx)
	if err != nil {
		return err
	}
	sid := st.info.SessionID
	switch {
	case c == nil:
		return configError(sid, actionID, "a gated write needs a Client")
	case w.actionType == "":
		return configError(sid, actionID, "a gated write needs an action type")
	case w.context == nil:
		return configError(sid, actionID, "a gated write needs a context builder")
	}
	cx, err := w.context()
	switch {
	case err != nil:
		return &KillError{Verdict: Kill, Reason: ReasonContextBuilder, Rationale: "the context builder failed", ActionID: actionID, SessionID: sid, Err: err}
	case cx == nil:
		return &KillError{Verdict: Kill, Reason: ReasonContextBuilder, Rationale: "the context builder returned no context", ActionID: actionID, SessionID: sid}
	}
	if err := cx.Validate(); err != nil {
		return &KillError{Verdict: Kill, Reason: ReasonContextBuilder, Rationale: "the context builder's context is invalid", ActionID: actionID, SessionID: sid, Err: err}
	}
	if actionID == "" {
		actionID = a2a.NewID()
	}
	a := Action{
		ActionID: actionID, ActionType: w.actionType,
		TenantID: st.cfg.TenantID, TeamID: st.cfg.TeamID, AgentID: st.cfg.AgentID, SessionID: sid,
		Context: cx, Evidence: st.evidenceSnapshot(), Reasoning: Reasoning(ctx), Resume: st.cfg.Resume,
	}
	if err := a.Validate(); err != nil {
		return configError(sid, actionID, err.Error())
	}

	v, err := c.submit(ctx, a)
	if err != nil {
		return err
	}
	for {
		switch v.Verdict {
		case Pass:
			cl := v.Claim
			if cl == nil {
				if cl, err = c.claim(ctx, sid, actionID); err != nil {
					return err
				}
			}
			switch cl.Status {
			case ClaimGranted:
				return c.execute(ctx, *cl, exec)
			case ClaimAlreadyExecuted:
				return &AlreadyExecutedError{SessionID: sid, ActionID: actionID, AcknowledgedAt: *cl.AcknowledgedAt}
			default:
				return &KillError{Verdict: ExecutionUnconfirmed, RuleIDCited: v.RuleIDCited, ActionID: actionID, SessionID: sid}
			}
		case Hold:
			switch v.Hold.State {
			case HoldPending:
			case HoldDenied:
				return stopped(v, ReasonOperatorDenied)
			case HoldExpired:
				return stopped(v, ReasonOperatorTimeout)
			default:
				return failClosed(protocolf("a hold verdict with an approved hold"), actionID, sid)
			}
			if st.cfg.Resumable && st.info.HoldIndefinite {
				return NewPausedError(v)
			}
			if v, err = c.wait(ctx, st, v); err != nil {
				return err
			}
		case AlreadyExecuted:
			return &AlreadyExecutedError{SessionID: sid, ActionID: actionID, AcknowledgedAt: *v.AcknowledgedAt}
		default: // kill, execution_unconfirmed
			if v.Reason == ResumeNoStandingVerdict {
				st.mu.Lock()
				st.park = true
				st.mu.Unlock()
			}
			return NewKillError(v)
		}
	}
}

// stopped is the KillError of a hold that ended without approval; the
// gate's own reason wins over the state's default.
func stopped(v Verdict, def Reason) *KillError {
	k := NewKillError(v)
	if k.Reason == "" {
		k.Reason = def
	}
	return k
}

// submit sends the action with ?claim=1, so a pass comes back claimed.
// Retrying it is safe: the gate keys actions by (session, action id) and
// answers a replay with the recorded verdict.
func (c *Client) submit(ctx context.Context, a Action) (Verdict, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return Verdict{}, &KillError{Verdict: Kill, Reason: ReasonContextBuilder, Rationale: "the action does not encode as JSON",
			ActionID: a.ActionID, SessionID: a.SessionID, Err: err}
	}
	if len(body) > MaxDocumentSize {
		// The gate refuses it unread; saying so here names the cause.
		return Verdict{}, configError(a.SessionID, a.ActionID, fmt.Sprintf(
			"the action is %d bytes, over the gate's %d: shorten the reasoning or the context, or lower EvidenceLimits", len(body), MaxDocumentSize))
	}
	data, err := c.call(ctx, request{method: http.MethodPost, path: "/actions", query: url.Values{"claim": {"1"}}, body: json.RawMessage(body), idempotent: true})
	if err != nil {
		return Verdict{}, failClosed(err, a.ActionID, a.SessionID)
	}
	return verdictFor(data, a.SessionID, a.ActionID)
}

// verdictFor decodes a verdict strictly and checks it answers this action.
func verdictFor(data []byte, sid, aid string) (Verdict, error) {
	v, err := DecodeVerdict(data)
	if err != nil {
		return Verdict{}, failClosed(&protocolError{err}, aid, sid)
	}
	if v.SessionID != sid || v.ActionID != aid {
		return Verdict{}, failClosed(protocolf("the verdict answers action %q of session %q", v.ActionID, v.SessionID), aid, sid)
	}
	if v.Claim != nil && (v.Claim.SessionID != sid || v.Claim.ActionID != aid) {
		return Verdict{}, failClosed(protocolf("the claim answers action %q of session %q", v.Claim.ActionID, v.Claim.SessionID), aid, sid)
	}
	return v, nil
}

// claim asks for the right to execute a passed or approved action.
func (c *Client) claim(ctx context.Context, sid, aid string) (*Claim, error) {
	data, err := c.call(ctx, request{method: http.MethodPost, path: "/claims", body: ClaimRequest{SessionID: sid, ActionID: aid}, idempotent: true})
	if err != nil {
		return nil, failClosed(err, aid, sid)
	}
	cl, err := DecodeClaim(data)
	if err != nil {
		return nil, failClosed(&protocolError{err}, aid, sid)
	}
	if cl.SessionID != sid || cl.ActionID != aid {
		return nil, failClosed(protocolf("the claim answers action %q of session %q", cl.ActionID, cl.SessionID), aid, sid)
	}
	return &cl, nil
}

// waitRounds is how many failed long-polls in a row end a wait: each is
// already the retry policy's attempts, so this outlasts a server restart
// of a few seconds without waiting on a dead one for ever.
const waitRounds = 5

// wait long-polls /actions/wait until the hold is decided, and returns
// the deciding verdict. With a finite window it gives up on its own after
// the window plus HoldMargin, with fail_closed_operator_timeout, whatever
// the server does. It never sleeps between answered polls: the server
// holds each poll open and answers it when an operator decides.
func (c *Client) wait(ctx context.Context, st *sessionState, v Verdict) (Verdict, error) {
	sid, aid := v.SessionID, v.ActionID
	window, finite := holdWindow(v.Hold, st.info)
	// The client's own deadline cancels the wait rather than expiring it:
	// giving up on a hold is not an outage, and the shared breaker must
	// not count it as one (a cancellation says nothing to it).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deadline time.Time
	if finite {
		deadline = time.Now().Add(window + c.holdMargin)
		stop := time.AfterFunc(time.Until(deadline), cancel)
		defer stop.Stop()
	}
	timedOut := func(cause error) (Verdict, error) {
		k := NewKillError(v)
		k.Verdict, k.Reason, k.Err = Kill, ReasonOperatorTimeout, cause
		why := "no operator decided within the hold window"
		if cause != nil {
			why = "the caller stopped waiting for an operator"
		}
		if k.Rationale != "" {
			why += " (held: " + k.Rationale + ")"
		}
		k.Rationale = why
		return Verdict{}, k
	}
	failures := 0
	for {
		if ctx.Err() != nil {
			return timedOut(ctx.Err())
		}
		poll := c.waitPoll
		if finite {
			rem := time.Until(deadline)
			if rem <= 0 {
				return timedOut(nil)
			}
			poll = min(poll, rem)
		}
		start := time.Now()
		data, err := c.call(wctx, request{
			method: http.MethodPost, path: "/actions/wait", idempotent: true, timeout: poll + 10*time.Second,
			body: WaitRequest{SessionID: sid, ActionID: aid, TimeoutS: poll.Seconds()},
		})
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return timedOut(ctx.Err())
			case wctx.Err() != nil:
				return timedOut(nil)
			}
			failures++
			var p *Problem
			retry := resilience.IsTransient(err) || errors.Is(err, resilience.ErrOpen) || (errors.As(err, &p) && p.Status >= 500 && p.Reason == "")
			if !retry || failures >= waitRounds {
				return Verdict{}, failClosed(err, aid, sid)
			}
			_ = resilience.Sleep(wctx, c.retry.Delay(failures)) // the loop's checks report a deadline
			continue
		}
		failures = 0
		nv, err := verdictFor(data, sid, aid)
		if err != nil {
			return Verdict{}, err
		}
		if nv.Verdict == Hold && nv.Hold.State == HoldPending {
			// A server that answers "still pending" long before the poll's
			// timeout would turn this loop into a busy one; a short pause
			// bounds that and still wakes well within a second.
			if time.Since(start) < poll/2 {
				_ = resilience.Sleep(wctx, 200*time.Millisecond)
			}
			v = nv
			continue
		}
		return nv, nil
	}
}

// execute runs the claimed write and acknowledges it.
func (c *Client) execute(ctx context.Context, cl Claim, exec func(context.Context) error) error {
	if err := exec(ctx); err != nil {
		c.log.WarnContext(ctx, "gate: a claimed write failed and is not acknowledged; operators will see it as execution_unconfirmed",
			"action_id", cl.ActionID, "session_id", cl.SessionID)
		return err
	}
	executedAt := time.Now().UTC()
	// The write ran: acknowledge it even if the caller's context has
	// ended, so a cancellation does not turn a done write unconfirmed.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTimeout)
	defer cancel()
	data, err := c.call(actx, request{method: http.MethodPost, path: "/acks", idempotent: true,
		body: AckRequest{SessionID: cl.SessionID, ActionID: cl.ActionID, FencingToken: cl.FencingToken, ExecutedAt: executedAt}})
	if err == nil {
		var ack Ack
		if ack, err = DecodeAck(data); err == nil && (ack.SessionID != cl.SessionID || ack.ActionID != cl.ActionID) {
			err = fmt.Errorf("the acknowledgement answers action %q of session %q", ack.ActionID, ack.SessionID)
		}
	}
	if err != nil {
		c.log.WarnContext(ctx, "gate: the write ran but its acknowledgement failed; operators will see it as execution_unconfirmed until they confirm it",
			"action_id", cl.ActionID, "session_id", cl.SessionID, "err", err)
	}
	return nil
}
