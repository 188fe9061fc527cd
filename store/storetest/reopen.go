package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// Stores is one open database: its task and push-config stores and how to
// close it.
type Stores struct {
	Tasks       a2asrv.TaskStore
	PushConfigs a2asrv.PushConfigStore
	Close       func()
}

// TestReopen checks durability across restarts: a task and a push config
// written through one handle are read back, unchanged and at the same
// version, through a new handle on the same database, twice (the second
// reopen also runs the migrations against a migrated schema). open must
// return a fresh handle on the same database at every call.
func TestReopen(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()
	scope := a2asrv.Scope{Tenant: "acme", Owner: "alice"}
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{
		State: a2a.TaskStateCompleted, Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC),
	}, Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart("result")}}}}
	cfg := &a2a.TaskPushNotificationConfig{ID: "p1", TaskID: "t1", URL: "https://hooks.example.com/"}

	db := open(t)
	v, err := db.Tasks.Create(ctx, scope, task)
	if err != nil {
		t.Fatal(err)
	}
	task.Status.State = a2a.TaskStateWorking
	if _, err := db.Tasks.Update(ctx, scope, task, v); err != nil {
		t.Fatal(err)
	}
	if err := db.PushConfigs.Put(ctx, scope, cfg); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for i := range 2 {
		db := open(t)
		got, v, err := db.Tasks.Get(ctx, scope, "t1")
		if err != nil {
			t.Fatalf("reopen %d: Get: %v", i, err)
		}
		if diff := cmp.Diff(task, got); diff != "" || v != 2 {
			t.Errorf("reopen %d: version %d, task (-want +got):\n%s", i, v, diff)
		}
		gotCfg, err := db.PushConfigs.Get(ctx, scope, "t1", "p1")
		if err != nil || gotCfg.URL != cfg.URL {
			t.Errorf("reopen %d: push config = %+v, %v", i, gotCfg, err)
		}
		db.Close()
	}
}
