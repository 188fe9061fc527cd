package postgres_test

import (
	"context"
	"testing"
	"time"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

// Several handles on one database are several replicas, each with its own
// listener.
func TestTaskFeedContract(t *testing.T) {
	storetest.TestTaskFeed(t, func(t *testing.T) func() storetest.Replica {
		url := pgtest.URL(t)
		return func() storetest.Replica {
			db := open(t, url)
			return storetest.Replica{Tasks: db.TaskStore(), Feed: db.TaskFeed(), DropFeed: func(t *testing.T) {
				if err := postgres.DropListener(context.Background(), db); err != nil {
					t.Fatalf("drop the listener: %v", err)
				}
			}}
		}
	})
}

// The listener notices a dropped connection, says so, and comes back.
func TestListenerStatusAfterDrop(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if err := db.ListenerStatus(); err != nil {
		t.Fatalf("ListenerStatus after Open: %v", err)
	}
	if err := postgres.DropListener(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	sawDown := false
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		err := db.ListenerStatus()
		if err != nil {
			sawDown = true
		} else if sawDown {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the listener did not report the drop and recover (saw it down: %v; now %v)", sawDown, db.ListenerStatus())
}
