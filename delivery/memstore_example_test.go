package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"novaos.dev/novaos/delivery"
)

// Events are appended to an agent's stream, an invocation once however
// often it is appended; a consumer opened at the head reads what comes
// after it and acknowledges it.
func ExampleMemStore() {
	ctx := context.Background()
	s := delivery.NewMemStore()
	watch, stop := context.WithCancel(ctx)
	defer stop()
	_ = s.WatchEvents(watch, func(agentID string, head int64) { fmt.Println("appended to", agentID, "up to", head) })

	now := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	c, err := s.OpenConsumer(ctx, "agent-1", "main", now)
	if err != nil {
		panic(err)
	}
	invocation := delivery.StoredEvent{AgentID: "agent-1", TenantID: "acme", ID: "event-1", Type: delivery.EventInvocation,
		RunID: "run-1", DedupeKey: "invocation:run-1:1", Payload: json.RawMessage(`{"run_id":"run-1"}`)}
	for range 2 {
		evs, err := s.AppendEvents(ctx, []delivery.StoredEvent{invocation})
		if err != nil {
			panic(err)
		}
		fmt.Println("stored", evs[0].ID, "at", evs[0].Seq)
	}

	page, _ := s.ReadEvents(ctx, "agent-1", c.AckedSeq, 100)
	c.AckedSeq = page[len(page)-1].Seq
	if c, err = s.UpdateConsumer(ctx, c, now.Add(time.Second)); err != nil {
		panic(err)
	}
	fmt.Println("acknowledged up to", c.AckedSeq, "at version", c.Version)
	// Output:
	// appended to agent-1 up to 1
	// stored event-1 at 1
	// stored event-1 at 1
	// acknowledged up to 1 at version 2
}
