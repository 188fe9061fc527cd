package runspage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
)

func benchEvents(n int) []gateway.Event {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	events := make([]gateway.Event, n)
	for i := range events {
		events[i] = gateway.Event{RunID: "r-1", Sequence: int64(i + 1), Type: gateway.EventMessageDelta, At: at,
			Payload: json.RawMessage(fmt.Sprintf(`{"content":"chunk %d of the agent's answer, with <markup> & text"}`, i))}
	}
	return events
}

// BenchmarkRunPage renders a run's page with 500 events, what a reload
// of a busy run costs.
func BenchmarkRunPage(b *testing.B) {
	h := &handler{path: DefaultPath}
	run := &gateway.Run{ID: "r-1", TenantID: "acme", Status: gateway.StatusRunning, Input: "question", LastSequence: 500}
	events := benchEvents(500)
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		d := pageData{Base: DefaultPath, User: &Principal{Actor: "a", Tenant: "acme"}, Run: h.runView(run, events), Script: true}
		if err := pages.ExecuteTemplate(&buf, "run.html", d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList renders a list page of 50 runs.
func BenchmarkList(b *testing.B) {
	h := &handler{path: DefaultPath}
	runs := make([]gateway.Run, 50)
	for i := range runs {
		runs[i] = gateway.Run{ID: fmt.Sprintf("r-%d", i), TenantID: "acme", InstanceID: "inst", Status: gateway.StatusCompleted,
			Reason: "the agent completed the task", CreatedAt: time.Unix(int64(i), 0)}
	}
	p := Principal{Actor: "svc", Tenant: "acme", Service: true}
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		d := pageData{Base: DefaultPath, User: &p, List: h.listView(runs, gateway.RunFilter{Limit: 50}, p, "", "", false)}
		if err := pages.ExecuteTemplate(&buf, "list.html", d); err != nil {
			b.Fatal(err)
		}
	}
}
