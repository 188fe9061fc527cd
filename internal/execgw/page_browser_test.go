package execgw_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/webui/uitest"
)

// TestRunsPageBrowser drives /ui/runs in headless Chromium against the
// gateway on a memory store: a user signs in, watches a run's events
// arrive live while the agent works, answers its pause in the reply box
// and sees it complete, then cancels another run from its page. Every
// wait is on the page's DOM or on the agent's own progress.
// NOVAOS_TEST_SCREENSHOTS names a directory to keep screenshots in.
func TestRunsPageBrowser(t *testing.T) {
	working, release, pauseNow, finish := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	wait := func(w *frameWriter, ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-w.ctx.Done():
			return false
		}
	}
	payer := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("reading the ledger")))
			close(working)
			if !wait(w, release) {
				return
			}
			w.text("a1", "found 3 invoices", false)
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("checking totals")))
			if !wait(w, pauseNow) {
				return
			}
			w.status(a2a.TaskStateInputRequired, hitl.NewMessage("Which account?",
				&hitl.HITL{Type: hitl.TypeInputRequest, Content: "Which account?", SessionID: "s-1", InputType: hitl.InputText,
					Actions: []hitl.Action{{ID: "pay", Label: "Pay", Style: "primary"}, {ID: "stop", Label: "Stop", Style: "danger"}}}))
		},
		func(req *a2a.SendMessageRequest, w *frameWriter) {
			if !wait(w, finish) {
				return
			}
			w.text("a2", "paid from "+req.Message.Text(), false)
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
	slowStarted := make(chan struct{})
	slow := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("working slowly")))
			close(slowStarted)
			<-w.ctx.Done()
		},
	}}
	const hostile = `</td><script>document.title='owned'</script><img src=x onerror="document.title='owned'">`
	evilStarted, evilGo, evilPause := make(chan struct{}), make(chan struct{}), make(chan struct{})
	evil := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("starting")))
			close(evilStarted)
			if !wait(w, evilGo) {
				return
			}
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart(hostile)))
			w.text("x", hostile, false)
			if !wait(w, evilPause) {
				return
			}
			w.status(a2a.TaskStateInputRequired, hitl.NewMessage(hostile, hitl.InputRequest(hostile, hitl.InputText, nil, "")))
		},
	}}
	e := newEnv(t, hostedAgents{"payer": payer, "slow": slow, "evil": evil}, nil)
	payerInst, slowInst, evilInst := e.install("payer", "payer", nil), e.install("slow", "slow", nil), e.install("evil", "evil", nil)

	shots := os.Getenv("NOVAOS_TEST_SCREENSHOTS")
	shot := func(b *uitest.Browser, name string) {
		if shots != "" {
			b.Screenshot(filepath.Join(shots, "runs-"+name+".png"))
		}
	}

	b := uitest.NewBrowser(t, e.srv.URL+execgw.RunsPagePath)
	if msg := b.LoginRefused("not-a-token"); !strings.Contains(msg, "Refused") {
		t.Errorf("a wrong token's message is %q", msg)
	}
	b.Login(userTok, "#runs, #empty")

	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: payerInst, Input: "pay the open invoices"})
	await(t, working, "the agent to start")
	// The page is opened once the agent's progress is stored, so that
	// every row that arrives live is one of the work released below.
	waitEvent(t, e, run, "reading the ledger")
	b.Navigate(b.Base+"/"+run, `#events[data-live="on"]`)
	if got := b.Text("#status"); got != "RUNNING" {
		t.Errorf("status %q, want RUNNING", got)
	}
	if got := b.Text("#events"); !strings.Contains(got, "reading the ledger") {
		t.Errorf("the events so far lack the agent's progress: %q", got)
	}
	// A reload would drop the mark: the rows that follow are live.
	b.Mark("body", "data-before-live")
	close(release)
	b.WaitVisible(`#events tbody tr.fresh.t-status`)
	var live []string
	for _, n := range b.Nodes("#events tbody tr.fresh") {
		live = append(live, b.NodeText(n))
	}
	if got := strings.Join(live, "\n"); !strings.Contains(got, "found 3 invoices") || !strings.Contains(got, "checking totals") {
		t.Errorf("live rows %q lack the agent's work", got)
	}
	if len(b.Nodes("body[data-before-live]")) != 1 {
		t.Error("the page reloaded instead of appending the live events")
	}
	shot(b, "live")

	// The pause reloads the page with the reply box.
	close(pauseNow)
	b.WaitVisible("#reply")
	if got := b.Text("#pause-content"); got != "Which account?" {
		t.Errorf("pause question %q", got)
	}
	if got := b.Text("#status"); got != "WAITING_USER" {
		t.Errorf("status %q, want WAITING_USER", got)
	}
	shot(b, "paused")
	b.Type("#input_value", "savings")
	b.Click(`button[data-action="pay"]`, "#flash")
	if got := b.Text("#flash"); got != "Answer sent; the run continues." {
		t.Errorf("flash after the reply %q", got)
	}
	// The ending reloads the page: the server renders the output and the
	// artifacts.
	b.WaitVisible(`#events[data-live="on"]`)
	close(finish)
	b.WaitVisible("#output")
	if got := b.Text("#output"); got != "paid from savings" {
		t.Errorf("output %q", got)
	}
	if got := b.Text("#status"); got != "COMPLETED" {
		t.Errorf("status %q, want COMPLETED", got)
	}
	if got := b.Text("#artifacts"); !strings.Contains(got, "paid from savings") {
		t.Errorf("artifacts %q", got)
	}
	if len(b.Nodes("#cancel")) != 0 || len(b.Nodes("#reply")) != 0 {
		t.Error("an ended run offers cancel or a reply")
	}
	shot(b, "completed")
	if r := e.waitStatus(run, gateway.StatusCompleted); r.Turn != 2 {
		t.Errorf("run %+v: want two turns", r)
	}

	// Cancel another run from its page.
	other := e.execute(userTok, gateway.ExecuteRequest{InstanceID: slowInst, Input: "take your time"})
	await(t, slowStarted, "the slow agent to start")
	b.Navigate(b.Base+"/"+other, "#cancel")
	b.Click("#cancel", "#flash")
	if got := b.Text("#flash"); got != "Run cancelled." {
		t.Errorf("flash after cancel %q", got)
	}
	if got := b.Text("#status"); got != "CANCELLED" {
		t.Errorf("status after cancel %q", got)
	}
	if r := e.waitStatus(other, gateway.StatusCancelled); !strings.Contains(r.Reason, "cancelled by") {
		t.Errorf("cancelled run %+v", r)
	}
	shot(b, "cancelled")

	// Text an agent wrote runs nothing, whether it arrives live (the
	// script's rows) or rendered by the server (the pause, the output).
	bad := e.execute(userTok, gateway.ExecuteRequest{InstanceID: evilInst, Input: hostile})
	await(t, evilStarted, "the hostile agent to start")
	waitEvent(t, e, bad, "starting")
	b.Navigate(b.Base+"/"+bad, `#events[data-live="on"]`)
	b.Mark("body", "data-before-live")
	close(evilGo)
	b.WaitVisible(`#events tbody tr.fresh.t-message-delta`)
	if got := b.Text("#events tbody tr.fresh.t-message-delta"); !strings.Contains(got, hostile) {
		t.Errorf("the hostile live row shows as %q", got)
	}
	if title := b.Title(); strings.Contains(title, "owned") || len(b.Nodes("body[data-before-live]")) != 1 {
		t.Errorf("script from a live event ran (title %q) or the page reloaded", title)
	}
	close(evilPause)
	b.WaitVisible("#reply")
	if got := b.Text("#pause-content"); got != hostile {
		t.Errorf("the hostile question shows as %q", got)
	}
	if got := b.Text("#events"); !strings.Contains(got, "<script>document.title='owned'</script>") {
		t.Errorf("the hostile events do not show as text: %q", got)
	}
	if title := b.Title(); strings.Contains(title, "owned") {
		t.Errorf("script from the agent ran: title %q", title)
	}
	shot(b, "hostile")

	b.Navigate(b.Base, "#runs")
	rows := b.Nodes("#runs tbody tr")
	if len(rows) != 3 || rows[0].AttributeValue("data-run-id") != bad || rows[1].AttributeValue("data-run-id") != other || rows[2].AttributeValue("data-run-id") != run {
		t.Errorf("the list shows %d runs, want the hostile, the cancelled and the completed one, newest first", len(rows))
	}
	shot(b, "list")
	b.Logout()
	b.ExpectSignedOut()
}

// waitEvent waits until one of run's stored events carries text (a bound
// on a failure, not a timing assumption).
func waitEvent(t *testing.T, e *env, run, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := e.store.Events(context.Background(), run, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has no event with %q", run, text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// await waits for ch to close, failing the test after a generous bound.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
	}
}
