package interop

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// The @a2a-js/sdk 0.3.14 client (js/client03.mjs) runs one scenario against
// a server; its report holds 0.3 wire JSON, read here with a2av03.
// TestJSClient03Reference runs it against the 0.3 reference server
// (js/server03.mjs), which pins the scenario; jsclient03_ours_test.go runs
// it against our server once that answers 0.3 (build tag v03server).

// terminalSendCode and friends are where the peers may answer
// differently, each as A2A says for its version.
type client03Expect struct {
	// sendToTerminal is the code of message/send on a completed task:
	// v1 says -32004; a2a-js 0.3 answers -32600.
	sendToTerminal int
	// resubscribeTerminal is the code of tasks/resubscribe on a completed
	// task, 0 when the server streams the task instead (a2a-js 0.3).
	resubscribeTerminal int
}

// decode03 reads a 0.3 result as the result of the v1 method.
func decode03[T any](t *testing.T, s *jsStep, v1Method string) *T {
	t.Helper()
	if !s.OK {
		t.Fatalf("step %s failed: %+v", s.Name, s.Error)
	}
	v, err := a2av03.DecodeResult(v1Method, s.Result)
	if err != nil {
		t.Fatalf("step %s: %v; result %s", s.Name, err, s.Result)
	}
	out, ok := v.(*T)
	if !ok {
		t.Fatalf("step %s: %T", s.Name, v)
	}
	return out
}

