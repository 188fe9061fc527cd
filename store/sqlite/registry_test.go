package sqlite_test

import (
	"testing"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/store/storetest"
)

func TestRegistryStoreContract(t *testing.T) {
	storetest.TestRegistryStore(t, func(t *testing.T) registrysvc.Store { return tempDB(t).RegistryStore() })
}

func BenchmarkRegistryFind(b *testing.B) {
	storetest.BenchmarkRegistryFind(b, tempDB(b).RegistryStore())
}
