package platformtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

// requestLog is a ScenarioServer that tells what requests it received
// (the FakeServer does); checks that need it are left out on others.
type requestLog interface {
	Requests() []Request
}

// forger tampers with the invocation events of chosen runs: it gives
// each a forged token of the variant chosen for it, and keeps every
// token it saw.
type forger struct {
	sc   *scenario
	mu   sync.Mutex
	next Variant
	runs map[string]Variant
	seen tokens
}

func (fg *forger) choose(v Variant) {
	fg.mu.Lock()
	fg.next = v
	fg.mu.Unlock()
}

func (fg *forger) wrap(src adapter.Source) adapter.Source {
	return &TamperingSource{Source: src, Tamper: func(ev *delivery.Event) {
		run := runOf(*ev)
		if ev.InvocationToken != "" {
			fg.seen.add(run, ev.InvocationToken)
		}
		if ev.Type != delivery.EventInvocation {
			return
		}
		fg.mu.Lock()
		if fg.runs == nil {
			fg.runs = map[string]Variant{}
		}
		v, ok := fg.runs[run]
		if !ok && fg.next != "" {
			v, ok = fg.next, true
			fg.runs[run], fg.next = v, ""
		}
		fg.mu.Unlock()
		if !ok {
			return
		}
		tok, err := fg.sc.s.ForgeToken(fg.sc.ctx, run, v)
		if err != nil {
			fg.sc.t.Errorf("forging a %s token: %v", v, err)
			return
		}
		ev.InvocationToken = tok
	}}
}

// AG08InvalidTokens checks that an adapter starts no run whose token is
// forged (missing, badly signed, HS256, of another type, for another
// agent): it fails the run as invalid_invocation_token and acknowledges
// the event, and neither Prepare nor Execute is called. Then it sends
// the same forged tokens itself, to startRun and renewInvocationToken of
// a run no adapter is connected for, and checks the platform refuses
// each as invalid and leaves the run queued.
func AG08InvalidTokens(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	r := sc.refusals("ag08", Variants)
	r.close()
	sc.forgedDirectly()
}

// refusals runs one adapter of consumer over forged deliveries of each
// variant and checks every run is refused before any prepare.
func (sc *scenario) refusals(consumer string, variants []Variant) *running {
	t := sc.t
	fg := &forger{sc: sc}
	h := &RecordingHandler{}
	r := sc.start(consumer, h, fg.wrap)
	for _, v := range variants {
		fg.choose(v)
		tr := sc.trigger("forged " + string(v))
		run := sc.waitEnded(tr.RunID)
		if run.State != delivery.RunFailed || run.StateReason != delivery.ReasonInvalidToken || run.Starts != 0 {
			t.Errorf("%s: the run is %s (%q) after %d starts; want failed as %s, never started", v, run.State, run.StateReason, run.Starts, delivery.ReasonInvalidToken)
		}
		if slices.Contains(h.Prepares(), tr.RunID) || slices.Contains(h.Executes(), tr.RunID) {
			t.Errorf("%s: the handler was called for a run with a forged token", v)
		}
		sc.waitAcked(consumer, r, tr.RunID)
	}
	return r
}

// waitAcked waits until the consumer acknowledged the event of run.
func (sc *scenario) waitAcked(consumer string, r *running, runID string) {
	sc.t.Helper()
	var seq int64
	for _, ev := range r.rec.Events() {
		if runOf(ev.Event) == runID && ev.Event.Seq > seq {
			seq = ev.Event.Seq
		}
	}
	err := waitFor(sc.ctx, func() bool {
		cs, err := sc.s.ConsumerState(sc.ctx, consumer)
		return err == nil && cs.AckedSeq >= seq
	})
	if err != nil {
		sc.t.Errorf("the event (seq %d) of run %s was not acknowledged", seq, runID)
	}
}

// forgedDirectly sends each forged token to startRun and
// renewInvocationToken of a queued run itself.
func (sc *scenario) forgedDirectly() {
	t := sc.t
	tr := sc.trigger("nobody is connected")
	c := sc.client()
	for _, v := range Variants {
		tok, err := sc.s.ForgeToken(sc.ctx, tr.RunID, v)
		if err != nil {
			t.Fatal(err)
		}
		bound := adapter.WithRun(sc.ctx, tr.RunID, func() string { return tok })
		_, err = c.StartRun(bound, tr.RunID, delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat})
		if !refusedAs(err, delivery.TokenInvalid) {
			t.Errorf("%s: startRun answered %v; want invocation_token_invalid (invalid)", v, err)
		}
		_, err = c.RenewInvocationToken(bound, tr.RunID)
		if !refusedAs(err, delivery.TokenInvalid) {
			t.Errorf("%s: renewInvocationToken answered %v; want invocation_token_invalid (invalid)", v, err)
		}
	}
	run, err := sc.s.RunState(sc.ctx, tr.RunID)
	if err != nil || run.State != delivery.RunQueued || run.Starts != 0 {
		t.Errorf("after forged starts the run is %s with %d starts (%v); want queued, never started", run.State, run.Starts, err)
	}
}

