package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestLLMStoreContract(t *testing.T) {
	storetest.TestLLMStore(t, func(t *testing.T) llm.Store { return tempDB(t).LLMStore() })
}

func TestLLMStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestLLMReopen(t, func(t *testing.T) (llm.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.LLMStore(), func() { db.Close() }
	})
}

// The Stores of a database serve the LLM gateway from the same handle.
func TestStoresLLM(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().LLM.(*sqlite.LLMStore); !ok {
		t.Fatalf("Stores().LLM = %T, want *sqlite.LLMStore", db.Stores().LLM)
	}
}
