package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestToolServerStoreContract(t *testing.T) {
	storetest.TestToolServerStore(t, func(t *testing.T) tools.ServerStore { return tempDB(t).ToolServerStore() })
}

func TestToolServerStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestToolServerReopen(t, func(t *testing.T) (tools.ServerStore, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ToolServerStore(), func() { db.Close() }
	})
}

// The Stores of a database serve the tool servers from the same handle.
func TestStoresToolServers(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().ToolServers.(*sqlite.ToolServerStore); !ok {
		t.Fatalf("Stores().ToolServers = %T, want *sqlite.ToolServerStore", db.Stores().ToolServers)
	}
}
