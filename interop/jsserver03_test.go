package interop

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// The @a2a-js/sdk 0.3.14 server (js/server03.mjs), an A2A 0.3 peer, read
// on the wire the way our client talks to a 0.3 agent: each v1 call is
// written as its 0.3 call with a2av03.EncodeRequest, sent without
// A2A-Version (0.3 has no such header), and the answer is decoded with the
// a2av03 model and converted to v1 with a2av03.DecodeResult.

// js03Peer fails the test unless the 0.3 SDK is installed beside 1.3.0.
func js03Peer(t *testing.T) {
	t.Helper()
	_, dir := jsPeer(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "a2a-js-03")); err != nil {
		t.Fatalf("a2a-js-03 (@a2a-js/sdk 0.3.14) is not installed; run `npm ci` in interop/js: %v", err)
	}
}

// client03 makes v1 calls to a 0.3 agent through a2av03.
type client03 struct{ raw *rawClient }

func newClient03(url string) *client03 {
	return &client03{raw: newRawClient(url).withHeader(a2a.HeaderVersion, "")}
}

// call makes one unary v1 call and returns the v1 result, or the peer's
// JSON-RPC error.
func (c *client03) call(t *testing.T, v1Method string, req any) (any, *a2a.Error) {
	t.Helper()
	method, params, err := a2av03.EncodeRequest(v1Method, req)
	if err != nil {
		t.Fatalf("EncodeRequest(%s): %v", v1Method, err)
	}
	r := c.raw.call(t, method, params)
	if r.Error != nil {
		return nil, r.Error
	}
	v, err := a2av03.DecodeResult(v1Method, r.Result)
	if err != nil {
		t.Fatalf("%s: decode result: %v; result %s", method, err, r.Result)
	}
	return v, nil
}

func call03[T any](t *testing.T, c *client03, v1Method string, req any) *T {
	t.Helper()
	v, e := c.call(t, v1Method, req)
	if e != nil {
		t.Fatalf("%s: error %d %q", v1Method, e.Code, e.Message)
	}
	out, ok := v.(*T)
	if !ok {
		t.Fatalf("%s: result %T, want *%T", v1Method, v, *new(T))
	}
	return out
}

// stream makes a streaming v1 call and reads it to its end: the v1
// frames, and the final flag of each 0.3 frame.
func (c *client03) stream(t *testing.T, v1Method string, req any) (frames []*a2a.StreamResponse, finals []bool) {
	t.Helper()
	method, params, err := a2av03.EncodeRequest(v1Method, req)
	if err != nil {
		t.Fatal(err)
	}
	s := c.raw.open(t, method, params)
	for {
		r, err := s.next()
		if errors.Is(err, io.EOF) {
			return frames, finals
		}
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if r.Error != nil {
			t.Fatalf("%s: error frame %d %q", method, r.Error.Code, r.Error.Message)
		}
		v, err := a2av03.DecodeResult(v1Method, r.Result)
		if err != nil {
			t.Fatalf("%s: frame %s: %v", method, r.Result, err)
		}
		frames = append(frames, v.(*a2a.StreamResponse))
		var f struct {
			Final bool `json:"final"`
		}
		if err := json.Unmarshal(r.Result, &f); err != nil {
			t.Fatal(err)
		}
		finals = append(finals, f.Final)
	}
}

func send03(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: userMessage(text)}
}

