package delivery

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
)

// BenchmarkPollAck measures the agent API's throughput over HTTP: b.N
// invocations, each with a grant, taken by polls of a page size (each
// delivery minting a fresh token, the page's tokens recorded in one
// write) and acknowledged after each page. It runs on this package's
// fake store; the store's own cost is the store benchmarks'.
func BenchmarkPollAck(b *testing.B) {
	for _, page := range []int{1, 100} {
		b.Run("page="+strconv.Itoa(page), func(b *testing.B) {
			h := newHarness(b, nil)
			a := h.agent(h.inst, false)
			a.open("bench")
			events := make([]delivery.StoredEvent, 0, b.N)
			for i := range b.N {
				run := "run-" + strconv.Itoa(i)
				payload, _ := json.Marshal(delivery.InvocationPayload{TriggerKind: delivery.TriggerMessage, RunID: run, ThreadID: run, MessageID: run + "/1"})
				id := a2a.NewID()
				events = append(events, delivery.StoredEvent{AgentID: h.inst.ID, TenantID: testTenant, ID: id, Type: delivery.EventInvocation,
					RunID: run, Payload: payload, Grant: &delivery.Claims{Issuer: h.srv.URL, Audience: h.inst.ID, Subject: "alex",
						RunID: run, ThreadID: run, EventID: id, MessageID: run + "/1", BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolChat}})
			}
			if _, err := h.st.AppendEvents(b.Context(), events); err != nil {
				b.Fatal(err)
			}
			path := delivery.ConsumerEventsPath(h.inst.ID, "bench") + "?limit=" + strconv.Itoa(page)
			b.ResetTimer()
			start := time.Now()
			got := 0
			for got < b.N {
				ans := a.call("GET", path, nil, "", "")
				if ans.status != http.StatusOK {
					b.Fatalf("poll: %d %s", ans.status, ans.body)
				}
				var p delivery.EventPage
				if err := json.Unmarshal(ans.body, &p); err != nil || len(p.Events) == 0 {
					b.Fatalf("page: %v, %d events", err, len(p.Events))
				}
				got += len(p.Events)
				if ans := a.ack("bench", p.Events[len(p.Events)-1].Seq); ans.status != http.StatusOK {
					b.Fatalf("ack: %d", ans.status)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