func refusedAs(err error, reason string) bool {
	var pe *adapter.ProblemError
	return errors.Is(err, adapter.ErrInvocationTokenInvalid) && errors.As(err, &pe) && pe.Reason() == reason
}

// AZP6AdapterNeverStarts checks that the agent's runtime never starts on
// a token it may not use: the forged tokens of AG08InvalidTokens; a
// billing mode other than the token's (or unknown) and a tool class
// above it, each refused with its reason before any prepare; a token
// seen before on a new event, ignored and not acknowledged (on a server
// that logs requests); and an expired token, renewed, the run executed
// only after a start with the renewed token.
func AZP6AdapterNeverStarts(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	sc.refusals("azp6-forged", Variants).close()

	for _, c := range []struct {
		consumer string
		h        *RecordingHandler
		reason   string
	}{
		{"azp6-billing", &RecordingHandler{Billing: delivery.BillingAgent}, delivery.ReasonBillingModeMismatch},
		{"azp6-unknown", &RecordingHandler{Billing: delivery.BillingUnknown}, delivery.ReasonBillingModeMismatch},
		{"azp6-tools", &RecordingHandler{ToolClass: delivery.ToolHost}, delivery.ReasonToolClassMismatch},
	} {
		r := sc.start(c.consumer, c.h, nil)
		tr := sc.trigger("grant check")
		run := sc.waitEnded(tr.RunID)
		if run.State != delivery.RunFailed || run.StateReason != c.reason || run.Starts != 0 || len(c.h.Prepares()) != 0 {
			t.Errorf("%s: the run is %s (%q), %d starts, %d prepares; want failed as %s, nothing started",
				c.consumer, run.State, run.StateReason, run.Starts, len(c.h.Prepares()), c.reason)
		}
		r.close()
	}
	if _, ok := s.(requestLog); ok {
		sc.replay()
	}
	sc.expiredIsRenewed()
}

// replay delivers a token the adapter accepted before on an event of a
// new id: the adapter must ignore it and not acknowledge it.
func (sc *scenario) replay() {
	t := sc.t
	var (
		mu       sync.Mutex
		first    delivery.Event
		replayed int64
	)
	h := &RecordingHandler{}
	r := sc.start("azp6-replay", h, func(src adapter.Source) adapter.Source {
		return &TamperingSource{Source: src, Tamper: func(ev *delivery.Event) {
			if ev.Type != delivery.EventInvocation {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case first.ID == "":
				first = *ev
			case replayed == 0 && runOf(*ev) != runOf(first):
				// The second run's first delivery becomes the first
				// run's event again under a new id, with its old token.
				replayed = ev.Seq
				ev.ID, ev.Payload, ev.InvocationToken = adapterID(), first.Payload, first.InvocationToken
			}
		}}
	})
	one := sc.trigger("first")
	sc.waitEnded(one.RunID)
	two := sc.trigger("second")
	// The replay is not acknowledged: the consumer stays before it until
	// the platform sends the second run's event again, after the ack
	// timeout.
	err := waitFor(sc.ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return replayed > 0
	})
	if err != nil {
		t.Fatal("the second run's event never came")
	}
	if cs, err := sc.s.ConsumerState(sc.ctx, "azp6-replay"); err == nil && cs.AckedSeq >= replayed {
		t.Errorf("the replayed token's event (seq %d) was acknowledged", replayed)
	}
	sc.s.PassTime(sc.ctx, sc.s.Timing().AckTimeout+time.Second)
	run := sc.waitEnded(two.RunID)
	if run.State != delivery.RunCompleted || run.Starts != 1 {
		t.Errorf("the second run is %s after %d starts; want completed, redelivered with a fresh token", run.State, run.Starts)
	}
	if n := count(h.Executes(), one.RunID); n != 1 {
		t.Errorf("the first run was executed %d times; the replay must not run it again", n)
	}
	r.close()
}

