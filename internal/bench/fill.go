package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store"
)

// fillWriters are the writers FillDatabase runs at once: enough for the
// stores' group commits to batch.
const fillWriters = 32

// FillDatabase writes tasks A2A tasks and runs execution-gateway runs
// into st, as a platform's database holds them: ten tenants, a hundred
// contexts, a message and an artifact per task, most tasks and runs
// finished (completed, failed, canceled) and some waiting for their user.
// Every id is new, so a database can be filled more than once.
func FillDatabase(ctx context.Context, st *store.Stores, tasks, runs int) error {
	if st == nil || st.Tasks == nil || (runs > 0 && st.Gateway == nil) {
		return errors.New("bench: fill: the stores lack tasks or runs")
	}
	states := []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateInputRequired, a2a.TaskStateCanceled}
	statuses := []gateway.Status{gateway.StatusCompleted, gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusWaitingUser, gateway.StatusCancelled}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range fillWriters {
		wg.Go(func() {
			for i := w; i < tasks && ctx.Err() == nil; i += fillWriters {
				id := a2a.NewID()
				task := &a2a.Task{ID: id, ContextID: fmt.Sprint("bench-ctx-", i%100),
					Status:    a2a.TaskStatus{State: states[i%len(states)], Timestamp: time.Now()},
					History:   []a2a.Message{{MessageID: a2a.NewID(), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("a question of a few words")}}},
					Artifacts: []a2a.Artifact{{ArtifactID: a2a.NewID(), Parts: []a2a.Part{a2a.TextPart("an answer of a few words more")}}}}
				if _, err := st.Tasks.Create(ctx, a2asrv.Scope{Tenant: fmt.Sprint("bench-", i%10), Owner: "echo"}, task); err != nil {
					cancel(fmt.Errorf("bench: fill: task: %w", err))
					return
				}
			}
			for i := w; i < runs && ctx.Err() == nil; i += fillWriters {
				run := gateway.Run{ID: a2a.NewID(), TenantID: fmt.Sprint("bench-", i%10), InstanceID: "bench-instance", AgentID: "echo",
					Status: statuses[i%len(statuses)], Reason: "done", Input: "hello", Output: "hello"}
				if _, _, err := st.Gateway.CreateRun(ctx, gateway.RunWrite{Run: run, Now: time.Now()}); err != nil {
					cancel(fmt.Errorf("bench: fill: run: %w", err))
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
