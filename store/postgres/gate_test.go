package postgres_test

import (
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/storetest"
)

func TestGateStoreContract(t *testing.T) {
	storetest.TestGateStore(t, func(t *testing.T) gate.Store { return open(t, pgtest.URL(t)).GateStore() })
}

func BenchmarkGateStore(b *testing.B) {
	storetest.BenchmarkGateStore(b, open(b, pgtest.URL(b)).GateStore())
}
