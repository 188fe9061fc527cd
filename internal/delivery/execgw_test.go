package delivery

import (
	"context"
	"net/http"
	"testing"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/execgw"
)

// TestThroughTheExecutionGateway runs a pull instance's run end to end:
// the execution gateway queues and offers it, the agent long-polls it,
// starts it once and finishes it, and the run's events show each step.
func TestThroughTheExecutionGateway(t *testing.T) {
	h := newHarness(t, nil)
	issuer, err := auth.Open("", auth.Options{Issuer: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	gw := execgw.New(h.runs, execgw.Deps{Tokens: issuer, Pull: h.svc, BaseURL: h.srv.URL}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	a := h.agent(h.inst, true)
	a.open("laptop")
	run, err := gw.StartRun(ctx, execgw.StartRequest{TenantID: testTenant, InstanceID: h.inst.ID, RunID: "run-e2e", Input: "hi",
		Caller: gateway.Caller{Subject: "alex", UserID: "alex"}})
	if err != nil {
		t.Fatal(err)
	}
	ans := a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "laptop")+"?wait=20", nil, "", "")
	page := decodeAs[delivery.EventPage](t, ans)
	for len(page.Events) == 0 { // woken by something else first: poll on
		page = decodeAs[delivery.EventPage](t, a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "laptop")+"?wait=20", nil, "", ""))
	}
	ev := page.Events[0]
	if ev.Type != delivery.EventInvocation || ev.InvocationToken == "" {
		t.Fatalf("event %v", ev)
	}
	if ans := a.ack("laptop", ev.Seq); ans.status != http.StatusOK {
		t.Fatal(ans.status)
	}
	tok := ev.InvocationToken
	started := a.call("POST", delivery.StartRunPath(run.ID), startBody(), tok, newKey())
	if v := decodeAs[delivery.Run](t, started); started.status != http.StatusOK || v.State != delivery.RunRunning || v.ThreadID != run.ID {
		t.Fatalf("start: %d %s", started.status, started.body)
	}
	patched := a.call("PATCH", delivery.RunPath(run.ID), delivery.RunPatch{BaseVersion: decodeAs[delivery.Run](t, started).Version,
		Ops: []delivery.PatchOp{{Op: "add", Path: "/status_line", Value: "reading"}}}, tok, newKey())
	if patched.status != http.StatusOK {
		t.Fatalf("patch: %d %s", patched.status, patched.body)
	}
	fin := a.call("POST", delivery.FinishRunPath(run.ID), delivery.RunFinish{State: delivery.RunCompleted, Summary: "hello, Alex"}, tok, newKey())
	if fin.status != http.StatusOK {
		t.Fatalf("finish: %d %s", fin.status, fin.body)
	}
	final := h.run(run.ID)
	if final.Status != gateway.StatusCompleted || final.Output != "hello, Alex" || final.Pull.Starts != 1 || final.Pull.OfferedTurn != 1 {
		t.Fatalf("run %s %q, pull %+v", final.Status, final.Output, final.Pull)
	}
	events, _ := h.runs.Events(t.Context(), run.ID, 0, 100)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	want := []string{gateway.EventStatus, gateway.EventStatus, gateway.EventStatus, gateway.EventStatus, gateway.EventMessageFinal,
		gateway.EventStatus, gateway.EventDone}
	if len(types) != len(want) {
		t.Fatalf("events %v", types)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
}
