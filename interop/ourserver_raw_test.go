package interop

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
)

// TestOurServer_DisputedCases pins our server's answers, on the wire, for
// the cases where a2a-go and a2a-js disagree with each other or with the
// spec (README.md, "Deviations"). Our column follows A2A v1.0.1.
func TestOurServer_DisputedCases(t *testing.T) {
	c := newRawClient(startOurServer(t).URL)
	done := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
	followUp := userMessage("more")
	followUp.TaskID, followUp.ContextID = done.ID, done.ContextID

	unary := []struct {
		name       string
		client     *rawClient
		method     string
		params     any
		wantCode   int
		wantReason string
	}{
		{name: "no A2A-Version means 0.3", client: c.withHeader("A2A-Version", ""), method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: done.ID}, wantCode: a2a.CodeVersionNotSupported, wantReason: "VERSION_NOT_SUPPORTED"},
		{name: "A2A-Version 0.5", client: c.withHeader("A2A-Version", "0.5"), method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: done.ID}, wantCode: a2a.CodeVersionNotSupported, wantReason: "VERSION_NOT_SUPPORTED"},
		{name: "message to terminal task", client: c, method: a2a.MethodSendMessage, params: a2a.SendMessageRequest{Message: followUp}, wantCode: a2a.CodeUnsupportedOperation, wantReason: "UNSUPPORTED_OPERATION"},
		{name: "cancel completed task", client: c, method: a2a.MethodCancelTask, params: a2a.CancelTaskRequest{ID: done.ID}, wantCode: a2a.CodeTaskNotCancelable, wantReason: "TASK_NOT_CANCELABLE"},
		{name: "empty parts", client: c, method: a2a.MethodSendMessage, params: map[string]any{"message": map[string]any{"messageId": "m-empty", "role": "ROLE_USER", "parts": []any{}}}, wantCode: a2a.CodeInvalidParams, wantReason: "INVALID_PARAMS"},
		{name: "v0.3 method name", client: c, method: "message/send", params: map[string]any{}, wantCode: a2a.CodeMethodNotFound, wantReason: "METHOD_NOT_FOUND"},
		{name: "unknown task", client: c, method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: "no-such-task"}, wantCode: a2a.CodeTaskNotFound, wantReason: "TASK_NOT_FOUND"},
	}
	for _, tc := range unary {
		t.Run(tc.name, func(t *testing.T) {
			e := wantError(t, tc.client.call(t, tc.method, tc.params), tc.wantCode)
			if r := errorInfoReason(e); r != tc.wantReason {
				t.Errorf("ErrorInfo reason %q, want %q (data %s)", r, tc.wantReason, e.Data)
			}
		})
	}

	streams := []struct {
		name     string
		method   string
		params   any
		wantCode int
	}{
		{name: "subscribe to terminal task", method: a2a.MethodSubscribeToTask, params: a2a.SubscribeToTaskRequest{ID: done.ID}, wantCode: a2a.CodeUnsupportedOperation},
		{name: "subscribe to unknown task", method: a2a.MethodSubscribeToTask, params: a2a.SubscribeToTaskRequest{ID: "no-such-task"}, wantCode: a2a.CodeTaskNotFound},
		{name: "stream to terminal task", method: a2a.MethodSendStreamingMessage, params: a2a.SendMessageRequest{Message: followUp}, wantCode: a2a.CodeUnsupportedOperation},
	}
	for _, tc := range streams {
		t.Run(tc.name, func(t *testing.T) {
			// Refused before the stream opens. A caller that accepts
			// text/event-stream gets one SSE error event (a2a-go's client
			// reads nothing else, see TestGoClient_StreamRefusalsVisible);
			// a caller that does not gets plain JSON, as a2a-js's server
			// answers.
			e, viaSSE := c.open(t, tc.method, tc.params).firstError()
			if !viaSSE || e.Code != tc.wantCode {
				t.Errorf("error %d via SSE=%v, want %d as an SSE event", e.Code, viaSSE, tc.wantCode)
			}
			r := c.call(t, tc.method, tc.params)
			if r.Error == nil || r.Error.Code != tc.wantCode {
				t.Errorf("without Accept: text/event-stream: %+v, want error %d as plain JSON", r.Error, tc.wantCode)
			}
		})
	}

	t.Run("delete push config answers result null", func(t *testing.T) {
		cfg := decodeResult[a2a.TaskPushNotificationConfig](t, c.call(t, a2a.MethodCreateTaskPushNotificationConfig, a2a.TaskPushNotificationConfig{TaskID: done.ID, URL: "https://hooks.example.com/a2a"}))
		for i := 0; i < 2; i++ { // idempotent
			r := c.call(t, a2a.MethodDeleteTaskPushNotificationConfig, a2a.DeleteTaskPushNotificationConfigRequest{TaskID: done.ID, ID: cfg.ID})
			if r.Error != nil || string(r.Result) != "null" {
				t.Errorf("delete #%d = result %s error %+v, want result null", i+1, r.Result, r.Error)
			}
		}
	})

	// The spec disagrees with itself: §3.1.5 lists TaskNotCancelable for a
	// task "already completed, failed, or canceled", §3.3.1 calls cancel
	// idempotent. Our server follows §3.1.5, as a2a-python and the TCK do;
	// a2a-go and a2a-js return the canceled task again.
	t.Run("repeated cancel", func(t *testing.T) {
		res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{
			Message:       userMessage("slow"),
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
		}))
		first := decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
		if first.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("cancel state %v", first.Status.State)
		}
		wantError(t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}), a2a.CodeTaskNotCancelable)
	})
}

// The keep-alive comments our server sends on idle streams must be
// invisible to readers: TestGoClient_SubscribeToTask and the a2a-js
// scenario read streams that carry them. This test checks they are there.
func TestOurServer_KeepAlive(t *testing.T) {
	c := newRawClient(startOurServer(t).URL)
	res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{
		Message:       userMessage("slow"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	}))
	// Shutdown waits for running executions, so end this one.
	defer func() {
		decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
	}()
	ctx := testCtx(t)
	resp, _ := c.post(ctx, t, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: res.Task.ID}, "text/event-stream")
	defer resp.Body.Close()
	for _, h := range []string{"Cache-Control", "Content-Type"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("stream has no %s header", h)
		}
	}
	sc := bufio.NewScanner(resp.Body)
	deadline := time.Now().Add(20 * keepAlive)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), ":") {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Errorf("no keep-alive comment within %v (scan error %v)", 20*keepAlive, sc.Err())
}
