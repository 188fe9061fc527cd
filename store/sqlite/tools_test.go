package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestToolStoreContract(t *testing.T) {
	storetest.TestToolStore(t, func(t *testing.T) tools.Store { return tempDB(t).ToolStore() })
}

// Two handles on one file stand for two processes sharing it: touches
// and puts stay one step each across them.
func TestToolStoreReplicas(t *testing.T) {
	storetest.TestToolReplicas(t, func(t *testing.T) func() tools.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() tools.Store { return open(t, path).ToolStore() }
	})
}

func TestToolStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestToolReopen(t, func(t *testing.T) (tools.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ToolStore(), func() { db.Close() }
	})
}

// The Stores of a database serve the tool gateway from the same handle.
func TestStoresTools(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Tools.(*sqlite.ToolStore); !ok {
		t.Fatalf("Stores().Tools = %T, want *sqlite.ToolStore", db.Stores().Tools)
	}
}

// A sweep reads only the idle sessions, from their index.
func TestToolSweepPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	plan := sqlitePlan(t, raw, sqlite.SweepToolSessionsSQL, 1)
	if !strings.Contains(plan, "tool_sessions_last_seen") {
		t.Errorf("sweep plan\n%s\nwant the tool_sessions_last_seen index", plan)
	}
}