func adapterID() string { return adapter.NewID() }

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// expiredIsRenewed holds a run's prepare until its token expired, then
// checks it was renewed and the run executed once, on the renewed token.
func (sc *scenario) expiredIsRenewed() {
	t := sc.t
	fg := &forger{sc: sc}
	h := &RecordingHandler{HoldPrepare: make(chan struct{})}
	r := sc.start("azp6-expired", h, fg.wrap)
	defer r.close()
	tr := sc.trigger("slow")
	if err := h.Wait(sc.ctx, func(h *RecordingHandler) bool { return slices.Contains(h.Prepares(), tr.RunID) }); err != nil {
		t.Fatal("the run was not prepared")
	}
	// Unacknowledged, the event would come again with a fresh token.
	sc.waitAcked("azp6-expired", r, tr.RunID)
	tm := sc.s.Timing()
	sc.s.PassTime(sc.ctx, tm.TokenTTL+tm.ClockLeeway+time.Second)
	close(h.HoldPrepare)
	run := sc.waitEnded(tr.RunID)
	if run.State != delivery.RunCompleted || run.Starts != 1 || count(h.Executes(), tr.RunID) != 1 {
		t.Fatalf("the run is %s after %d starts and %d executes; want completed once", run.State, run.Starts, count(h.Executes(), tr.RunID))
	}
	delivered := fg.seen.of(tr.RunID)
	jtis := h.ExecuteJTIs()
	if len(delivered) == 0 || len(jtis) == 0 {
		t.Fatal("no token was seen")
	}
	for _, tok := range delivered {
		if jtiOf(tok) == jtis[len(jtis)-1] {
			t.Errorf("the run executed on a delivered token that had expired, not a renewed one")
		}
	}
}

