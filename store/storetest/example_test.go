package storetest_test

import (
	"path/filepath"
	"testing"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

// A store package runs the contract from its own tests, handing the suite a
// constructor for fresh, empty stores.
func ExampleTestTaskStore() {
	_ = func(t *testing.T) {
		storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore {
			return a2asrv.NewMemoryTaskStore(nil)
		})
		storetest.TestPushConfigStore(t, func(t *testing.T) a2asrv.PushConfigStore {
			return a2asrv.NewMemoryPushConfigStore(nil)
		})
	}
}

// A store of agent-registry records runs the registry contract the same
// way, through the public registry.Store; the SQLite store stands in here
// for one written outside the module.
func ExampleTestRegistryStore() {
	_ = func(t *testing.T) {
		storetest.TestRegistryStore(t, func(t *testing.T) registry.Store {
			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "registry.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.RegistryStore()
		})
	}
}
