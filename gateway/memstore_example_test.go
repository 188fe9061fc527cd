package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"novaos.dev/novaos/gateway"
)

// A run is created with its first events, written on with more, and its
// events read back in order; a watcher hears of each append.
func ExampleMemoryStore() {
	ctx := context.Background()
	s := gateway.NewMemoryStore()
	watch, stop := context.WithCancel(ctx)
	defer stop()
	_ = s.WatchEvents(watch, func(runID string, last int64) { fmt.Println("appended to", runID, "up to", last) })

	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	run, _, err := s.CreateRun(ctx, gateway.RunWrite{
		Run:    gateway.Run{ID: "run-1", TenantID: "acme", InstanceID: "echo-1", Status: gateway.StatusQueued, Input: "hello"},
		Events: []gateway.Event{{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"QUEUED"}`)}},
		Now:    now,
	})
	if err != nil {
		panic(err)
	}
	run.Status, run.Output = gateway.StatusCompleted, "hello"
	run, _, err = s.WriteRun(ctx, gateway.RunWrite{
		Run: run, ExpectVersion: run.Version, Now: now.Add(time.Second),
		Events: []gateway.Event{
			{Type: gateway.EventMessageFinal, Payload: json.RawMessage(`{"content":"hello"}`)},
			{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"COMPLETED"}`)},
		},
	})
	if err != nil {
		panic(err)
	}
	evs, _ := s.Events(ctx, "run-1", 0, 0)
	for _, e := range evs {
		fmt.Println(e.Sequence, e.Type, string(e.Payload))
	}
	fmt.Println(run.Status, "version", run.Version, "last", run.LastSequence)
	// Output:
	// appended to run-1 up to 1
	// appended to run-1 up to 3
	// 1 status {"status":"QUEUED"}
	// 2 message.final {"content":"hello"}
	// 3 status {"status":"COMPLETED"}
	// COMPLETED version 2 last 3
}
