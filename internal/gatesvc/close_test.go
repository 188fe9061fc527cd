package gatesvc

import (
	"context"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// Close ends a long-poll at once with the hold still pending, and a
// later one answers at once: a shutting-down server is not held up by
// agents waiting on holds, and the holds themselves are untouched.
func TestCloseEndsWaits(t *testing.T) {
	ctx := context.Background()
	// The wait's deadline and its re-read are an hour away: only Close
	// can end it within the test's bound.
	f := newFixture(t, &Options{MaxWait: time.Hour})
	f.svc.recheck = time.Hour
	f.rules(refundRules)
	f.open("s1", 7200, false)
	if v := f.submit(action("s1", "big", "refund", 900, "c1", false), true); v.Verdict != gate.Hold {
		t.Fatalf("submit: %+v", v)
	}
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for !f.svc.waiting("s1", "big") && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		f.svc.Close()
	}()
	for range 2 {
		done := make(chan gate.Verdict, 1)
		go func() {
			got, err := f.svc.Wait(ctx, agent, gate.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: 3600})
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		var got gate.Verdict
		select {
		case got = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not end the wait")
		}
		if got.Verdict != gate.Hold || got.Hold == nil || got.Hold.State != gate.HoldPending {
			t.Fatalf("wait after Close: %+v, want the hold still pending", got)
		}
	}
	f.svc.Close() // twice is fine
}
