package postgres_test

import (
	"context"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
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

// A listener that goes quiet checks its connection and keeps listening:
// writes after several quiet spells still reach the other replica.
func TestQuietListenerKeepsListening(t *testing.T) {
	old := postgres.SetFeedPing(20 * time.Millisecond)
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	postgres.SetFeedPing(old) // a and b keep the short one
	scope := a2asrv.Scope{Tenant: "acme"}
	task := &a2a.Task{ID: "quiet", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Now()}}
	if _, err := a.TaskStore().Create(context.Background(), scope, task); err != nil {
		t.Fatal(err)
	}
	changes := make(chan a2asrv.TaskChange, 1)
	stop := b.TaskFeed().Watch("quiet", func(c a2asrv.TaskChange) { changes <- c })
	defer stop()
	time.Sleep(200 * time.Millisecond) // ten quiet spells, each ending in a ping
	if err := b.ListenerStatus(); err != nil {
		t.Fatalf("ListenerStatus after quiet spells: %v", err)
	}
	task.Status.State = a2a.TaskStateCompleted
	if _, err := a.TaskStore().Update(context.Background(), scope, task, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-changes:
		if c.Version != 2 || c.Task == nil || c.Task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("change %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not reach the quiet listener")
	}
}
