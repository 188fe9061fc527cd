package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestGatewayStore(t, func(t *testing.T) gateway.Store { return gateway.NewMemoryStore() })
}

// One MemoryStore serves every handle of a process: the replica suite's
// claims run against it from several goroutines.
func TestMemoryStoreReplicas(t *testing.T) {
	storetest.TestGatewayReplicas(t, func(t *testing.T) func() gateway.Store {
		s := gateway.NewMemoryStore()
		return func() gateway.Store { return s }
	}, true)
}

func BenchmarkMemoryStore(b *testing.B) {
	storetest.BenchmarkGatewayStore(b, gateway.NewMemoryStore())
}

// MemoryStore calls watchers before a write returns, and only for writes
// that appended events.
func TestMemoryStoreWatchesAppendsOnly(t *testing.T) {
	s := gateway.NewMemoryStore()
	var calls []string
	if err := s.WatchEvents(t.Context(), func(run string, last int64) { calls = append(calls, fmt.Sprintf("%s@%d", run, last)) }); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.CreateRun(t.Context(), gateway.RunWrite{Run: gateway.Run{ID: "r1", TenantID: "acme", Status: gateway.StatusQueued}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err = s.WriteRun(t.Context(), gateway.RunWrite{Run: r, ExpectVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("writes without events were reported: %v", calls)
	}
	if _, _, err = s.WriteRun(t.Context(), gateway.RunWrite{Run: r, ExpectVersion: 2, Events: []gateway.Event{{Type: gateway.EventDone}}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"r1@1"}) {
		t.Errorf("calls = %v, want r1@1 once the write returned", calls)
	}
	// fn may use the store.
	var read gateway.Run
	if err := s.WatchEvents(t.Context(), func(run string, last int64) { read, _ = s.GetRun(context.Background(), "", run) }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateRun(t.Context(), gateway.RunWrite{Run: gateway.Run{ID: "r2", TenantID: "acme", Status: gateway.StatusQueued},
		Events: []gateway.Event{{Type: gateway.EventStatus}}}); err != nil {
		t.Fatal(err)
	}
	if read.ID != "r2" || read.LastSequence != 1 {
		t.Errorf("a watcher read %+v", read)
	}
}
