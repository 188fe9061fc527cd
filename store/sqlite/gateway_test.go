package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestGatewayStoreContract(t *testing.T) {
	storetest.TestGatewayStore(t, func(t *testing.T) gateway.Store { return tempDB(t).GatewayStore() })
}

// Two handles on one file stand for two processes sharing it: claims stay
// exclusive across them. A handle watches only its own writes.
func TestGatewayStoreReplicas(t *testing.T) {
	storetest.TestGatewayReplicas(t, func(t *testing.T) func() gateway.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() gateway.Store { return open(t, path).GatewayStore() }
	}, false)
}

func TestGatewayStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestGatewayReopen(t, func(t *testing.T) (gateway.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.GatewayStore(), func() { db.Close() }
	})
}

// The Stores of a database serve the gateway from the same handle.
func TestStoresGateway(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Gateway.(*sqlite.GatewayStore); !ok {
		t.Fatalf("Stores().Gateway = %T, want *sqlite.GatewayStore", db.Stores().Gateway)
	}
}

func BenchmarkGatewayStore(b *testing.B) {
	storetest.BenchmarkGatewayStore(b, tempDB(b).GatewayStore())
}
