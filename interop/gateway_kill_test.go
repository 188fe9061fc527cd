package interop

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/app"
)

// An agent process (js/gateway_agent.mjs, @a2a-js/sdk) killed with
// SIGKILL in the middle of a run: the gateway delivers the run again under
// the same idempotency key, and the agent started again on the same port
// completes it; an agent that never comes back fails the run after the
// gateway's attempts, with a reason that says so, which the Go client and
// a raw SSE reader both read as a failure.
func TestGatewayAgentKilled(t *testing.T) {
	// holdRun installs the agent, starts a run that the agent holds, and
	// waits until the gateway has recorded the agent's WORKING update: the
	// agent is mid-run.
	holdRun := func(t *testing.T, srv *app.Server, js *jsGatewayAgent) (c *gateway.Client, runID string, first gwDelivery) {
		t.Helper()
		c, _ = gwUserClient(t, srv)
		inst := gwInstall(t, c, "killed", js.URL)
		runID = gwExecute(t, c, inst, "hold")
		first = waitDelivery(t, js.deliveries, runID, "first delivery")
		working := gwEvents(t, c, runID, "", func(ev gateway.StreamEvent) bool {
			return ev.WireType == gateway.EventStatus && ev.Content == "working" || ev.IsTerminal()
		})
		if last := working[len(working)-1]; last.IsTerminal() {
			t.Fatalf("the held run ended:%s", gwKinds(working))
		}
		run, err := c.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != gateway.StatusRunning || run.Attempt != 1 {
			t.Fatalf("mid-run: status %s attempt %d", run.Status, run.Attempt)
		}
		return c, runID, first
	}

	t.Run("Restarted", func(t *testing.T) {
		js := startJSGatewayAgent(t, 0, true)
		// Enough attempts, with a doubling backoff from 10ms, that the
		// run outlives any restart of the agent (30 attempts: days).
		srv := startApp(t, &app.Options{Gateway: app.GatewayOptions{MaxAttempts: 30, RetryBackoff: 10 * time.Millisecond,
			SweepEvery: 20 * time.Millisecond}})
		c, runID, first := holdRun(t, srv, js)

		js.kill9(t)
		again := startJSGatewayAgent(t, js.Port, false)
		second := waitDelivery(t, again.deliveries, runID, "redelivery")
		if second.MessageID != first.MessageID || second.ctx("idempotency_key") != first.ctx("idempotency_key") || first.MessageID == "" {
			t.Errorf("redelivered with message id %q and idempotency key %q, first %q and %q",
				second.MessageID, second.ctx("idempotency_key"), first.MessageID, first.ctx("idempotency_key"))
		}
		if second.Text != "hold" {
			t.Errorf("redelivered text %q, want the run's input", second.Text)
		}

		evs := gwFollow(t, c, runID)
		gwExactlyOnce(t, runID, evs)
		if last := evs[len(evs)-1]; last.IsFailure() || last.Status != gateway.StatusCompleted {
			t.Fatalf("the run ended on %s:%s %q; events:%s", last.WireType, last.Status, last.Content, gwKinds(evs))
		}
		var retried, again2 bool
		for _, ev := range evs {
			retried = retried || ev.Status == gateway.StatusRunning && strings.Contains(ev.Content, "retrying")
			again2 = again2 || ev.Status == gateway.StatusRunning && strings.Contains(ev.Content, "delivering again: attempt 2 of 30")
		}
		if !retried || !again2 {
			t.Errorf("no record of the dropped stream and the redelivery (retrying %v, attempt 2 %v); events:%s", retried, again2, gwKinds(evs))
		}
		run, err := c.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != gateway.StatusCompleted || run.Output != "echo: hold" || run.Attempt < 2 || run.IdempotencyKey != first.MessageID {
			t.Errorf("run = status %s output %q attempt %d key %q", run.Status, run.Output, run.Attempt, run.IdempotencyKey)
		}
	})

	t.Run("NotRestarted", func(t *testing.T) {
		js := startJSGatewayAgent(t, 0, true)
		srv := startApp(t, &app.Options{Gateway: app.GatewayOptions{MaxAttempts: 3, RetryBackoff: 10 * time.Millisecond,
			SweepEvery: 20 * time.Millisecond}})
		c, runID, _ := holdRun(t, srv, js)
		_, tok := gwUserClient(t, srv)

		js.kill9(t)
		evs := gwFollow(t, c, runID)
		gwExactlyOnce(t, runID, evs)
		last := evs[len(evs)-1]
		if !last.IsTerminal() || !last.IsFailure() || last.Status != gateway.StatusFailed {
			t.Fatalf("the Go client read the end as %s:%s (failure %v); events:%s", last.WireType, last.Status, last.IsFailure(), gwKinds(evs))
		}
		if !strings.Contains(last.Content, "attempt 3 of 3; giving up") {
			t.Errorf("the failure's reason %q does not say the attempts ran out", last.Content)
		}
		run, err := c.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != gateway.StatusFailed || run.Reason != last.Content || run.Attempt != 3 {
			t.Errorf("run = status %s reason %q attempt %d", run.Status, run.Reason, run.Attempt)
		}

		// A reader that knows nothing of the Go client: every frame is
		// "event: message" with its sequence as id, the ending is a status
		// FAILED with the reason, then error, and the stream closes.
		frames := rawEvents(t, srv.URL(), tok, runID)
		if len(frames) != len(evs)+1 {
			t.Fatalf("the raw reader got %d frames, the client %d events and then error", len(frames), len(evs))
		}
		for i, f := range frames {
			b := f.body(t)
			if f.Event != gateway.SSEEventName || f.ID != strconv.Itoa(i+1) || b.Seq != int64(i+1) || b.RunID != runID {
				t.Errorf("frame %d: event %q id %q sequence %d run %q", i, f.Event, f.ID, b.Seq, b.RunID)
			}
		}
		status, end := frames[len(frames)-2].body(t), frames[len(frames)-1].body(t)
		if status.Type != gateway.EventStatus || status.Payload.Status != string(gateway.StatusFailed) || status.Payload.Reason != run.Reason {
			t.Errorf("the raw reader's next to last frame is %s %s %q, want status FAILED with the reason", status.Type, status.Payload.Status, status.Payload.Reason)
		}
		if end.Type != gateway.EventError || end.Payload.Status != string(gateway.StatusFailed) || end.Payload.Reason == "" {
			t.Errorf("the raw reader's last frame is %s %s %q, want error FAILED with a reason", end.Type, end.Payload.Status, end.Payload.Reason)
		}
	})
}
