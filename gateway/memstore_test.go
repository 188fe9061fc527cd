package gateway_test

import (
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
