package postgres_test

import (
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/store/storetest"
)

func TestRegistryStoreContract(t *testing.T) {
	storetest.TestRegistryStore(t, func(t *testing.T) registrysvc.Store { return open(t, pgtest.URL(t)).RegistryStore() })
}

func BenchmarkRegistryFind(b *testing.B) {
	storetest.BenchmarkRegistryFind(b, open(b, pgtest.URL(b)).RegistryStore())
}
