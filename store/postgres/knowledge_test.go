package postgres_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestKnowledgeStoreContract(t *testing.T) {
	storetest.TestKnowledgeStore(t, func(t *testing.T) tools.KnowledgeStore { return open(t, pgtest.URL(t)).KnowledgeStore() })
}

// Several handles on one database are several replicas: claims stay
// exclusive across their connections.
func TestKnowledgeStoreReplicas(t *testing.T) {
	storetest.TestKnowledgeReplicas(t, func(t *testing.T) func() tools.KnowledgeStore {
		url := pgtest.URL(t)
		return func() tools.KnowledgeStore { return open(t, url).KnowledgeStore() }
	})
}

func TestKnowledgeStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestKnowledgeReopen(t, func(t *testing.T) (tools.KnowledgeStore, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.KnowledgeStore(), func() { db.Close() }
	})
}

func TestStoresKnowledge(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Knowledge.(*postgres.KnowledgeStore); !ok {
		t.Fatalf("Stores().Knowledge = %T, want *postgres.KnowledgeStore", db.Stores().Knowledge)
	}
}

// Text PostgreSQL cannot hold is refused with an error, not sent.
func TestKnowledgeText(t *testing.T) {
	s := open(t, pgtest.URL(t)).KnowledgeStore()
	ctx := t.Context()
	if err := s.CreateCollection(ctx, "acme", tools.Collection{ID: "c1", Name: "a\x00b"}, 10); err == nil {
		t.Error("CreateCollection stored a name with NUL")
	}
	if err := s.CreateCollection(ctx, "acme", tools.Collection{ID: "c1", Name: "a"}, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, "acme", tools.Job{ID: "j1", CollectionID: "c1", Status: tools.JobPending, Content: "\xff"}, 10); err == nil {
		t.Error("CreateJob stored invalid UTF-8")
	}
	if _, err := s.Job(ctx, "acme", "j\x00"); err == nil {
		t.Error("Job found an id with NUL")
	}
}
