package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "novaos-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	scope := a2asrv.Scope{Tenant: "acme", Owner: "alice"}
	task := &a2a.Task{ID: "task-1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
	if _, err := db.TaskStore().Create(ctx, scope, task); err != nil {
		log.Fatal(err)
	}
	db.Close()

	// A restarted process finds the task where it left it.
	db, err = sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	got, version, err := db.TaskStore().Get(ctx, scope, "task-1")
	fmt.Println(got.ID, got.Status.State, version, err)
	// Output: task-1 TASK_STATE_SUBMITTED 1 <nil>
}
