package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// BenchmarkDeliveryStore measures what a delivered event costs a
// delivery store: its append (an invocation with a dedupe key and a
// grant, as the platform stores one) and the consumer's acknowledgement
// of it, each durable when it returns. "AppendAck" does one of each per
// operation, serially; "AppendAckParallel" from 8 × GOMAXPROCS
// goroutines, each an agent of its own, whose writes a store may commit
// together; "Batch64Ack" appends 64 events in one call and acknowledges
// them at once. Each reports events/s, the events stored and
// acknowledged per second.
func BenchmarkDeliveryStore(b *testing.B, s delivery.Store) {
	ctx := context.Background()
	prefix := fmt.Sprintf("bench-%d", benchSeq.Add(1))
	newAgent := func(b *testing.B) (string, delivery.Consumer) {
		agent := fmt.Sprintf("%s-agent-%d", prefix, benchSeq.Add(1))
		c, err := s.OpenConsumer(ctx, agent, "main", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return agent, c
	}
	event := func(agent string) delivery.StoredEvent {
		n := benchSeq.Add(1)
		run := fmt.Sprintf("%s-run-%d", prefix, n)
		e := dlFullEvent(agent, fmt.Sprintf("%s-event-%d", prefix, n))
		e.RunID, e.DedupeKey, e.CreatedAt = run, "invocation:"+run+":1", time.Time{}
		e.Payload = json.RawMessage(fmt.Sprintf(`{"trigger_kind":"message","run_id":%q,"thread_id":"thread-1","message_id":"msg-%d"}`, run, n))
		g := *e.Grant
		g.RunID, g.EventID = run, e.ID
		e.Grant = &g
		return e
	}
	// deliver appends n events of the agent and acknowledges the last.
	deliver := func(agent string, c delivery.Consumer, n int) (delivery.Consumer, error) {
		evs := make([]delivery.StoredEvent, n)
		for i := range evs {
			evs[i] = event(agent)
		}
		stored, err := s.AppendEvents(ctx, evs)
		if err != nil {
			return c, err
		}
		c.AckedSeq, c.SentSeq = stored[n-1].Seq, stored[n-1].Seq
		return s.UpdateConsumer(ctx, c, time.Now())
	}
	rate := func(b *testing.B, perOp int) {
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("AppendAck", func(b *testing.B) {
		agent, c := newAgent(b)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if c, err = deliver(agent, c, 1); err != nil {
				b.Fatal(err)
			}
		}
		rate(b, 1)
	})
	b.Run("AppendAckParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			agent, c := newAgent(b)
			for pb.Next() {
				var err error
				if c, err = deliver(agent, c, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
		rate(b, 1)
	})
	b.Run("Batch64Ack", func(b *testing.B) {
		agent, c := newAgent(b)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if c, err = deliver(agent, c, 64); err != nil {
				b.Fatal(err)
			}
		}
		rate(b, 64)
	})
}
