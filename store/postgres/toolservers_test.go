package postgres_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestToolServerStoreContract(t *testing.T) {
	storetest.TestToolServerStore(t, func(t *testing.T) tools.ServerStore { return open(t, pgtest.URL(t)).ToolServerStore() })
}

func TestToolServerStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestToolServerReopen(t, func(t *testing.T) (tools.ServerStore, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ToolServerStore(), func() { db.Close() }
	})
}

func TestStoresToolServers(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().ToolServers.(*postgres.ToolServerStore); !ok {
		t.Fatalf("Stores().ToolServers = %T, want *postgres.ToolServerStore", db.Stores().ToolServers)
	}
}
