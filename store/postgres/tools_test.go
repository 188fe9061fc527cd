package postgres_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestToolStoreContract(t *testing.T) {
	storetest.TestToolStore(t, func(t *testing.T) tools.Store { return open(t, pgtest.URL(t)).ToolStore() })
}

// Several handles on one database are several replicas: touches and
// puts stay one step each across their connections.
func TestToolStoreReplicas(t *testing.T) {
	storetest.TestToolReplicas(t, func(t *testing.T) func() tools.Store {
		url := pgtest.URL(t)
		return func() tools.Store { return open(t, url).ToolStore() }
	})
}

func TestToolStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestToolReopen(t, func(t *testing.T) (tools.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ToolStore(), func() { db.Close() }
	})
}

func TestStoresTools(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Tools.(*postgres.ToolStore); !ok {
		t.Fatalf("Stores().Tools = %T, want *postgres.ToolStore", db.Stores().Tools)
	}
}
