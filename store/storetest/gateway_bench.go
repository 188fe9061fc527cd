package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
)

// BenchmarkGatewayStore measures a gateway store's hot paths: "WriteRun"
// is one durable step of a run that records one event (a compare-and-set
// of the run and an append), serially and from 8 × GOMAXPROCS goroutines
// each writing a run of its own; "Events100" reads a page of 100 events,
// what a stream that resumes reads.
func BenchmarkGatewayStore(b *testing.B, s gateway.Store) {
	ctx := context.Background()
	prefix := fmt.Sprintf("bench-%d", benchSeq.Add(1))
	newRun := func(b *testing.B, events int) gateway.Run {
		id := fmt.Sprintf("%s-%d", prefix, benchSeq.Add(1))
		evs := make([]gateway.Event, events)
		for i := range evs {
			evs[i] = gateway.Event{Type: gateway.EventMessageDelta, Payload: json.RawMessage(fmt.Sprintf(`{"content":"chunk %d of the answer"}`, i))}
		}
		r := gwRun("bench", id)
		r.Status = gateway.StatusRunning
		r, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: r, Events: evs, Now: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	ev := []gateway.Event{{Type: gateway.EventMessageDelta, Payload: json.RawMessage(`{"content":"the next chunk of the answer"}`)}}
	write := func(r gateway.Run) (gateway.Run, error) {
		r, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: r, ExpectVersion: r.Version, Events: ev, Now: time.Now()})
		return r, err
	}
	b.Run("WriteRun", func(b *testing.B) {
		r := newRun(b, 0)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if r, err = write(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteRunParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			r := newRun(b, 0)
			for pb.Next() {
				var err error
				if r, err = write(r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("CountRuns1k", func(b *testing.B) {
		// What a metrics scrape reads (the runs gauge), over a thousand
		// runs of every status.
		statuses := []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
			gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled}
		for i := range 1000 {
			r := gwRun("bench", fmt.Sprintf("%s-count-%d", prefix, i))
			r.Status = statuses[i%len(statuses)]
			if _, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: r, Now: time.Now()}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.CountRuns(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Events100", func(b *testing.B) {
		r := newRun(b, 100)
		b.ReportAllocs()
		for b.Loop() {
			evs, err := s.Events(ctx, r.ID, 0, 100)
			if err != nil || len(evs) != 100 {
				b.Fatalf("Events = %d, %v", len(evs), err)
			}
		}
	})
}
