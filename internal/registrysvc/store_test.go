package registrysvc_test

import (
	"testing"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestRegistryStore(t, func(t *testing.T) registrysvc.Store { return registrysvc.NewMemoryStore() })
}

func BenchmarkRegistryFind(b *testing.B) {
	storetest.BenchmarkRegistryFind(b, registrysvc.NewMemoryStore())
}
