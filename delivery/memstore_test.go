package delivery_test

import (
	"fmt"
	"testing"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/store/storetest"
)

func TestMemStoreContract(t *testing.T) {
	storetest.TestDeliveryStore(t, func(t *testing.T) delivery.Store { return delivery.NewMemStore() })
}

// One MemStore serves every handle of a process: the replica suite's
// races run against it from several goroutines, and its watchers hear
// every append.
func TestMemStoreReplicas(t *testing.T) {
	storetest.TestDeliveryReplicas(t, func(t *testing.T) func() delivery.Store {
		s := delivery.NewMemStore()
		return func() delivery.Store { return s }
	}, true)
}

// A MemStore's watchers are called before AppendEvents returns, once per
// agent that got new events.
func TestMemStoreWatchesBeforeReturn(t *testing.T) {
	s := delivery.NewMemStore()
	var calls []string
	if err := s.WatchEvents(t.Context(), func(agent string, head int64) { calls = append(calls, fmt.Sprintf("%s@%d", agent, head)) }); err != nil {
		t.Fatal(err)
	}
	ev := func(agent, id, key string) delivery.StoredEvent {
		return delivery.StoredEvent{AgentID: agent, TenantID: "acme", ID: id, Type: delivery.EventAccessChanged, DedupeKey: key}
	}
	if _, err := s.AppendEvents(t.Context(), []delivery.StoredEvent{ev("b", "1", "k"), ev("a", "2", ""), ev("b", "3", "")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(t.Context(), []delivery.StoredEvent{ev("b", "4", "k")}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(calls); got != "[a@1 b@2]" {
		t.Errorf("calls = %s, want [a@1 b@2]", got)
	}
}

// %v of a MemStore names it without its records.
func TestMemStoreString(t *testing.T) {
	s := delivery.NewMemStore()
	if err := s.CreateAPIToken(t.Context(), delivery.APIToken{ID: "t1", TenantID: "acme", AgentID: "a", Hash: []byte("secret-hash")}); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%s", "%#v"} {
		if got := fmt.Sprintf(format, s); got != "delivery.MemStore{0 agents, 0 consumers}" {
			t.Errorf("%s of a MemStore = %q", format, got)
		}
	}
}

func BenchmarkMemStore(b *testing.B) {
	storetest.BenchmarkDeliveryStore(b, delivery.NewMemStore())
}
