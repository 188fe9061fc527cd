package triage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/triage/triagetest"
	"novaos.dev/novaos/internal/httpapi"
)

// TestBrowser drives the page in headless Chromium behind the platform's
// Guard, as an operator decides two held writes while each waits: approve
// lets the first run, deny keeps the second from running.
// NOVAOS_TEST_SCREENSHOTS names a directory to keep screenshots in.
func TestBrowser(t *testing.T) {
	hs := newHarness(t, nil)
	second := heldAction("acme", "s-3", "a-second", t0.Add(-2*time.Minute))
	hostile := heldAction("acme", "s-4", "a-hostile", t0.Add(-time.Minute))
	var a gate.Action
	if err := json.Unmarshal(hostile.Action, &a); err != nil {
		t.Fatal(err)
	}
	a.Evidence[0].Result = json.RawMessage(`"<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"`)
	a.Reasoning = "</pre><script>document.title='owned'</script>"
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	hostile.Action = raw
	hs.op.add(second, hostile)

	ts := httptest.NewUnstartedServer(nil)
	guard, err := httpapi.NewGuard(&httpapi.Options{Addr: ts.Listener.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/gate", hs.h)
	mux.Handle("/ui/gate/", hs.h)
	ts.Config.Handler = guard.Handler(mux)
	ts.Start()
	defer ts.Close()

	// Each held write waits for its decision, as the SDK's call would;
	// effects counts the writes that ran.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		kind gate.OperatorDecisionKind
		err  error
	}
	waiting := map[string]chan outcome{}
	for _, id := range [][2]string{{"s-1", "a-held"}, {"s-3", "a-second"}} {
		ch := make(chan outcome, 1)
		waiting[id[1]] = ch
		go func() {
			k, err := hs.op.wait(ctx, id[0], id[1])
			ch <- outcome{k, err}
		}()
	}
	awaitWrite := func(action string) gate.OperatorDecisionKind {
		t.Helper()
		select {
		case o := <-waiting[action]:
			if o.err != nil {
				t.Fatalf("write %s: %v", action, o.err)
			}
			return o.kind
		case <-time.After(5 * time.Second):
			t.Fatalf("write %s still waiting 5s after the decision", action)
		}
		return ""
	}

	shots := os.Getenv("NOVAOS_TEST_SCREENSHOTS")
	shot := func(b *triagetest.Browser, name string) {
		if shots != "" {
			b.Screenshot(filepath.Join(shots, name+".png"))
		}
	}

	b := triagetest.NewBrowser(t, ts.URL+"/ui/gate")
	if msg := b.LoginRefused("not-a-token"); !strings.Contains(msg, "Refused") {
		t.Errorf("a wrong token's message is %q", msg)
	}
	b.Login(tokenAcme)

	row := b.WaitForAction("s-1", "a-held")
	for _, s := range []string{"PAUSED", "pay_invoice", "ap-agent", "ap-bank-change", "1m0s"} {
		if !strings.Contains(row.Text, s) {
			t.Errorf("list row %q lacks %q", row.Text, s)
		}
	}
	if rows := b.Rows(); len(rows) != 4 {
		t.Errorf("the list shows %d actions, want acme's 4: %+v", len(rows), rows)
	}
	shot(b, "list")

	b.Open("s-1", "a-held")
	if got := b.State(); got != "PAUSED" {
		t.Errorf("state %q, want PAUSED", got)
	}
	if got := b.Text("#reasoning"); !strings.Contains(got, "discount window") {
		t.Errorf("reasoning %q", got)
	}
	if got := b.Text("#evidence"); !strings.Contains(got, "call-bb2") || !strings.Contains(got, "cut from 90210 bytes") {
		t.Errorf("evidence %q lacks its provenance", got)
	}
	shot(b, "detail")
	flash := b.Decide(gate.DecisionApprove, "bank change confirmed by phone")
	if !strings.Contains(flash, "Action a-held approved.") {
		t.Errorf("flash after approve: %q", flash)
	}
	if k := awaitWrite("a-held"); k != gate.DecisionApprove {
		t.Errorf("the first write was woken by %q, want approve", k)
	}
	calls := hs.op.decideCalls()
	if want := (decideCall{Tenant: "acme", Session: "s-1", Action: "a-held", Actor: "alice@acme",
		Decision: gate.OperatorDecision{Decision: gate.DecisionApprove, Note: "bank change confirmed by phone"}}); len(calls) != 1 || calls[0] != want {
		t.Errorf("Decide calls %+v, want [%+v]", calls, want)
	}
	shot(b, "approved")
	for _, r := range b.Rows() {
		if r.ActionID == "a-held" {
			t.Error("the approved action is still on the list")
		}
	}

	b.WaitForAction("s-3", "a-second")
	b.Open("s-3", "a-second")
	flash = b.Decide(gate.DecisionDeny, "")
	if !strings.Contains(flash, "Action a-second denied.") {
		t.Errorf("flash after deny: %q", flash)
	}
	if k := awaitWrite("a-second"); k != gate.DecisionDeny {
		t.Errorf("the second write was woken by %q, want deny", k)
	}
	calls = hs.op.decideCalls()
	if want := (decideCall{Tenant: "acme", Session: "s-3", Action: "a-second", Actor: "alice@acme",
		Decision: gate.OperatorDecision{Decision: gate.DecisionDeny}}); len(calls) != 2 || calls[1] != want {
		t.Errorf("Decide calls %+v, want a deny second", calls)
	}

	// Evidence written to attack the operator shows as text and runs
	// nothing.
	b.Open("s-4", "a-hostile")
	if got := b.Text("#evidence"); !strings.Contains(got, "<script>document.title='owned'</script>") {
		t.Errorf("the hostile evidence does not show as text: %q", got)
	}
	if got := b.Text("#reasoning"); !strings.Contains(got, "</pre><script>") {
		t.Errorf("the hostile reasoning does not show as text: %q", got)
	}
	if title := b.Title(); strings.Contains(title, "owned") {
		t.Errorf("script from the evidence ran: title %q", title)
	}
	shot(b, "hostile")

	b.Logout()
	b.ExpectSignedOut()
	t.Log("chromium drove login, list, detail, approve, deny and logout")
}
