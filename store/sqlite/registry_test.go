package sqlite_test

import (
	"testing"

	iregistry "novaos.dev/novaos/internal/registry"
	"novaos.dev/novaos/store/storetest"
)

func TestRegistryStoreContract(t *testing.T) {
	storetest.TestRegistryStore(t, func(t *testing.T) iregistry.Store { return tempDB(t).RegistryStore() })
}

func BenchmarkRegistryFind(b *testing.B) {
	storetest.BenchmarkRegistryFind(b, tempDB(b).RegistryStore())
}
