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
	url := pgtest.URL(t)
	db := open(t, url)
	if err := db.ListenerStatus(); err != nil {
		t.Fatalf("ListenerStatus after Open: %v", err)
	}
	// No reconnection until allow: the drop is seen however late the
	// test looks.
	allow := pgtest.RefuseConnections(t, url)
	if err := postgres.DropListener(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	waitListener := func(down bool) {
		t.Helper()
		// Reconnection attempts back off to 5s apart: a minute only
		// bounds a failure.
		for deadline := time.Now().Add(time.Minute); (db.ListenerStatus() != nil) != down; {
			if time.Now().After(deadline) {
				t.Fatalf("after a minute, ListenerStatus = %v, want down: %v", db.ListenerStatus(), down)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitListener(true)
	allow()
	waitListener(false)
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
	// Ten quiet spells, each ending in a ping.
	for deadline := time.Now().Add(time.Minute); postgres.FeedPings(b) < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("%d pings in a minute of quiet, want 10", postgres.FeedPings(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
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
