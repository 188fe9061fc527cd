package postgres_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
	"novaos.dev/novaos/tools"
)

func TestFileStoreContract(t *testing.T) {
	storetest.TestFileStore(t, func(t *testing.T) tools.FileStore { return open(t, pgtest.URL(t)).FileStore() })
}

// Several handles on one database are several replicas: no two of them
// let a tenant past its quota, or both win one version.
func TestFileStoreReplicas(t *testing.T) {
	storetest.TestFileReplicas(t, func(t *testing.T) func() tools.FileStore {
		url := pgtest.URL(t)
		return func() tools.FileStore { return open(t, url).FileStore() }
	})
}

func TestFileStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestFileReopen(t, func(t *testing.T) (tools.FileStore, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.FileStore(), func() { db.Close() }
	})
}

func TestStoresFiles(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Files.(*postgres.FileStore); !ok {
		t.Fatalf("Stores().Files = %T, want *postgres.FileStore", db.Stores().Files)
	}
}
