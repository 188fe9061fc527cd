package platformtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// SR9TokenBinding checks that every request an adapter sends for a run
// carries the run's invocation token, and no other request does: calls
// the agent makes with the context it was handed for a run (in prepare
// and in the work) reach the run's context, the same call outside it is
// refused for want of a token, and once the run ended its token acts on
// it no more (run_inactive). Against a platform that logs requests, each
// run-scoped request is checked to carry a token delivered for that
// run, and every other request none.
func SR9TokenBinding(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	c := sc.client()
	fg := &forger{sc: sc}
	var errs []error
	record := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	prepared := make(chan error, 1)
	h := &bindingHandler{RecordingHandler: &RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		if _, err := c.GetRunContext(ctx, run.ID); err != nil {
			record(errorf("the run's context, read in the work: %v", err))
		}
		if _, err := run.Reply(ctx, "bound"); err != nil {
			record(errorf("the reply: %v", err))
		}
		_, err := c.GetRunContext(context.WithoutCancel(sc.ctx), run.ID)
		if !refusedAs(err, delivery.TokenInvalid) {
			record(errorf("the run's context read outside the run's binding answered %v; want invocation_token_invalid (invalid)", err))
		}
		return nil
	}}, prepare: func(ctx context.Context, inv *adapter.Invocation) {
		_, err := c.GetRunContext(ctx, inv.RunID)
		if err != nil {
			err = errorf("the run's context, read in prepare: %v", err)
		}
		prepared <- err
	}}
	r := sc.start("sr9", h, fg.wrap)
	defer r.close()
	tr := sc.trigger("bind me")
	select {
	case err := <-prepared:
		record(err)
	case <-sc.ctx.Done():
		t.Fatal("the run was not prepared")
	}
	run := sc.waitEnded(tr.RunID)
	if run.State != delivery.RunCompleted {
		t.Errorf("the run is %s (%q)", run.State, run.StateReason)
	}
	for _, err := range errs {
		t.Error(err)
	}
	toks := fg.seen.of(tr.RunID)
	if len(toks) == 0 {
		t.Fatal("no token was delivered for the run")
	}
	last := toks[len(toks)-1]
	_, err := c.AwaitRunInput(adapter.WithRun(sc.ctx, tr.RunID, func() string { return last }), tr.RunID, delivery.RunAwaitInput{})
	if !errors.Is(err, adapter.ErrRunInactive) {
		t.Errorf("awaiting input on the ended run with its token answered %v; want run_inactive", err)
	}

	log, ok := s.(requestLog)
	if !ok {
		return
	}
	delivered := map[string]bool{}
	for _, tok := range toks {
		delivered[Fingerprint(tok)] = true
	}
	runPath := delivery.RunPath(tr.RunID)
	for _, req := range log.Requests() {
		forRun := req.Path == runPath || strings.HasPrefix(req.Path, runPath+"/")
		switch {
		case req.Operation == "createMessage":
			if !delivered[req.Token] {
				t.Errorf("the reply was sent with token %s, not one delivered for the run", req.Token)
			}
		case forRun && req.Token == "none":
			if req.Status == 0 || req.Status < 400 {
				t.Errorf("%s of the run was sent without the run's token", req.Operation)
			}
		case forRun && !delivered[req.Token]:
			t.Errorf("%s of the run carried token %s, not one delivered for it", req.Operation, req.Token)
		case !forRun && req.Token != "none":
			t.Errorf("%s, no request of a run, carried an invocation token", req.Operation)
		}
	}
}

// bindingHandler is a RecordingHandler that also acts in prepare.
type bindingHandler struct {
	*RecordingHandler
	prepare func(ctx context.Context, inv *adapter.Invocation)
}

func (h *bindingHandler) Prepare(ctx context.Context, inv *adapter.Invocation) error {
	h.prepare(ctx, inv)
	return h.RecordingHandler.Prepare(ctx, inv)
}
