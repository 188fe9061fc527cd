package interop

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/app"
)

// An a2a-go agent and an a2a-js agent, each installed by URL, run through
// the execution gateway of a NovaOS server on SQLite and followed with the
// Go client: the answer, the artifacts, the platform context the agent
// received, and a human-in-the-loop round trip on the same task.
func TestGatewayPeers(t *testing.T) {
	srv := startApp(t, &app.Options{})
	c, tok := gwUserClient(t, srv)
	goAgent, goURL := startGWGoAgent(t)
	js := startJSGatewayAgent(t, 0, true)

	for _, p := range []struct {
		name       string
		url        string
		deliveries <-chan gwDelivery
		cancels    <-chan string
		// goSDK: the a2a-go peer also shows the request's headers and
		// the execution token.
		goSDK bool
	}{
		{name: "a2a-go", url: goURL, deliveries: goAgent.deliveries, cancels: goAgent.cancels, goSDK: true},
		{name: "a2a-js", url: js.URL, deliveries: js.deliveries, cancels: js.cancels},
	} {
		t.Run(p.name, func(t *testing.T) {
			inst := gwInstall(t, c, p.name, p.url)

			t.Run("Completed", func(t *testing.T) {
				runID := gwExecute(t, c, inst, "hello gateway")
				evs := gwFollow(t, c, runID)
				gwExactlyOnce(t, runID, evs)
				// The client stops at the first terminal event, the status
				// that records the ending; the raw reader below sees done.
				if last := evs[len(evs)-1]; last.IsFailure() || last.Status != gateway.StatusCompleted || last.Content == "" {
					t.Fatalf("the run ended on %s:%s %q, want status COMPLETED with a reason; events:%s", last.WireType, last.Status, last.Content, gwKinds(evs))
				}
				final, ok := gwFind(evs, gateway.EventMessageFinal, "")
				if !ok || final.Content != "echo: hello gateway" {
					t.Errorf("message.final = %q (found %v), want the agent's answer; events:%s", final.Content, ok, gwKinds(evs))
				}
				if diff := cmp.Diff(gwIndex(t, c, runID), append(gwWireTypes(evs), gateway.EventDone)); diff != "" {
					t.Errorf("event index and stream differ (-index +stream):\n%s", diff)
				}
				frames := rawEvents(t, srv.URL(), tok, runID)
				if len(frames) != len(evs)+1 {
					t.Errorf("a raw reader got %d frames, the client %d events and then done", len(frames), len(evs))
				} else if b := frames[len(frames)-1].body(t); b.Type != gateway.EventDone || b.Payload.Status != string(gateway.StatusCompleted) {
					t.Errorf("a raw reader's last frame is %s %s, want done COMPLETED", b.Type, b.Payload.Status)
				}

				run, err := c.GetRun(t.Context(), runID)
				if err != nil {
					t.Fatal(err)
				}
				if run.Status != gateway.StatusCompleted || run.Reason == "" || run.Output != "echo: hello gateway" || run.Turn != 1 || run.Attempt != 1 {
					t.Errorf("run = status %s reason %q output %q turn %d attempt %d", run.Status, run.Reason, run.Output, run.Turn, run.Attempt)
				}
				if len(run.Artifacts) != 1 || a2a.PartsText(run.Artifacts[0].Parts) != "echo: hello gateway" {
					t.Errorf("artifacts = %+v, want the agent's one", run.Artifacts)
				}

				d := waitDelivery(t, p.deliveries, runID, "delivery")
				checkPlatformContext(t, d, run, inst.ID)
				if run.TaskID != d.TaskID || run.ContextID != d.ContextID {
					t.Errorf("run task %q context %q, the agent's %q %q", run.TaskID, run.ContextID, d.TaskID, d.ContextID)
				}
				if p.goSDK {
					if d.Authorization != "Bearer "+d.Token {
						t.Error("the request's Authorization is not the platform context's execution token")
					}
					checkRS256(t, d.Token)
				}
			})

			// A second run on a thread carries the thread's earlier turn,
			// oldest first, in the platform context.
			t.Run("Thread", func(t *testing.T) {
				thread := "thread-" + p.name
				var runs []string
				for _, input := range []string{"first", "second"} {
					res, err := c.Execute(t.Context(), gateway.ExecuteRequest{InstanceID: inst.ID, Input: input, ThreadID: thread})
					if err != nil {
						t.Fatalf("execute: %v", err)
					}
					if last := gwFollow(t, c, res.RunID); last[len(last)-1].IsFailure() {
						t.Fatalf("run %q failed:%s", input, gwKinds(last))
					}
					runs = append(runs, res.RunID)
				}
				first := waitDelivery(t, p.deliveries, runs[0], "first turn")
				second := waitDelivery(t, p.deliveries, runs[1], "second turn")
				if _, ok := first.Context["history"]; ok || first.ctx("thread_id") != thread {
					t.Errorf("the thread's first run: thread_id %q, history %v", first.ctx("thread_id"), first.Context["history"])
				}
				want := []any{map[string]any{"role": "user", "content": "first"}, map[string]any{"role": "assistant", "content": "echo: first"}}
				if diff := cmp.Diff(want, second.Context["history"]); diff != "" || second.ctx("thread_id") != thread {
					t.Errorf("the thread's second run: thread_id %q, history (-want +got):\n%s", second.ctx("thread_id"), diff)
				}
			})

			if p.goSDK {
				// An agent that refuses the request with an A2A error
				// fails the run at once: a retry would be refused again.
				t.Run("Refused", func(t *testing.T) {
					runID := gwExecute(t, c, inst, "refuse")
					evs := gwFollow(t, c, runID)
					gwExactlyOnce(t, runID, evs)
					last := evs[len(evs)-1]
					if !last.IsFailure() || last.Status != gateway.StatusFailed || !strings.HasPrefix(last.Content, "the agent refused the request") {
						t.Fatalf("the refused run ended on %s:%s %q, want status FAILED saying the agent refused; events:%s", last.WireType, last.Status, last.Content, gwKinds(evs))
					}
					run, err := c.GetRun(t.Context(), runID)
					if err != nil {
						t.Fatal(err)
					}
					if run.Attempt != 1 {
						t.Errorf("the refused run was delivered %d times, want once", run.Attempt)
					}
				})
			}

			// A run cancelled while the agent works: the gateway asks the
			// agent to cancel its task, and both readers see CANCELLED.
			t.Run("Cancelled", func(t *testing.T) {
				runID := gwExecute(t, c, inst, "hold")
				d := waitDelivery(t, p.deliveries, runID, "delivery")
				working := gwEvents(t, c, runID, "", func(ev gateway.StreamEvent) bool {
					return ev.WireType == gateway.EventStatus && ev.Content == "working" || ev.IsTerminal()
				})
				if working[len(working)-1].IsTerminal() {
					t.Fatalf("the held run ended:%s", gwKinds(working))
				}
				cancelled, err := c.CancelRun(t.Context(), runID)
				if err != nil {
					t.Fatalf("cancel: %v", err)
				}
				if cancelled.Status != gateway.StatusCancelled || cancelled.Reason == "" {
					t.Errorf("cancel answered status %s reason %q", cancelled.Status, cancelled.Reason)
				}
				waitCancel(t, p.cancels, d.TaskID)
				evs := gwFollow(t, c, runID)
				gwExactlyOnce(t, runID, evs)
				if last := evs[len(evs)-1]; !last.IsFailure() || last.Status != gateway.StatusCancelled || last.Content == "" {
					t.Fatalf("the Go client read the end as %s:%s %q (failure %v); events:%s", last.WireType, last.Status, last.Content, last.IsFailure(), gwKinds(evs))
				}
				frames := rawEvents(t, srv.URL(), tok, runID)
				if len(frames) != len(evs)+1 {
					t.Fatalf("the raw reader got %d frames, the client %d events and then error", len(frames), len(evs))
				}
				status, end := frames[len(frames)-2].body(t), frames[len(frames)-1].body(t)
				if status.Type != gateway.EventStatus || status.Payload.Status != string(gateway.StatusCancelled) || status.Payload.Reason == "" ||
					end.Type != gateway.EventError || end.Payload.Status != string(gateway.StatusCancelled) {
					t.Errorf("the raw reader's last frames are %s %s %q and %s %s, want status CANCELLED with a reason, then error",
						status.Type, status.Payload.Status, status.Payload.Reason, end.Type, end.Payload.Status)
				}
				// Nothing the agent says after the cancel changes the run.
				run, err := c.GetRun(t.Context(), runID)
				if err != nil {
					t.Fatal(err)
				}
				if run.Status != gateway.StatusCancelled || run.LastSequence != int64(len(frames)) {
					t.Errorf("run = status %s last sequence %d, want CANCELLED at %d", run.Status, run.LastSequence, len(frames))
				}
			})

			t.Run("InputRequired", func(t *testing.T) {
				runID := gwExecute(t, c, inst, "ask")
				paused := gwEvents(t, c, runID, "", func(ev gateway.StreamEvent) bool { return ev.WireType == gateway.EventHITL })
				hitlEv := paused[len(paused)-1]
				if hitlEv.WireType != gateway.EventHITL || hitlEv.IsTerminal() {
					t.Fatalf("the stream ended before a hitl event:%s", gwKinds(paused))
				}
				if _, ok := gwFind(paused, gateway.EventStatus, gateway.StatusWaitingUser); !ok {
					t.Errorf("no status WAITING_USER before the hitl event:%s", gwKinds(paused))
				}
				if !strings.Contains(string(hitlEv.Payload), "what number?") {
					t.Errorf("hitl payload %s does not carry the agent's question", hitlEv.Payload)
				}
				waiting, err := c.GetRun(t.Context(), runID)
				if err != nil {
					t.Fatal(err)
				}
				if waiting.Status != gateway.StatusWaitingUser || len(waiting.Pause) == 0 {
					t.Fatalf("paused run = status %s pause %s", waiting.Status, waiting.Pause)
				}
				d1 := waitDelivery(t, p.deliveries, runID, "first delivery")
				checkPlatformContext(t, d1, waiting, inst.ID)
				if p.goSDK {
					// The run lives: its token verifies, for this run only.
					claims, err := srv.Issuer().Verify(t.Context(), d1.Token)
					if err != nil {
						t.Fatalf("the execution token of a waiting run does not verify: %v", err)
					}
					if claims.RunID != runID || claims.TenantID != gwTenant || claims.UserID != gwUser || claims.InstanceID != inst.ID {
						t.Errorf("execution token claims run %q tenant %q user %q instance %q", claims.RunID, claims.TenantID, claims.UserID, claims.InstanceID)
					}
				}

				res, err := c.Reply(t.Context(), runID, gateway.Reply{Input: "42"})
				if err != nil {
					t.Fatalf("reply: %v", err)
				}
				if res.RunID != runID {
					t.Errorf("reply continued run %q, want %q", res.RunID, runID)
				}
				// A second pause would hold the stream open: stop there too.
				rest := gwEvents(t, c, runID, hitlEv.ID, func(ev gateway.StreamEvent) bool { return ev.WireType == gateway.EventHITL })
				all := append(paused, rest...)
				gwExactlyOnce(t, runID, all)
				if last := all[len(all)-1]; !last.IsTerminal() || last.IsFailure() {
					t.Fatalf("the answered run ended on %s:%s; events:%s", last.WireType, last.Status, gwKinds(all))
				}
				if final, ok := gwFind(rest, gateway.EventMessageFinal, ""); !ok || final.Content != "answer: 42" {
					t.Errorf("message.final after the reply = %q; events:%s", final.Content, gwKinds(rest))
				}

				run, err := c.GetRun(t.Context(), runID)
				if err != nil {
					t.Fatal(err)
				}
				d2 := waitDelivery(t, p.deliveries, runID, "reply delivery")
				if run.Status != gateway.StatusCompleted || run.Turn != 2 || run.Output != "answer: 42" {
					t.Errorf("run = status %s turn %d output %q", run.Status, run.Turn, run.Output)
				}
				checkPlatformContext(t, d2, run, inst.ID)
				if d2.Text != "42" || !d2.Resumed || d2.TaskID != d1.TaskID || run.TaskID != d1.TaskID {
					t.Errorf("reply delivery = text %q resumed %v task %q, first task %q, run task %q", d2.Text, d2.Resumed, d2.TaskID, d1.TaskID, run.TaskID)
				}
				if d2.MessageID == d1.MessageID || d2.ctx("idempotency_key") == d1.ctx("idempotency_key") {
					t.Errorf("the reply was delivered under the first turn's idempotency key %q", d1.MessageID)
				}
				if d2.ctx("run_id") != runID {
					t.Errorf("reply delivery run_id %q, want %q", d2.ctx("run_id"), runID)
				}
			})
		})
	}
}

// checkRS256 checks that token is a JWT signed RS256 with a key id, as
// seed-style agents verify execution tokens.
func checkRS256(t *testing.T, token string) {
	t.Helper()
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		t.Fatal("the execution token is not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		t.Fatalf("the execution token's header: %v", err)
	}
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("the execution token's header: %v", err)
	}
	if h.Alg != "RS256" || h.Kid == "" {
		t.Errorf("execution token header alg %q kid %q, want RS256 with a kid", h.Alg, h.Kid)
	}
}
