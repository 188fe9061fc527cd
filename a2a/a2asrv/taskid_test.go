package a2asrv_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// runIDOptions proposes the request metadata's "run" as the task id and
// scopes callers by X-User.
func runIDOptions(calls *atomic.Int64) *a2asrv.Options {
	return &a2asrv.Options{
		NewTaskID: func(req *a2a.SendMessageRequest) string {
			calls.Add(1)
			s, _ := req.Metadata["run"].(string)
			return s
		},
		Identify: func(_ context.Context, c *a2asrv.Call) (a2asrv.Scope, error) {
			if u := c.Header.Get("X-User"); u != "" {
				return a2asrv.Scope{Tenant: "acme", Owner: u}, nil
			}
			return a2asrv.Scope{}, errors.New("no user")
		},
	}
}

func withRun(params map[string]any, run string, immediate bool) map[string]any {
	params["metadata"] = map[string]any{"run": run}
	if immediate {
		params["configuration"] = map[string]any{"returnImmediately": true}
	}
	return params
}

func TestNewTaskIDProposals(t *testing.T) {
	var calls atomic.Int64
	c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), runIDOptions(&calls))
	for _, tc := range []struct {
		name, run string
		want      string // "" means a fresh UUID
	}{
		{"run id used verbatim", "run-1", "run-1"},
		{"UUID-shaped run id", "0195f3c2-7d1e-7abc-8def-0123456789ab", "0195f3c2-7d1e-7abc-8def-0123456789ab"},
		{"none", "", ""},
		{"space", "run 2", ""},
		{"control character", "run\x003", ""},
		{"slash", "../run", ""},
		{"too long", strings.Repeat("r", 129), ""},
		{"longest", strings.Repeat("r", 128), strings.Repeat("r", 128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp a2a.SendMessageResponse
			if err := c.call(a2a.MethodSendMessage, withRun(userMessage("complete ok"), tc.run, false), &resp, "X-User", "alice"); err != nil {
				t.Fatal(err)
			}
			got := resp.Task.ID
			if tc.want != "" && got != tc.want || tc.want == "" && !uuidShape.MatchString(got) {
				t.Errorf("task id %q, want %q (\"\": a fresh UUID)", got, tc.want)
			}
		})
	}
	// A message naming its task continues it; nothing is proposed.
	before := calls.Load()
	var resp a2a.SendMessageResponse
	if err := c.call(a2a.MethodSendMessage, withRun(userMessage("input which?"), "run-9", false), &resp, "X-User", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := c.call(a2a.MethodSendMessage, withRun(continuation("run-9", "yes"), "run-10", false), &resp, "X-User", "alice"); err != nil {
		t.Fatal(err)
	}
	if resp.Task.ID != "run-9" || calls.Load() != before+1 {
		t.Errorf("continuation: task %q, NewTaskID called %d times, want run-9 and once", resp.Task.ID, calls.Load()-before)
	}
}

