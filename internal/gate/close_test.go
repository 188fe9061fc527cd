package gate

import (
	"context"
	"testing"
	"time"

	pub "novaos.dev/novaos/gate"
)

// Close ends a long-poll at once with the hold still pending, and a
// later one answers at once: a shutting-down server is not held up by
// agents waiting on holds, and the holds themselves are untouched.
func TestCloseEndsWaits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, &Options{Now: time.Now})
	f.rules(refundRules)
	f.open("s1", 30, false)
	if v := f.submit(action("s1", "big", "refund", 900, "c1", false), true); v.Verdict != pub.Hold {
		t.Fatalf("submit: %+v", v)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.svc.Close()
	}()
	for range 2 {
		start := time.Now()
		got, err := f.svc.Wait(ctx, agent, pub.WaitRequest{SessionID: "s1", ActionID: "big", TimeoutS: 20})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the wait took %v after Close", took)
		}
		if got.Verdict != pub.Hold || got.Hold == nil || got.Hold.State != pub.HoldPending {
			t.Fatalf("wait after Close: %+v, want the hold still pending", got)
		}
	}
	f.svc.Close() // twice is fine
}
