package interop

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	ours "novaos.dev/novaos/a2a/a2aclient"
)

// Our client (a2a/a2aclient) against the @a2a-js/sdk 0.3.14 server
// (js/server03.mjs), an A2A 0.3 agent: the client reads its 0.3 card,
// selects its JSON-RPC interface as 0.3 and calls every method the 0.3
// JSON-RPC binding has through the same API it uses for v1 agents.
func TestOurClient_JSServer03(t *testing.T) {
	js03Peer(t)
	url := startNodeServer(t, "server03.mjs")
	ctx := testCtx(t)
	c, err := ours.NewFromURL(ctx, url, &ours.Options{Timeout: 10 * time.Second, ResumeAttempts: -1})
	if err != nil {
		t.Fatalf("NewFromURL: %v", err)
	}
	want := []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"}}
	if diff := cmp.Diff(want, c.Card().SupportedInterfaces); diff != "" || c.URL() != url {
		t.Fatalf("card interfaces (-want +got):\n%s\nselected %s", diff, c.URL())
	}

	t.Run("SendMessage", func(t *testing.T) {
		r, err := c.SendText(ctx, "hello", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Task == nil || r.Task.Status.State != a2a.TaskStateCompleted || r.Task.Status.Message.Text() != "done" || a2a.PartsText(r.Task.Artifacts[0].Parts) != "echo: hello" {
			t.Fatalf("task = %+v", r.Task)
		}
		m, err := c.SendText(ctx, "message", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if m.Message == nil || m.Message.Text() != "echo: message" || m.Message.Role != a2a.RoleAgent {
			t.Errorf("reply = %+v", m)
		}
	})

	t.Run("Stream", func(t *testing.T) {
		var frames []*a2a.StreamResponse
		for f, err := range c.SendStreamingMessage(ctx, ours.TextRequest("stream me", "", "")) {
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, f)
		}
		want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
		if diff := cmp.Diff(want, kinds(frames)); diff != "" {
			t.Fatalf("frames (-want +got):\n%s", diff)
		}
		if got := a2a.PartsText(frames[2].ArtifactUpdate.Artifact.Parts); got != "echo: stream me" {
			t.Errorf("artifact = %q", got)
		}
	})

	t.Run("InputRequired", func(t *testing.T) {
		var last *a2a.StreamResponse
		for f, err := range c.SendStreamingMessage(ctx, ours.TextRequest("ask", "", "")) {
			if err != nil {
				t.Fatal(err)
			}
			last = f
		}
		if last == nil || kind(last) != "status:TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("stream ended with %v", last)
		}
		done, err := c.SendText(ctx, "42", last.TaskID(), last.StatusUpdate.ContextID)
		if err != nil {
			t.Fatal(err)
		}
		if done.Task == nil || done.Task.Status.State != a2a.TaskStateCompleted || a2a.PartsText(done.Task.Artifacts[len(done.Task.Artifacts)-1].Parts) != "answer: 42" {
			t.Errorf("answered = %+v", done.Task)
		}
	})

	t.Run("GetCancelResubscribe", func(t *testing.T) {
		r, err := c.SendText(ctx, "one", "", "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.Task.ID, HistoryLength: int32p(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != r.Task.ID || len(got.History) != 1 || got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("GetTask = id %q state %v, %d history", got.ID, got.Status.State, len(got.History))
		}

		live, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userMessage("slow"), Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		if live.Task == nil || live.Task.Status.State.Terminal() {
			t.Fatalf("returnImmediately = %+v, want a live task", live)
		}
		// Resubscribe, and cancel once the subscription has its first
		// frame (the task as it stands).
		first := make(chan struct{})
		type result struct {
			frames []*a2a.StreamResponse
			err    error
		}
		done := make(chan result, 1)
		go func() {
			var res result
			for f, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: live.Task.ID}) {
				if err != nil {
					res.err = err
					break
				}
				if len(res.frames) == 0 {
					close(first)
				}
				res.frames = append(res.frames, f)
			}
			done <- res
		}()
		select {
		case <-first:
		case res := <-done:
			t.Fatalf("subscription ended before cancel: %v, %v", kinds(res.frames), res.err)
		}
		canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: live.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if canceled.Status.State != a2a.TaskStateCanceled {
			t.Errorf("cancel state %v", canceled.Status.State)
		}
		res := <-done
		if res.err != nil {
			t.Fatalf("SubscribeToTask: %v after %v", res.err, kinds(res.frames))
		}
		if ks := kinds(res.frames); ks[0] != "task:TASK_STATE_WORKING" || ks[len(ks)-1] != "status:TASK_STATE_CANCELED" {
			t.Errorf("SubscribeToTask frames = %v", ks)
		}
	})

	t.Run("PushConfigs", func(t *testing.T) {
		r, err := c.SendText(ctx, "hello", "", "")
		if err != nil {
			t.Fatal(err)
		}
		taskID := r.Task.ID
		in := &a2a.TaskPushNotificationConfig{TaskID: taskID, URL: "https://hooks.example.com/a2a", Token: "tok-1",
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}
		created, err := c.CreateTaskPushNotificationConfig(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want := *in
		want.ID = taskID // 0.3: a config set without an id gets the task's
		if diff := cmp.Diff(want, *created); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		second, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: taskID, ID: "cfg-2", URL: "https://hooks.example.com/two"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: taskID, ID: second.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != "https://hooks.example.com/two" || got.ID != "cfg-2" || got.TaskID != taskID {
			t.Errorf("get = %+v", got)
		}
		list, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Configs) != 2 {
			t.Errorf("list = %+v", list)
		}
		if err := c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: taskID, ID: created.ID}); err != nil {
			t.Fatal(err)
		}
		list, err = c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Configs) != 1 || list.Configs[0].ID != "cfg-2" {
			t.Errorf("list after delete = %+v", list)
		}
	})

	// Parts make the trip through the 0.3 form and back as they were sent
	// (a data part's media type has no 0.3 form).
	t.Run("Parts", func(t *testing.T) {
		arr, _ := a2a.DataPart([]any{1.0, "two"})
		obj, _ := a2a.DataPart(map[string]any{"k": "v"})
		parts := []a2a.Part{
			{Kind: a2a.PartText, Text: "hi", Metadata: map[string]any{"m": "1"}},
			a2a.RawPart([]byte("raw bytes\x00\xff"), "b.bin", "application/octet-stream"),
			a2a.URLPart("https://files.example.com/a.pdf", "a.pdf", "application/pdf"),
			arr, obj,
		}
		for i := range parts {
			if parts[i].Kind == a2a.PartData {
				parts[i].MediaType = ""
			}
		}
		r, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, append([]a2a.Part{a2a.TextPart(partsCommand)}, parts...)...)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Task == nil || len(r.Task.Artifacts) != 1 {
			t.Fatalf("task = %+v", r.Task)
		}
		if diff := cmp.Diff(parts, r.Task.Artifacts[0].Parts); diff != "" {
			t.Errorf("parts back (-want +got):\n%s", diff)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		r, err := c.SendText(ctx, "hello", "", "")
		if err != nil {
			t.Fatal(err)
		}
		_, errUnknown := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
		_, errCancelUnknown := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "no-such-task"})
		_, errCancelDone := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: r.Task.ID})
		// a2a-js 0.3 answers -32600 invalid request where v1 says -32004.
		_, errTerminal := c.SendText(ctx, "more", r.Task.ID, r.Task.ContextID)
		var errResub error
		for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "no-such-task"}) {
			if err != nil {
				errResub = err
				break
			}
		}
		_, errList := c.ListTasks(ctx, &a2a.ListTasksRequest{})
		for _, tc := range []struct {
			name string
			err  error
			want error
		}{
			{"unknown task", errUnknown, a2a.ErrTaskNotFound},
			{"cancel unknown task", errCancelUnknown, a2a.ErrTaskNotFound},
			{"cancel completed task", errCancelDone, a2a.ErrTaskNotCancelable},
			{"message to terminal task", errTerminal, a2a.ErrInvalidRequest},
			{"resubscribe unknown task", errResub, a2a.ErrTaskNotFound},
			{"ListTasks, refused before the wire", errList, a2a.ErrUnsupportedOperation},
		} {
			var ce *ours.CallError
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
			} else if isCall := errors.As(tc.err, &ce); isCall == (tc.want == a2a.ErrUnsupportedOperation) {
				t.Errorf("%s: %v: a *CallError is the agent's answer only", tc.name, tc.err)
			}
		}
	})
}