// A run id already used by a task is never reused for another: not in the
// caller's scope (a retry of the run gets a task of its own), not for a
// task live in another scope, and a stored task of another scope is
// neither read nor changed.
func TestNewTaskIDCollisions(t *testing.T) {
	var calls atomic.Int64
	exec := newControlled()
	c, _ := newServer(t, exec, runIDOptions(&calls))
	send := func(user, run string) (*a2a.Task, *a2a.Error) {
		var resp a2a.SendMessageResponse
		err := c.call(a2a.MethodSendMessage, withRun(userMessage("work"), run, true), &resp, "X-User", user)
		return resp.Task, err
	}
	// alice's run-1 is live (its execution waits for the test).
	first, err := send("alice", "run-1")
	if err != nil || first.ID != "run-1" {
		t.Fatalf("first send: %v %v", first, err)
	}
	<-exec.started
	for _, user := range []string{"alice", "mallory"} {
		got, err := send(user, "run-1")
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if got.ID == "run-1" || !uuidShape.MatchString(got.ID) {
			t.Errorf("%s reusing a live run id got task %q, want a fresh id", user, got.ID)
		}
		<-exec.started
		exec.ch(got.ID) <- "theirs"
	}
	if cause, _ := exec.outcome("run-1"); cause != nil {
		t.Fatalf("alice's execution was interrupted: %v", cause)
	}
	exec.ch("run-1") <- "alice's result"
	waitFor(t, func() bool {
		var task a2a.Task
		return c.call(a2a.MethodGetTask, map[string]any{"id": "run-1"}, &task, "X-User", "alice") == nil && task.Status.State == a2a.TaskStateCompleted
	})

	// Stored, not live: alice reuses it and gets a new task; mallory cannot
	// create a task with its id and learns nothing of it.
	again, err := send("alice", "run-1")
	if err != nil || again.ID == "run-1" {
		t.Fatalf("alice again: %v %v", again, err)
	}
	<-exec.started
	exec.ch(again.ID) <- "again"
	var resp a2a.SendMessageResponse
	// The id is only found taken when the store creates the task, at the
	// executor's first write (never deferred for a proposed id), so the
	// executor stops there and mallory is answered with an error.
	e := c.call(a2a.MethodSendMessage, withRun(userMessage("work"), "run-1", true), &resp, "X-User", "mallory")
	if e == nil || e.Code != a2a.CodeInvalidParams || resp.Task != nil {
		t.Fatalf("mallory proposing a taken run id: %v, task %+v; want InvalidParams and no task", e, resp.Task)
	}
	// A blocking call would defer its create to the end; with a proposed
	// id it does not, and the executor never gets past its first write.
	answered := make(chan *a2a.Error, 1)
	go func() {
		var resp a2a.SendMessageResponse
		e := c.call(a2a.MethodSendMessage, withRun(userMessage("work"), "run-1", false), &resp, "X-User", "mallory")
		if e == nil && resp.Task != nil {
			e = a2a.NewError(0, "answered with task %s", resp.Task.ID)
		}
		answered <- e
	}()
	select {
	case id := <-exec.started:
		exec.ch(id) <- "mallory's"
		t.Fatalf("an execution got past its first write with a taken id (%s)", id)
	case e := <-answered:
		if e == nil || e.Code != a2a.CodeInvalidParams {
			t.Fatalf("mallory's blocking call with a taken run id: %v; want InvalidParams and no task", e)
		}
	}
	var task a2a.Task
	if err := c.call(a2a.MethodGetTask, map[string]any{"id": "run-1"}, &task, "X-User", "alice"); err != nil {
		t.Fatal(err)
	}
	if len(task.History) != 1 || len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "alice's result" {
		t.Errorf("alice's task changed: history %d, artifacts %+v", len(task.History), task.Artifacts)
	}
	if err := c.call(a2a.MethodGetTask, map[string]any{"id": "run-1"}, nil, "X-User", "mallory"); err == nil || err.Code != a2a.CodeTaskNotFound {
		t.Errorf("mallory reads run-1: %v, want TaskNotFound", err)
	}
}

// Concurrent requests proposing one free id: exactly one gets it.
func TestNewTaskIDConcurrent(t *testing.T) {
	var calls atomic.Int64
	exec := newControlled()
	c, _ := newServer(t, exec, runIDOptions(&calls))
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var resp a2a.SendMessageResponse
			if err := c.call(a2a.MethodSendMessage, withRun(userMessage("work"), "run-c", true), &resp, "X-User", "alice"); err != nil {
				t.Error(err)
				return
			}
			ids[i] = resp.Task.ID
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			t.Fatalf("ids %q: empty or repeated", ids)
		}
		seen[id] = true
		<-exec.started
		exec.ch(id) <- "done"
	}
	if !seen["run-c"] {
		t.Errorf("ids %q: none is the run id", ids)
	}
}
