package delivery

import (
	"context"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// BenchmarkGatewayDeliverAck measures the gateway's throughput: b.N
// stored invocations, each with a grant, sent to the real adapter in
// the pages NextEvents gives (each delivery minting a fresh token, a
// page's tokens recorded in one write) within the in-flight window, and
// acknowledged after each batch the adapter receives. It runs on this
// package's fake store, as BenchmarkPollAck does, so that the two
// compare; the store's own cost is the store benchmarks'.
func BenchmarkGatewayDeliverAck(b *testing.B) {
	h := newGWHarness(b, nil)
	a := h.agent(h.inst, false)
	a.open("bench")
	h.appendEvents(b, b.N, delivery.EventInvocation, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	g := h.dialGateway(b, a, "bench")
	got := map[string]bool{}
	for len(got) < b.N {
		evs, err := g.Receive(ctx)
		if err != nil {
			b.Fatalf("after %d events: %v", len(got), err)
		}
		for _, e := range evs {
			got[e.ID] = true
		}
		if err := g.Ack(ctx, evs[len(evs)-1].Seq); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
