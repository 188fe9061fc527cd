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

func TestKnowledgeStoreContract(t *testing.T) {
	storetest.TestKnowledgeStore(t, func(t *testing.T) tools.KnowledgeStore { return tempDB(t).KnowledgeStore() })
}

// Two handles on one file stand for two processes sharing it: claims stay
// exclusive across them.
func TestKnowledgeStoreReplicas(t *testing.T) {
	storetest.TestKnowledgeReplicas(t, func(t *testing.T) func() tools.KnowledgeStore {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() tools.KnowledgeStore { return open(t, path).KnowledgeStore() }
	})
}

func TestKnowledgeStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestKnowledgeReopen(t, func(t *testing.T) (tools.KnowledgeStore, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.KnowledgeStore(), func() { db.Close() }
	})
}

func TestStoresKnowledge(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Knowledge.(*sqlite.KnowledgeStore); !ok {
		t.Fatalf("Stores().Knowledge = %T, want *sqlite.KnowledgeStore", db.Stores().Knowledge)
	}
}

// Claims read the index of the live jobs and graphs, however many ended:
// no table scan, no sort.
func TestKnowledgePlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, c := range []struct {
		name, q, want string
		args          []any
	}{
		{"job claims", sqlite.KnClaimJobsSQL, "knowledge_jobs_claim", []any{"o", 1, 2, 3, 4, 5}},
		{"graph claims", sqlite.KnClaimGraphsSQL, "knowledge_collections_graph_claim", []any{"o", 1, 2, 3}},
	} {
		plan := sqlitePlan(t, raw, c.q, c.args...)
		t.Logf("%s:\n%s", c.name, plan)
		if !strings.Contains(plan, c.want) || strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s: plan\n%s\nwant %s and no sort", c.name, plan, c.want)
		}
	}
}