// frames03 reads a streamed step's events as v1 frames, with their final
// flags.
func frames03(t *testing.T, s *jsStep) (frames []*a2a.StreamResponse, finals []bool) {
	t.Helper()
	if !s.OK {
		t.Fatalf("step %s failed: %+v", s.Name, s.Error)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(s.Result, &events); err != nil {
		t.Fatalf("step %s: %v", s.Name, err)
	}
	for _, ev := range events {
		v, err := a2av03.DecodeResult(a2a.MethodSendStreamingMessage, ev)
		if err != nil {
			t.Fatalf("step %s: event %s: %v", s.Name, ev, err)
		}
		frames = append(frames, v.(*a2a.StreamResponse))
		var f struct {
			Final bool `json:"final"`
		}
		json.Unmarshal(ev, &f)
		finals = append(finals, f.Final)
	}
	return frames, finals
}

func checkClient03Report(t *testing.T, rep *jsReport, want client03Expect) {
	t.Run("CardAndTransport", func(t *testing.T) {
		// The client found a 0.3 JSON-RPC endpoint through the card.
		s := rep.step(t, "createFromUrl")
		if !s.OK {
			t.Fatalf("createFromUrl: %+v", s.Error)
		}
		var got struct {
			Card json.RawMessage `json:"card"`
		}
		if err := json.Unmarshal(s.Result, &got); err != nil {
			t.Fatal(err)
		}
		card, err := a2av03.ParseCard(got.Card)
		if err != nil || len(card.SupportedInterfaces) == 0 {
			t.Fatalf("card %s: %v", got.Card, err)
		}
	})
	t.Run("SendMessage", func(t *testing.T) {
		task := decode03[a2a.SendMessageResponse](t, rep.step(t, "sendMessage"), a2a.MethodSendMessage).Task
		if task == nil || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "echo: hello" {
			t.Errorf("task = %+v", task)
		}
		reply := decode03[a2a.SendMessageResponse](t, rep.step(t, "sendMessageReply"), a2a.MethodSendMessage)
		if reply.Message == nil || reply.Message.Text() != "echo: message" || reply.Message.Role != a2a.RoleAgent {
			t.Errorf("reply = %+v", reply)
		}
	})
	t.Run("Stream", func(t *testing.T) {
		frames, finals := frames03(t, rep.step(t, "sendMessageStream"))
		if len(frames) < 3 || frames[0].Task == nil || kind(frames[len(frames)-1]) != "status:TASK_STATE_COMPLETED" {
			t.Fatalf("frames %v", kinds(frames))
		}
		for i, f := range frames {
			if f.TaskID() != frames[0].Task.ID {
				t.Errorf("frame %d is about task %q", i, f.TaskID())
			}
			if f.StatusUpdate != nil && finals[i] != f.Final() {
				t.Errorf("frame %d (%s): final %v", i, kind(f), finals[i])
			}
		}
	})
	t.Run("GetTask", func(t *testing.T) {
		task := decode03[a2a.Task](t, rep.step(t, "getTask"), a2a.MethodGetTask)
		if task.Status.State != a2a.TaskStateCompleted || len(task.History) != 1 {
			t.Errorf("task %v with %d history", task.Status.State, len(task.History))
		}
		if code := rep.step(t, "getUnknownTask").errCode(t); code != a2a.CodeTaskNotFound {
			t.Errorf("unknown task: %d", code)
		}
	})
	t.Run("Terminal", func(t *testing.T) {
		if code := rep.step(t, "cancelCompletedTask").errCode(t); code != a2a.CodeTaskNotCancelable {
			t.Errorf("cancel completed: %d", code)
		}
		if code := rep.step(t, "sendToTerminalTask").errCode(t); code != want.sendToTerminal {
			t.Errorf("send to terminal: %d, want %d", code, want.sendToTerminal)
		}
		s := rep.step(t, "resubscribeTerminalTask")
		if want.resubscribeTerminal != 0 {
			if code := s.errCode(t); code != want.resubscribeTerminal {
				t.Errorf("resubscribe terminal: %d, want %d", code, want.resubscribeTerminal)
			}
		} else if frames, _ := frames03(t, s); len(frames) != 1 || frames[0].Task == nil {
			t.Errorf("resubscribe terminal: %v", kinds(frames))
		}
	})
	t.Run("PushConfigs", func(t *testing.T) {
		set := decode03[a2a.TaskPushNotificationConfig](t, rep.step(t, "setPushConfig"), a2a.MethodCreateTaskPushNotificationConfig)
		if set.URL != "https://hooks.example.com/a2a" || set.Token != "tok-03" || set.Authentication == nil || set.Authentication.Scheme != "Bearer" {
			t.Errorf("set = %+v", set)
		}
		byTask := decode03[a2a.TaskPushNotificationConfig](t, rep.step(t, "getPushConfigByTask"), a2a.MethodGetTaskPushNotificationConfig)
		if byTask.URL != set.URL {
			t.Errorf("get by task = %+v", byTask)
		}
		got := decode03[a2a.TaskPushNotificationConfig](t, rep.step(t, "getPushConfig"), a2a.MethodGetTaskPushNotificationConfig)
		if got.ID != "cfg-2" || got.URL != "https://hooks.example.com/two" {
			t.Errorf("get = %+v", got)
		}
		list := decode03[a2a.ListTaskPushNotificationConfigsResponse](t, rep.step(t, "listPushConfigs"), a2a.MethodListTaskPushNotificationConfigs)
		if len(list.Configs) != 2 {
			t.Errorf("list = %+v", list)
		}
		if s := rep.step(t, "deletePushConfig"); !s.OK {
			t.Errorf("delete: %+v", s.Error)
		}
	})
	t.Run("InputRequired", func(t *testing.T) {
		asked := decode03[a2a.SendMessageResponse](t, rep.step(t, "askInput"), a2a.MethodSendMessage).Task
		if asked == nil || asked.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("asked = %+v", asked)
		}
		done := decode03[a2a.SendMessageResponse](t, rep.step(t, "answerInput"), a2a.MethodSendMessage).Task
		if done == nil || done.Status.State != a2a.TaskStateCompleted || done.ID != asked.ID {
			t.Errorf("answered = %+v", done)
		}
		// The stream ends at the interruption: with a final status update
		// (the a2a-js 0.3 server), or, when the agent asks at its first
		// write, with the task itself already in that state (ours: the
		// first frame of a task stream is the whole task).
		frames, finals := frames03(t, rep.step(t, "askInputStream"))
		if len(frames) == 0 {
			t.Fatal("no frames")
		}
		switch last := kind(frames[len(frames)-1]); {
		case last == "status:TASK_STATE_INPUT_REQUIRED" && finals[len(finals)-1]:
		case last == "task:TASK_STATE_INPUT_REQUIRED" && len(frames) == 1:
		default:
			t.Errorf("frames %v finals %v", kinds(frames), finals)
		}
	})
	t.Run("Parts", func(t *testing.T) {
		task := decode03[a2a.SendMessageResponse](t, rep.step(t, "sendParts"), a2a.MethodSendMessage).Task
		if task == nil || len(task.Artifacts) != 1 {
			t.Fatalf("task = %+v", task)
		}
		wantParts := []a2a.Part{
			{Kind: a2a.PartText, Text: "hi", Metadata: map[string]any{"m": "1"}},
			{Kind: a2a.PartRaw, Raw: []byte("hello"), MediaType: "text/plain", Filename: "h.txt"},
			{Kind: a2a.PartURL, URL: "https://files.example.com/a.pdf", MediaType: "application/pdf"},
			{Kind: a2a.PartData, Data: json.RawMessage(`{"k":"v","n":[1,2]}`)},
		}
		if diff := cmp.Diff(wantParts, task.Artifacts[0].Parts, rawJSONValue); diff != "" {
			t.Errorf("parts (-want +got):\n%s", diff)
		}
	})
	t.Run("ResubscribeAndCancel", func(t *testing.T) {
		slow := decode03[a2a.SendMessageResponse](t, rep.step(t, "sendSlowNonBlocking"), a2a.MethodSendMessage).Task
		if slow == nil || slow.Status.State.Terminal() {
			t.Fatalf("blocking false = %+v", slow)
		}
		s := rep.step(t, "resubscribeAndCancel")
		var got struct {
			Events   []json.RawMessage `json:"events"`
			Canceled json.RawMessage   `json:"canceled"`
		}
		if !s.OK || json.Unmarshal(s.Result, &got) != nil {
			t.Fatalf("step: %+v %s", s.Error, s.Result)
		}
		ev, _ := json.Marshal(got.Events)
		frames, _ := frames03(t, &jsStep{Name: s.Name, OK: true, Result: ev})
		if len(frames) == 0 || frames[0].Task == nil || kind(frames[len(frames)-1]) != "status:TASK_STATE_CANCELED" {
			t.Errorf("frames %v", kinds(frames))
		}
		canceled, err := a2av03.DecodeResult(a2a.MethodCancelTask, got.Canceled)
		if err != nil || canceled.(*a2a.Task).Status.State != a2a.TaskStateCanceled {
			t.Errorf("canceled = %v, %v", canceled, err)
		}
	})
}

// rawJSONValue compares raw JSON by value, not spelling.
var rawJSONValue = cmp.Transformer("json", func(r json.RawMessage) any {
	var v any
	if err := json.Unmarshal(r, &v); err != nil {
		return string(r)
	}
	return v
})

func TestJSClient03Reference(t *testing.T) {
	js03Peer(t)
	url := startNodeServer(t, "server03.mjs")
	rep := runNodeClient(t, "client03.mjs", url)
	checkClient03Report(t, rep, client03Expect{sendToTerminal: a2a.CodeInvalidRequest})
}