// jtiOf reads a token's id without checking it.
func jtiOf(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		JTI string `json:"jti"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.JTI
}

// AG09DoubleDelivery checks that a run delivered to two adapters of one
// agent (consumers alpha and beta, both connected first) is started and
// executed once. Over the gateway, it also checks that a second adapter
// with the same consumer takes it over: the first stops with close code
// 4015 and does not connect again.
func AG09DoubleDelivery(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	ha, hb := &RecordingHandler{}, &RecordingHandler{}
	ra := sc.start("ag09-alpha", ha, nil)
	rb := sc.start("ag09-beta", hb, nil)
	tr := sc.trigger("twice")
	run := sc.waitEnded(tr.RunID)
	execs := count(ha.Executes(), tr.RunID) + count(hb.Executes(), tr.RunID)
	if run.State != delivery.RunCompleted || run.Starts != 1 || execs != 1 {
		t.Errorf("the run is %s after %d starts and %d executes; want completed, once", run.State, run.Starts, execs)
	}
	sc.waitAcked("ag09-alpha", ra, tr.RunID)
	sc.waitAcked("ag09-beta", rb, tr.RunID)
	ra.close()
	rb.close()
	if !sc.o.Gateway {
		return
	}
	first := sc.start("ag09-same", &RecordingHandler{}, nil)
	second := sc.start("ag09-same", &RecordingHandler{}, nil)
	select {
	case <-first.done:
	case <-sc.ctx.Done():
		t.Fatal("the first adapter did not stop when a second took its consumer over")
	}
	if first.reason.Code != delivery.CloseTakenOver || !errors.Is(first.err, adapter.ErrStopped) {
		t.Errorf("the first adapter stopped with %v (%v); want close code %d", first.reason, first.err, delivery.CloseTakenOver)
	}
	second.close()
}

// AG12PatchRules checks the run patch rules on a running run: a patch of
// /state is refused by the patcher before any request and by the
// platform as validation_failed (patch_path_forbidden at /ops/0); a
// stale base_version is base_version_conflict with the current run; and
// the patcher rebases over a concurrent change, both changes kept. Over
// the gateway, run.update is refused the same two ways.
func AG12PatchRules(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	c := sc.client()
	fg := &forger{sc: sc}
	var gw *adapter.GatewaySource
	wrap := func(src adapter.Source) adapter.Source {
		if g, ok := src.(*adapter.GatewaySource); ok {
			gw = g
		}
		return fg.wrap(src)
	}
	checked := make(chan error, 1)
	h := &RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		checked <- sc.patchRules(ctx, c, run, gw, fg)
		return nil
	}}
	sc.start("ag12", h, wrap)
	tr := sc.trigger("patch me")
	select {
	case err := <-checked:
		if err != nil {
			t.Error(err)
		}
	case <-sc.ctx.Done():
		t.Fatal("the run was not executed")
	}
	if run := sc.waitEnded(tr.RunID); run.State != delivery.RunCompleted {
		t.Errorf("the run is %s (%q)", run.State, run.StateReason)
	}
}

func (sc *scenario) patchRules(ctx context.Context, c *adapter.Client, run *adapter.Run, gw *adapter.GatewaySource, fg *forger) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, errorf(format, args...)) }
	state := []delivery.PatchOp{{Op: "replace", Path: "/state", Value: "completed"}}

	var refused *adapter.PatchRefusedError
	if err := run.Patch().SendOps(ctx, state); !errors.As(err, &refused) || refused.Errors[0].Code != delivery.CodePatchPathForbidden ||
		refused.Errors[0].Pointer != "/ops/0" {
		fail("the patcher sent /state: %v", err)
	}
	cur, err := c.GetRun(ctx, run.ID)
	if err != nil {
		return err
	}
	var pe *adapter.ProblemError
	_, err = c.PatchRun(ctx, run.ID, delivery.RunPatch{BaseVersion: cur.Version, Ops: state})
	if !errors.Is(err, adapter.ErrValidationFailed) || !errors.As(err, &pe) || len(pe.Problem.Errors) == 0 ||
		pe.Problem.Errors[0].Code != delivery.CodePatchPathForbidden || pe.Problem.Errors[0].Pointer != "/ops/0" {
		fail("a /state patch was answered %v; want validation_failed, patch_path_forbidden at /ops/0", err)
	}
	_, err = c.PatchRun(ctx, run.ID, delivery.RunPatch{BaseVersion: cur.Version - 1,
		Ops: []delivery.PatchOp{{Op: "replace", Path: "/status_line", Value: "stale"}}})
	if now, ok := currentOf(err); !errors.Is(err, adapter.ErrBaseVersionConflict) || !ok || now.Version != cur.Version {
		fail("a stale base_version was answered %v; want base_version_conflict with version %d", err, cur.Version)
	}
	// A change the patcher does not know of moves the run on; its own
	// change is rebased and both stand.
	if _, err := c.PatchRun(ctx, run.ID, delivery.RunPatch{BaseVersion: cur.Version,
		Ops: []delivery.PatchOp{{Op: "replace", Path: "/model", Value: "model-2"}}}); err != nil {
		return errorf("the concurrent patch: %v", err)
	}
	if err := run.Patch().SetStatusLine("mine"); err != nil {
		return err
	}
	if err := run.Patch().Flush(ctx); err != nil {
		fail("the patcher did not rebase: %v", err)
	}
	if log, ok := sc.s.(requestLog); ok {
		conflicts := 0
		for _, req := range log.Requests() {
			if req.Operation == "patchRun" && req.Status == http.StatusConflict {
				conflicts++
			}
		}
		if conflicts < 2 {
			fail("%d patches met base_version_conflict; want the stale one and the patcher's", conflicts)
		}
	}
	after, err := c.GetRun(ctx, run.ID)
	if err != nil || after.StatusLine != "mine" || after.Model != "model-2" {
		fail("after the rebase the run shows status %q and model %q (%v); want both changes", after.StatusLine, after.Model, err)
	}
	if gw != nil {
		toks := fg.seen.of(run.ID)
		tok := secret.New(toks[len(toks)-1])
		var op *adapter.GatewayOpError
		err := gw.Gateway().SendRunUpdate(ctx, run.ID, tok, after.Version, state)
		if !errors.As(err, &op) || op.Code != delivery.CodeValidationFailed {
			fail("run.update of /state over the gateway: %v; want validation_failed", err)
		}
		err = gw.Gateway().SendRunUpdate(ctx, run.ID, tok, after.Version-1, []delivery.PatchOp{{Op: "replace", Path: "/status_line", Value: "x"}})
		if !errors.As(err, &op) || op.Code != delivery.CodeBaseVersionConflict {
			fail("a stale run.update over the gateway: %v; want base_version_conflict", err)
		}
	}
	return errors.Join(errs...)
}

func currentOf(err error) (delivery.Run, bool) {
	var pe *adapter.ProblemError
	if errors.As(err, &pe) {
		return pe.CurrentRun()
	}
	return delivery.Run{}, false
}

func errorf(format string, args ...any) error {
	return &scenarioError{msg: fmt.Sprintf(format, args...)}
}

// scenarioError is a broken rule a scenario found.
type scenarioError struct{ msg string }

func (e *scenarioError) Error() string { return "platformtest: " + e.msg }

// Scenario is one of the scenarios every platform and adapter must pass.
type Scenario struct {
	Name string
	Run  func(*testing.T, ScenarioServer, *ScenarioOptions)
}

// Scenarios lists them, to run against a platform over polling and
// over the gateway.
var Scenarios = []Scenario{
	{"AG08", AG08InvalidTokens},
	{"AZP6", AZP6AdapterNeverStarts},
	{"AG09", AG09DoubleDelivery},
	{"AG12", AG12PatchRules},
	{"AG28", AG28SlowStartAndRestart},
	{"SR9", SR9TokenBinding},
	{"AG20", AG20ContextTrust},
}
