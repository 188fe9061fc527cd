package main_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/store/sqlite"
)

// Tasks running when the process is killed outright are settled FAILED
// after a restart, once the dead process's lease lapses; none stays
// WORKING, a task waiting for its user keeps waiting, and each settled
// version lies past a2asrv.RecoveryVersionGap.
func TestRunningTasksSettledAfterKill(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	// tck-delayed-complete runs for one --tck-timeout: an hour, so the
	// tasks are surely running at the kill. Short leases keep the test
	// short; the defaults settle within 35s of a restart.
	flags := []string{"--tck-timeout", "1h", "--lease-heartbeat", "100ms", "--lease-expiry", "1s"}
	url, stop := serve(t, bin, data, flags...)
	tck := strings.TrimSuffix(url, "/echo") + "/tck"

	const running = 12
	var ids []string
	for i := range running {
		ids = append(ids, start(t, tck, fmt.Sprintf("tck-delayed-complete-%d", i)))
	}
	waiting := start(t, tck, "tck-input-required-1")
	waitState(t, tck, waiting, a2a.TaskStateInputRequired)
	for _, id := range ids {
		waitState(t, tck, id, a2a.TaskStateWorking)
	}
	stop(syscall.SIGKILL)

	url, stop = serve(t, bin, data, flags...)
	tck = strings.TrimSuffix(url, "/echo") + "/tck"
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list a2a.ListTasksResponse
		call(t, tck, a2a.MethodListTasks, a2a.ListTasksRequest{Status: a2a.TaskStateWorking}, &list)
		if len(list.Tasks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks still WORKING 30s after the restart", len(list.Tasks))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range ids {
		var task a2a.Task
		call(t, tck, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id}, &task)
		st := task.Status
		if st.State != a2a.TaskStateFailed || st.Message == nil || st.Message.Text() != a2asrv.RestartedText {
			t.Errorf("task %s after the restart: %s %+v, want FAILED saying %q", id, st.State, st.Message, a2asrv.RestartedText)
		} else if last := task.History[len(task.History)-1]; last.MessageID != st.Message.MessageID {
			t.Errorf("task %s: the restart message is not in the history", id)
		}
	}
	var task a2a.Task
	call(t, tck, a2a.MethodGetTask, a2a.GetTaskRequest{ID: waiting}, &task)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("task waiting for input: %s after the restart, want INPUT_REQUIRED", task.Status.State)
	}
	stop(syscall.SIGTERM)

	// Versions are stream sequence numbers: the settling write must lie
	// beyond any a client could have seen before the crash.
	db, err := sqlite.Open(context.Background(), filepath.Join(data, app.DatabaseFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		_, v, err := db.TaskStore().Get(context.Background(), a2asrv.Scope{Tenant: "tck/"}, id)
		if err != nil {
			t.Fatal(err)
		}
		if v <= a2asrv.RecoveryVersionGap || v > 2*a2asrv.RecoveryVersionGap {
			t.Errorf("task %s settled at version %d, want the stored version + %d", id, v, a2asrv.RecoveryVersionGap)
		}
	}
}

// start sends a message that returns at once and gives the task id.
func start(t *testing.T, url, messageID string) string {
	t.Helper()
	var resp a2a.SendMessageResponse
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("go"))
	msg.MessageID = messageID
	call(t, url, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: msg,
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}}, &resp)
	if resp.Task == nil {
		t.Fatalf("send %s: no task in %+v", messageID, resp)
	}
	return resp.Task.ID
}

func waitState(t *testing.T, url, id string, want a2a.TaskState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var task a2a.Task
		call(t, url, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id}, &task)
		if task.Status.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want %s", id, task.Status.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
