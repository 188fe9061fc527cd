package sqlite_test

import (
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/store/storetest"
)

func TestGateStoreContract(t *testing.T) {
	storetest.TestGateStore(t, func(t *testing.T) gate.Store { return tempDB(t).GateStore() })
}

func BenchmarkGateStore(b *testing.B) {
	storetest.BenchmarkGateStore(b, tempDB(b).GateStore())
}
