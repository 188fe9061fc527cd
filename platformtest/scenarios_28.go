package platformtest

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// AG28SlowStartAndRestart checks a run whose prepare is slow: the event
// is acknowledged once it is stored, while the run is still queued, and
// not delivered again after the ack timeout; a platform restarted with
// the consumer before the event delivers it again with a newer token,
// which replaces the stored one without a second prepare, and the first
// token is then superseded; once the newest token expired too and the
// prepare ends, the adapter renews once and starts once, with the
// renewed token, and executes once.
func AG28SlowStartAndRestart(t *testing.T, s ScenarioServer, opts *ScenarioOptions) {
	sc, cancel := newScenario(t, s, opts)
	defer cancel()
	const consumer = "ag28"
	fg := &forger{sc: sc}
	h := &RecordingHandler{HoldPrepare: make(chan struct{})}
	r := sc.start(consumer, h, fg.wrap)
	defer r.close()
	tr := sc.trigger("slow start")
	if err := h.Wait(sc.ctx, func(h *RecordingHandler) bool { return slices.Contains(h.Prepares(), tr.RunID) }); err != nil {
		t.Fatal("the run was not prepared")
	}
	sc.waitAcked(consumer, r, tr.RunID)
	if run, _ := sc.s.RunState(sc.ctx, tr.RunID); run.State != delivery.RunQueued {
		t.Errorf("the run is %s while its prepare runs; want queued", run.State)
	}
	deliveries := func() (n int, seq int64) {
		for _, ev := range r.rec.Events() {
			if ev.Event.Type == delivery.EventInvocation && runOf(ev.Event) == tr.RunID {
				n, seq = n+1, ev.Event.Seq
			}
		}
		return n, seq
	}
	_, seq := deliveries()

	// Past the ack timeout nothing comes again: a marker run triggered
	// after shows the adapter received what the platform had.
	sc.s.PassTime(sc.ctx, sc.s.Timing().AckTimeout+time.Second)
	marker := sc.trigger("marker")
	if err := waitFor(sc.ctx, func() bool { return len(fg.seen.of(marker.RunID)) > 0 }); err != nil {
		t.Fatal("the marker run's event never came")
	}
	// Its acknowledgement must not land after the restart and undo it.
	sc.waitAcked(consumer, r, marker.RunID)
	if n, _ := deliveries(); n != 1 {
		t.Errorf("the acknowledged event was delivered %d times", n)
	}

	// The platform comes back with the consumer before the event.
	if err := sc.s.Restart(sc.ctx, consumer, seq-1); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(sc.ctx, func() bool { n, _ := deliveries(); return n >= 2 }); err != nil {
		t.Fatal("the event was not delivered again after the restart")
	}
	sc.waitAcked(consumer, r, tr.RunID)
	toks := fg.seen.of(tr.RunID)
	if len(toks) < 2 || toks[0] == toks[1] {
		t.Fatal("the redelivery carried no newer token")
	}
	c := sc.client()
	first := toks[0]
	_, err := c.StartRun(adapter.WithRun(sc.ctx, tr.RunID, func() string { return first }), tr.RunID,
		delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat})
	if !refusedAs(err, delivery.TokenSuperseded) {
		t.Errorf("a start with the first token answered %v; want invocation_token_invalid (superseded)", err)
	}

	// Both tokens expire; then the prepare ends.
	tm := sc.s.Timing()
	sc.s.PassTime(sc.ctx, tm.TokenTTL+tm.ClockLeeway+time.Second)
	close(h.HoldPrepare)
	run := sc.waitEnded(tr.RunID)
	if run.State != delivery.RunCompleted || run.Starts != 1 {
		t.Errorf("the run is %s (%q) after %d starts; want completed after one", run.State, run.StateReason, run.Starts)
	}
	if p, e := count(h.Prepares(), tr.RunID), count(h.Executes(), tr.RunID); p != 1 || e != 1 {
		t.Errorf("%d prepares and %d executes of the run; want one each", p, e)
	}
	jtis := h.ExecuteJTIs()
	executed := jtis[slices.Index(h.Executes(), tr.RunID)]
	for _, tok := range fg.seen.of(tr.RunID) {
		if jtiOf(tok) == executed {
			t.Error("the run started on a delivered, expired token, not a renewed one")
		}
	}
	if log, ok := s.(requestLog); ok {
		renews, starts := 0, 0
		var seen []string
		for _, req := range log.Requests() {
			if !strings.Contains(req.Path, "/runs/"+tr.RunID) || req.Status == http.StatusUnauthorized {
				continue // a stale DPoP nonce's try, repeated at once
			}
			seen = append(seen, req.Operation+"("+req.Token+")")
			switch req.Operation {
			case "renewInvocationToken":
				renews++
			case "startRun":
				starts++
			}
		}
		// One start is the scenario's own, with the first token.
		if renews != 1 || starts != 2 {
			t.Errorf("%d renewals and %d starts by the adapter; want one each: %v", renews, starts-1, seen)
		}
	}
}