func TestJSServer03(t *testing.T) {
	js03Peer(t)
	url := startNodeServer(t, "server03.mjs")
	c := newClient03(url)

	t.Run("AgentCard", func(t *testing.T) {
		resp, err := http.Get(url + a2a.WellKnownCardPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		card, err := a2av03.ParseCard(body)
		if err != nil {
			t.Fatalf("%v; card %s", err, body)
		}
		want := []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"}}
		if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
			t.Errorf("interfaces (-want +got):\n%s", diff)
		}
		if card.Capabilities.Streaming == nil || !*card.Capabilities.Streaming || len(card.Skills) != 1 {
			t.Errorf("card = %+v", card)
		}
	})

	t.Run("SendMessage", func(t *testing.T) {
		req := send03("hello")
		task := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, req).Task
		if task == nil || task.Status.State != a2a.TaskStateCompleted || task.Status.Message.Text() != "done" || task.Status.Timestamp.IsZero() {
			t.Fatalf("task = %+v", task)
		}
		if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "echo: hello" {
			t.Errorf("artifacts = %+v", task.Artifacts)
		}
		if len(task.History) == 0 || task.History[0].MessageID != req.Message.MessageID || task.History[0].Role != a2a.RoleUser {
			t.Errorf("history = %+v", task.History)
		}
		reply := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, send03("message"))
		if reply.Message == nil || reply.Message.Text() != "echo: message" || reply.Message.Role != a2a.RoleAgent {
			t.Errorf("reply = %+v", reply)
		}
	})

	t.Run("Stream", func(t *testing.T) {
		frames, finals := c.stream(t, a2a.MethodSendStreamingMessage, send03("stream me"))
		want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
		if diff := cmp.Diff(want, kinds(frames)); diff != "" {
			t.Fatalf("frames (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]bool{false, false, false, true}, finals); diff != "" {
			t.Errorf("final flags (-want +got):\n%s", diff)
		}
		if got := a2a.PartsText(frames[2].ArtifactUpdate.Artifact.Parts); got != "echo: stream me" || !frames[2].ArtifactUpdate.LastChunk {
			t.Errorf("artifact update = %+v", frames[2].ArtifactUpdate)
		}
		// A v1 reader ends the same stream at the same frame.
		for i, f := range frames {
			if f.Final() != finals[i] {
				t.Errorf("frame %d: v1 Final %v, 0.3 final %v", i, f.Final(), finals[i])
			}
		}
	})

	t.Run("InputRequired", func(t *testing.T) {
		asked := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, send03("ask")).Task
		if asked == nil || asked.Status.State != a2a.TaskStateInputRequired || asked.Status.Message.Text() != "what number?" {
			t.Fatalf("asked = %+v", asked)
		}
		answer := send03("42")
		answer.Message.TaskID, answer.Message.ContextID = asked.ID, asked.ContextID
		done := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, answer).Task
		if done == nil || done.Status.State != a2a.TaskStateCompleted || a2a.PartsText(done.Artifacts[len(done.Artifacts)-1].Parts) != "answer: 42" {
			t.Errorf("answered = %+v", done)
		}
		frames, finals := c.stream(t, a2a.MethodSendStreamingMessage, send03("ask"))
		if diff := cmp.Diff([]string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_INPUT_REQUIRED"}, kinds(frames)); diff != "" {
			t.Errorf("frames (-want +got):\n%s", diff)
		}
		if len(finals) != 2 || !finals[1] {
			t.Errorf("final flags %v: input-required is final", finals)
		}
	})

	t.Run("GetCancelResubscribe", func(t *testing.T) {
		done := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, send03("one")).Task
		got := call03[a2a.Task](t, c, a2a.MethodGetTask, &a2a.GetTaskRequest{ID: done.ID, HistoryLength: int32p(1)})
		if got.ID != done.ID || len(got.History) != 1 || got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("GetTask = id %q state %v, %d history", got.ID, got.Status.State, len(got.History))
		}

		slow := send03("slow")
		slow.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true} // blocking: false
		live := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, slow).Task
		if live == nil || live.Status.State.Terminal() {
			t.Fatalf("blocking false = %+v, want a live task", live)
		}
		method, params, _ := a2av03.EncodeRequest(a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: live.ID})
		s := c.raw.open(t, method, params)
		canceled := call03[a2a.Task](t, c, a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: live.ID})
		if canceled.Status.State != a2a.TaskStateCanceled {
			t.Errorf("cancel state %v", canceled.Status.State)
		}
		var last *a2a.StreamResponse
		for {
			r, err := s.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || r.Error != nil {
				t.Fatalf("resubscribe: %v %+v", err, r)
			}
			v, err := a2av03.DecodeResult(a2a.MethodSubscribeToTask, r.Result)
			if err != nil {
				t.Fatal(err)
			}
			last = v.(*a2a.StreamResponse)
		}
		if last == nil || kind(last) != "status:TASK_STATE_CANCELED" {
			t.Errorf("resubscribe ended with %v", last)
		}
	})

	t.Run("PushConfigs", func(t *testing.T) {
		task := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, send03("hello")).Task
		// Without an id, 0.3 servers use the task's id; our conversion
		// asks for that id explicitly, so both agree.
		in := &a2a.TaskPushNotificationConfig{TaskID: task.ID, URL: "https://hooks.example.com/a2a", Token: "tok-1",
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}
		created := call03[a2a.TaskPushNotificationConfig](t, c, a2a.MethodCreateTaskPushNotificationConfig, in)
		want := *in
		want.ID = task.ID
		if diff := cmp.Diff(want, *created); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		second := call03[a2a.TaskPushNotificationConfig](t, c, a2a.MethodCreateTaskPushNotificationConfig,
			&a2a.TaskPushNotificationConfig{TaskID: task.ID, ID: "cfg-2", URL: "https://hooks.example.com/two"})
		got := call03[a2a.TaskPushNotificationConfig](t, c, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: task.ID, ID: second.ID})
		if got.URL != "https://hooks.example.com/two" || got.ID != "cfg-2" {
			t.Errorf("get = %+v", got)
		}
		list := call03[a2a.ListTaskPushNotificationConfigsResponse](t, c, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: task.ID})
		if len(list.Configs) != 2 {
			t.Errorf("list = %+v", list)
		}
		// 0.3's get by task id alone: DecodeRequest on a server maps it to
		// the config whose id is the task's; the 0.3 server does the same.
		r := c.raw.call(t, a2av03.MethodGetPushConfig, map[string]string{"id": task.ID})
		byTask, err := a2av03.DecodeResult(a2a.MethodGetTaskPushNotificationConfig, r.Result)
		if err != nil || byTask.(*a2a.TaskPushNotificationConfig).ID != task.ID {
			t.Errorf("get by task = %v, %v (error %+v)", byTask, err, r.Error)
		}
		method, params, _ := a2av03.EncodeRequest(a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: task.ID, ID: created.ID})
		del := c.raw.call(t, method, params)
		if del.Error != nil || string(del.Result) != "null" {
			t.Errorf("delete = result %s error %+v", del.Result, del.Error)
		}
	})

	// Parts go out in their 0.3 form (a data value that is not an object
	// wrapped and marked) and come back from the agent verbatim; read back
	// they are the v1 parts sent.
	t.Run("Parts", func(t *testing.T) {
		arr, _ := a2a.DataPart([]any{1.0, "two"})
		str, _ := a2a.DataPart("plain")
		obj, _ := a2a.DataPart(map[string]any{"k": "v"})
		parts := []a2a.Part{
			{Kind: a2a.PartText, Text: "hi", Metadata: map[string]any{"m": "1"}},
			a2a.RawPart([]byte("raw bytes\x00\xff"), "b.bin", "application/octet-stream"),
			a2a.URLPart("https://files.example.com/a.pdf", "a.pdf", "application/pdf"),
			arr, str, obj,
		}
		for i := range parts {
			if parts[i].Kind == a2a.PartData {
				parts[i].MediaType = "" // a data part's media type has no 0.3 form
			}
		}
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, append([]a2a.Part{a2a.TextPart(partsCommand)}, parts...)...)}
		task := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, req).Task
		if task == nil || len(task.Artifacts) != 1 {
			t.Fatalf("task = %+v", task)
		}
		if diff := cmp.Diff(parts, task.Artifacts[0].Parts); diff != "" {
			t.Errorf("parts back (-want +got):\n%s", diff)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		done := call03[a2a.SendMessageResponse](t, c, a2a.MethodSendMessage, send03("hello")).Task
		followUp := send03("more")
		followUp.Message.TaskID, followUp.Message.ContextID = done.ID, done.ContextID
		tests := []struct {
			name     string
			method   string
			req      any
			wantCode int
		}{
			{"unknown task", a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "no-such-task"}, a2a.CodeTaskNotFound},
			{"cancel unknown task", a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: "no-such-task"}, a2a.CodeTaskNotFound},
			{"cancel completed task", a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: done.ID}, a2a.CodeTaskNotCancelable},
			// a2a-js 0.3 answers -32600 invalid request where v1 says -32004.
			{"message to terminal task", a2a.MethodSendMessage, followUp, a2a.CodeInvalidRequest},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, e := c.call(t, tc.method, tc.req)
				if e == nil || e.Code != tc.wantCode {
					t.Errorf("error %+v, want code %d", e, tc.wantCode)
				}
			})
		}
		// A v1 method name is not a 0.3 method.
		wantError(t, c.raw.call(t, a2a.MethodGetTask, a2a.GetTaskRequest{ID: done.ID}), a2a.CodeMethodNotFound)
		// ListTasks has no 0.3 JSON-RPC method: refused before the wire.
		if _, _, err := a2av03.EncodeRequest(a2a.MethodListTasks, &a2a.ListTasksRequest{}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("ListTasks: %v", err)
		}
	})
}
