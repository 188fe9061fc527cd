package registry_test

import (
	"testing"

	iregistry "novaos.dev/novaos/internal/registry"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestRegistryStore(t, func(t *testing.T) iregistry.Store { return iregistry.NewMemoryStore() })
}

func BenchmarkRegistryFind(b *testing.B) {
	storetest.BenchmarkRegistryFind(b, iregistry.NewMemoryStore())
}
