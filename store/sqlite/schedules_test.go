package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestScheduleStoreContract(t *testing.T) {
	storetest.TestScheduleStore(t, func(t *testing.T) heartbeat.Store { return tempDB(t).ScheduleStore() })
}

// Handles on one file race as replicas do: each is its own process's
// writer, and the file's write lock orders them.
func TestScheduleReplicas(t *testing.T) {
	storetest.TestScheduleReplicas(t, func(t *testing.T) func() heartbeat.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() heartbeat.Store { return open(t, path).ScheduleStore() }
	})
}

func TestScheduleStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestScheduleReopen(t, func(t *testing.T) (heartbeat.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ScheduleStore(), func() { db.Close() }
	})
}

func TestStoresSchedules(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Schedules.(*sqlite.ScheduleStore); !ok {
		t.Fatalf("Stores().Schedules = %T, want *sqlite.ScheduleStore", db.Stores().Schedules)
	}
}
