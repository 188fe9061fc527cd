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

func TestFileStoreContract(t *testing.T) {
	storetest.TestFileStore(t, func(t *testing.T) tools.FileStore { return tempDB(t).FileStore() })
}

// Two handles on one file stand for two processes sharing it: the quota
// and the versions hold across them.
func TestFileStoreReplicas(t *testing.T) {
	storetest.TestFileReplicas(t, func(t *testing.T) func() tools.FileStore {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() tools.FileStore { return open(t, path).FileStore() }
	})
}

func TestFileStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestFileReopen(t, func(t *testing.T) (tools.FileStore, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.FileStore(), func() { db.Close() }
	})
}

func TestStoresFiles(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Files.(*sqlite.FileStore); !ok {
		t.Fatalf("Stores().Files = %T, want *sqlite.FileStore", db.Stores().Files)
	}
}

// A listing reads a range of the primary key in order: no table scan, no
// sort, whatever the prefix and cursor.
func TestFilePlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, f := range []tools.FileFilter{
		{Tenant: "acme", Agent: "bot"},
		{Tenant: "acme", Agent: "bot", Prefix: "reports/"},
		{Tenant: "acme", Agent: "", Prefix: "reports/", After: "reports/2026", Limit: 10},
		{Tenant: "acme", Agent: "bot", After: "m"},
	} {
		q, args := sqlite.ListFilesSQL(&f)
		plan := sqlitePlan(t, raw, q, args...)
		if !strings.Contains(plan, "USING INDEX sqlite_autoindex_tool_files_1") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("List %+v: plan\n%s\nwant a search of the primary key and no sort", f, plan)
		}
	}
}
