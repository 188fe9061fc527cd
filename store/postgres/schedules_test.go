package postgres_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestScheduleStoreContract(t *testing.T) {
	storetest.TestScheduleStore(t, func(t *testing.T) heartbeat.Store { return open(t, pgtest.URL(t)).ScheduleStore() })
}

func TestScheduleReplicas(t *testing.T) {
	storetest.TestScheduleReplicas(t, func(t *testing.T) func() heartbeat.Store {
		url := pgtest.URL(t)
		return func() heartbeat.Store { return open(t, url).ScheduleStore() }
	})
}

func TestScheduleStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestScheduleReopen(t, func(t *testing.T) (heartbeat.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.ScheduleStore(), func() { db.Close() }
	})
}

func TestStoresSchedules(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Schedules.(*postgres.ScheduleStore); !ok {
		t.Fatalf("Stores().Schedules = %T, want *postgres.ScheduleStore", db.Stores().Schedules)
	}
}
