package interop

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
)

// The @a2a-js/sdk server (js/server.mjs, Express 5) read on the wire with
// our decoder, as goserver_test.go does for a2a-go.

// One peer process serves every subtest: starting Node costs ~0.3 s.
func TestJSServer(t *testing.T) {
	url := startJSPeer(t)
	c := newRawClient(url)

	t.Run("AgentCard", func(t *testing.T) {
		resp, err := http.Get(url + a2a.WellKnownCardPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var card a2a.AgentCard
		if err := a2a.Unmarshal(body, &card); err != nil {
			t.Fatalf("decode card: %v; body %s", err, body)
		}
		// a2a-js writes default values ("tenant": "", empty lists); our
		// reader must take them as absent.
		want := []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}}
		if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
			t.Errorf("supportedInterfaces (-want +got):\n%s", diff)
		}
		if card.Capabilities.Streaming == nil || !*card.Capabilities.Streaming || len(card.Skills) != 1 {
			t.Errorf("card = %+v", card)
		}
	})

	t.Run("SendMessage", func(t *testing.T) {
		msg := userMessage("hello")
		res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: msg}))
		if res.Task == nil || res.Message != nil {
			t.Fatalf("result = %+v, want only a task", res)
		}
		task := res.Task
		if task.Status.State != a2a.TaskStateCompleted || task.Status.Timestamp.IsZero() || task.Status.Message.Text() != "done" {
			t.Errorf("status = %+v", task.Status)
		}
		if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "echo: hello" {
			t.Errorf("artifacts = %+v", task.Artifacts)
		}
		// a2a-js moves the final status message into the history as well.
		if len(task.History) != 2 || task.History[0].MessageID != msg.MessageID || task.History[1].Role != a2a.RoleAgent {
			t.Errorf("history = %+v", task.History)
		}
		reply := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("message")}))
		if reply.Message == nil || reply.Message.Text() != "echo: message" || reply.Message.Role != a2a.RoleAgent {
			t.Errorf("reply = %+v", reply)
		}
	})

	t.Run("SendStreamingMessage", func(t *testing.T) {
		s := c.open(t, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: userMessage("stream me")})
		if s.resp.Header.Get("Cache-Control") == "" {
			t.Errorf("no Cache-Control on the stream")
		}
		evs := s.rest()
		want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
		if diff := cmp.Diff(want, kinds(evs)); diff != "" {
			t.Fatalf("frames (-want +got):\n%s", diff)
		}
		for i, ev := range evs {
			if ev.TaskID() != evs[0].Task.ID {
				t.Errorf("frame %d task id %q", i, ev.TaskID())
			}
		}
		if got := a2a.PartsText(evs[2].ArtifactUpdate.Artifact.Parts); got != "echo: stream me" || !evs[2].ArtifactUpdate.LastChunk {
			t.Errorf("artifact update = %+v", evs[2].ArtifactUpdate)
		}
	})

	t.Run("GetTaskAndList", func(t *testing.T) {
		first := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("one")})).Task
		// Status timestamps have millisecond precision; keep the order
		// unambiguous.
		time.Sleep(5 * time.Millisecond)
		m := userMessage("two")
		m.ContextID = first.ContextID
		second := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: m})).Task

		got := decodeResult[a2a.Task](t, c.call(t, a2a.MethodGetTask, a2a.GetTaskRequest{ID: first.ID, HistoryLength: int32p(1)}))
		if got.ID != first.ID || len(got.History) != 1 {
			t.Errorf("GetTask(historyLength 1) = id %q, %d history", got.ID, len(got.History))
		}
		list := decodeResult[a2a.ListTasksResponse](t, c.call(t, a2a.MethodListTasks, a2a.ListTasksRequest{ContextID: first.ContextID}))
		var ids []string
		for _, task := range list.Tasks {
			ids = append(ids, task.ID)
		}
		if diff := cmp.Diff([]string{second.ID, first.ID}, ids); diff != "" {
			t.Errorf("ListTasks ids (-want +got):\n%s", diff)
		}
		if list.TotalSize != 2 || list.NextPageToken != "" {
			t.Errorf("totalSize %d nextPageToken %q", list.TotalSize, list.NextPageToken)
		}
	})

	t.Run("CancelAndSubscribe", func(t *testing.T) {
		res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{
			Message:       userMessage("slow"),
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
		}))
		if res.Task == nil || res.Task.Status.State.Terminal() {
			t.Fatalf("returnImmediately = %+v, want a live task", res)
		}
		s := c.open(t, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: res.Task.ID})
		if first := s.nextEvent(); first.Task == nil || first.Task.ID != res.Task.ID {
			t.Fatalf("first frame %s, want the task snapshot", kind(first))
		}
		canceled := decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
		if canceled.Status.State != a2a.TaskStateCanceled {
			t.Errorf("cancel state %v", canceled.Status.State)
		}
		evs := s.rest()
		if len(evs) == 0 || kind(evs[len(evs)-1]) != "status:TASK_STATE_CANCELED" {
			t.Errorf("frames after cancel %v", kinds(evs))
		}
		// A repeated cancel is idempotent, as in a2a-go.
		again := decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
		if again.Status.State != a2a.TaskStateCanceled {
			t.Errorf("second cancel state %v", again.Status.State)
		}
	})

	t.Run("PushConfigs", func(t *testing.T) {
		task := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
		in := a2a.TaskPushNotificationConfig{TaskID: task.ID, URL: "https://hooks.example.com/a2a", Token: "tok-1"}
		created := decodeResult[a2a.TaskPushNotificationConfig](t, c.call(t, a2a.MethodCreateTaskPushNotificationConfig, in))
		want := in
		want.ID = created.ID
		if created.ID == "" || !cmp.Equal(want, *created) {
			t.Errorf("created = %+v", created)
		}
		got := decodeResult[a2a.TaskPushNotificationConfig](t, c.call(t, a2a.MethodGetTaskPushNotificationConfig, a2a.GetTaskPushNotificationConfigRequest{TaskID: task.ID, ID: created.ID}))
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("get (-want +got):\n%s", diff)
		}
		list := decodeResult[a2a.ListTaskPushNotificationConfigsResponse](t, c.call(t, a2a.MethodListTaskPushNotificationConfigs, a2a.ListTaskPushNotificationConfigsRequest{TaskID: task.ID}))
		if len(list.Configs) != 1 || list.Configs[0].ID != created.ID {
			t.Errorf("list = %+v", list)
		}
		del := c.call(t, a2a.MethodDeleteTaskPushNotificationConfig, a2a.DeleteTaskPushNotificationConfigRequest{TaskID: task.ID, ID: created.ID})
		if del.Error != nil || string(del.Result) != "null" {
			t.Errorf("delete = result %s error %+v, want result null", del.Result, del.Error)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		done := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
		followUp := userMessage("more")
		followUp.TaskID, followUp.ContextID = done.ID, done.ContextID
		tests := []struct {
			name     string
			client   *rawClient
			method   string
			params   any
			wantCode int
		}{
			{name: "unknown task", client: c, method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: "no-such-task"}, wantCode: a2a.CodeTaskNotFound},
			{name: "cancel completed task", client: c, method: a2a.MethodCancelTask, params: a2a.CancelTaskRequest{ID: done.ID}, wantCode: a2a.CodeTaskNotCancelable},
			{name: "message to terminal task", client: c, method: a2a.MethodSendMessage, params: a2a.SendMessageRequest{Message: followUp}, wantCode: a2a.CodeUnsupportedOperation},
			{name: "no A2A-Version means 0.3", client: c.withHeader("A2A-Version", ""), method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: done.ID}, wantCode: a2a.CodeVersionNotSupported},
			{name: "unknown version", client: c.withHeader("A2A-Version", "0.5"), method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: done.ID}, wantCode: a2a.CodeVersionNotSupported},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, tc.client.call(t, tc.method, tc.params), tc.wantCode)
			})
		}
	})

	// a2a-js refuses a streaming call on a terminal task before opening the
	// stream, with a plain JSON error, as our server does.
	t.Run("SubscribeTerminalTask", func(t *testing.T) {
		done := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
		e, viaSSE := c.open(t, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: done.ID}).firstError()
		if viaSSE || e.Code != a2a.CodeUnsupportedOperation {
			t.Errorf("error %d via SSE=%v, want %d as plain JSON", e.Code, viaSSE, a2a.CodeUnsupportedOperation)
		}
	})

	// Deviation: a2a-js answers an unknown method with -32601 but no
	// ErrorInfo in data; A2A v1.0.1 says errors SHOULD carry one (our server
	// and a2a-go send METHOD_NOT_FOUND).
	t.Run("Deviation_MethodNotFoundWithoutErrorInfo", func(t *testing.T) {
		e := wantError(t, c.call(t, "message/send", map[string]any{}), a2a.CodeMethodNotFound)
		if r := errorInfoReason(e); r != "" {
			t.Errorf("ErrorInfo reason %q; the peer used to send none", r)
		}
	})

	// Deviation: a2a-js accepts a message with no parts; parts is REQUIRED
	// with at least one element, so our server answers -32602.
	t.Run("Deviation_EmptyPartsAccepted", func(t *testing.T) {
		m := &a2a.Message{MessageID: a2a.NewID(), Role: a2a.RoleUser, Parts: []a2a.Part{}}
		r := c.call(t, a2a.MethodSendMessage, map[string]any{"message": m})
		if r.Error != nil {
			t.Errorf("error %d; the peer used to accept an empty parts list", r.Error.Code)
		}
	})
}
