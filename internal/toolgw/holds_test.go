package toolgw

import (
	"context"
	"errors"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// A run waiting on a held write is answered once the gate decided it: an
// approval approves, a denial, expiry or kill rejects, and an undecided
// hold or a pause the gateway did not raise is left to wait. The check
// reads every page of waiting runs.
func TestHeldWritesAnswered(t *testing.T) {
	h := newHarnessWith(t, &Options{HoldCheckEvery: time.Hour})
	rec := func(run, call string, st gate.ActionState, by string) {
		h.gate.records["acme/tools-run-"+run+"/"+call] = gate.ActionRecord{State: st, DecidedBy: by}
	}
	h.gate.mu.Lock()
	h.gate.records = map[string]gate.ActionRecord{}
	rec("r1", "c1", gate.ActionApproved, "ops@example.com")
	rec("r2", "c2", gate.ActionDenied, "ops@example.com")
	rec("r3", "c3", gate.ActionHeld, "")
	rec("r4", "c4", gate.ActionExpired, "")
	rec("r5", "c5", gate.ActionKilled, "")
	rec("r7", "c7", gate.ActionPassed, "")
	h.gate.mu.Unlock()
	h.runs.mu.Lock()
	h.runs.answered = make(chan runAnswer, 16)
	for _, w := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		h.runs.waiting = append(h.runs.waiting, WaitingWrite{Tenant: "acme", RunID: "r" + w, CallID: "c" + w})
	}
	h.runs.mu.Unlock()
	h.svc.Decided()
	got := map[string]runAnswer{}
	for len(got) < 5 {
		a := <-h.runs.answered
		if _, twice := got[a.RunID]; twice {
			t.Fatalf("run %s answered twice", a.RunID)
		}
		got[a.RunID] = a
	}
	h.runs.mu.Lock()
	left := len(h.runs.waiting)
	h.runs.mu.Unlock()
	if left != 2 {
		t.Fatalf("%d runs left waiting, want r3 (held) and r6 (not the gateway's)", left)
	}
	want := map[string]struct {
		approved bool
		actor    string
	}{"r1": {true, "ops@example.com"}, "r2": {false, "ops@example.com"}, "r4": {false, "gate"}, "r5": {false, "gate"}, "r7": {true, "gate"}}
	if len(got) != len(want) {
		t.Fatalf("answered %+v, want %v", got, want)
	}
	for run, w := range want {
		a := got[run]
		if a.Approved != w.approved || a.Actor != w.actor || a.CallID != "c"+run[1:] || a.Tenant != "acme" {
			t.Errorf("run %s answered %+v, want approved %v by %s", run, a, w.approved, w.actor)
		}
	}
}

// A decision made in this process wakes the check at once; a gate that
// cannot be read leaves every run waiting.
func TestDecidedWakesTheCheck(t *testing.T) {
	h := newHarnessWith(t, &Options{HoldCheckEvery: time.Hour})
	h.runs.mu.Lock()
	h.runs.answered = make(chan runAnswer, 1)
	h.runs.waiting = []WaitingWrite{{Tenant: "acme", RunID: "r1", CallID: "c1"}}
	h.runs.mu.Unlock()
	h.gate.mu.Lock()
	h.gate.actionErr = errors.New("gate store down")
	h.gate.mu.Unlock()
	if err := h.svc.checkHolds(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.runs.mu.Lock()
	answered := len(h.runs.answers)
	h.runs.mu.Unlock()
	if answered != 0 {
		t.Fatal("a run was answered while the gate could not be read")
	}
	h.gate.mu.Lock()
	h.gate.actionErr = nil
	h.gate.records = map[string]gate.ActionRecord{"acme/tools-run-r1/c1": {State: gate.ActionApproved}}
	h.gate.mu.Unlock()
	h.svc.Decided()
	if a := <-h.runs.answered; a.RunID != "r1" || !a.Approved {
		t.Fatalf("answered %+v", a)
	}
}

// A page of waiting runs with no write confirmation among them does not
// end the check: the next page is read.
func TestHeldWritesPastAnEmptyPage(t *testing.T) {
	h := newHarnessWith(t, &Options{HoldCheckEvery: time.Hour})
	h.gate.mu.Lock()
	h.gate.records = map[string]gate.ActionRecord{"acme/tools-run-r9/c9": {State: gate.ActionApproved}}
	h.gate.mu.Unlock()
	h.runs.mu.Lock()
	h.runs.answered = make(chan runAnswer, 1)
	h.runs.emptyPages = 2
	h.runs.waiting = []WaitingWrite{{Tenant: "acme", RunID: "r9", CallID: "c9"}}
	h.runs.mu.Unlock()
	h.svc.Decided()
	if a := <-h.runs.answered; a.RunID != "r9" || !a.Approved {
		t.Fatalf("answered %+v", a)
	}
}
