package a2av03_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

var ts = time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)

func dataPart(t *testing.T, v any) a2a.Part {
	t.Helper()
	p, err := a2a.DataPart(v)
	if err != nil {
		t.Fatal(err)
	}
	p.MediaType = "" // 0.3 has no media type for data
	return p
}

// v1Frames are v1 values that survive v1 → 0.3 → v1 unchanged: they use
// nothing 0.3 lacks.
func v1Frames(t *testing.T) map[string]*a2a.StreamResponse {
	msg := &a2a.Message{
		MessageID: "m-1", ContextID: "c-1", TaskID: "t-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			{Kind: a2a.PartText, Text: "hi", Metadata: map[string]any{"k": "v"}},
			a2a.RawPart([]byte{0, 1, 2, 250}, "a.bin", "application/octet-stream"),
			a2a.URLPart("https://example.com/a.pdf", "a.pdf", "application/pdf"),
			a2a.RawPart([]byte{}, "", ""),
			dataPart(t, map[string]any{"n": 1.5}),
			dataPart(t, []any{"x", 2.0}),
			dataPart(t, "just a string"),
			{Kind: a2a.PartData, Data: json.RawMessage("null"), Metadata: map[string]any{"keep": true}},
		},
		Metadata: map[string]any{"m": 1.0}, Extensions: []string{"https://ext.example/1"}, ReferenceTaskIDs: []string{"t-0"},
	}
	task := &a2a.Task{
		ID: "t-1", ContextID: "c-1",
		Status:    a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: ts, Message: &a2a.Message{MessageID: "m-2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("on it")}}},
		Artifacts: []a2a.Artifact{{ArtifactID: "a-1", Name: "out", Description: "d", Parts: []a2a.Part{a2a.TextPart("x")}, Metadata: map[string]any{"a": "b"}, Extensions: []string{"e"}}},
		History:   []a2a.Message{*msg},
		Metadata:  map[string]any{"t": "u"},
	}
	frames := map[string]*a2a.StreamResponse{
		"task":     {Task: task},
		"message":  {Message: msg},
		"artifact": {ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t-1", ContextID: "c-1", Artifact: task.Artifacts[0], Append: true, LastChunk: true, Metadata: map[string]any{"i": 1.0}}},
	}
	for _, s := range []a2a.TaskState{
		a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled,
		a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired, a2a.TaskStateUnspecified,
	} {
		frames["status "+s.String()] = &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: s, Timestamp: ts}}}
	}
	return frames
}

// TestFramesRoundTrip sends each v1 frame the way a server answers a 0.3
// client (EncodeResult) and reads it back the way our client reads a 0.3
// agent (DecodeResult): nothing may change.
func TestFramesRoundTrip(t *testing.T) {
	for name, frame := range v1Frames(t) {
		t.Run(name, func(t *testing.T) {
			wire, err := a2av03.EncodeResult(frame)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a2av03.DecodeResult(a2a.MethodSendStreamingMessage, wire)
			if err != nil {
				t.Fatalf("%v; wire %s", err, wire)
			}
			if diff := cmp.Diff(frame, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s\nwire %s", diff, wire)
			}
		})
	}
}

// TestFinal: a status update is final for a 0.3 client exactly when a v1
// stream would end at it.
func TestFinal(t *testing.T) {
	want := map[a2a.TaskState]bool{
		a2a.TaskStateSubmitted: false, a2a.TaskStateWorking: false, a2a.TaskStateUnspecified: false,
		a2a.TaskStateCompleted: true, a2a.TaskStateFailed: true, a2a.TaskStateCanceled: true, a2a.TaskStateRejected: true,
		a2a.TaskStateInputRequired: true, a2a.TaskStateAuthRequired: true,
	}
	for state, final := range want {
		ev, err := a2av03.EventFromV1(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: state}}})
		if err != nil {
			t.Fatal(err)
		}
		if ev.StatusUpdate.Final != final {
			t.Errorf("%v: final = %v, want %v", state, ev.StatusUpdate.Final, final)
		}
	}
}

// TestWire pins the 0.3 JSON of each shape.
func TestWire(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"text part", &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}},
			`{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"kind":"message"}`},
		{"file parts", &a2a.StreamResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.RawPart([]byte("hi"), "h.txt", "text/plain"), a2a.URLPart("https://x/y", "", "")}}},
			`{"messageId":"m","role":"agent","parts":[{"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"h.txt"}},{"kind":"file","file":{"uri":"https://x/y"}}],"kind":"message"}`},
		{"data parts", &a2a.SendMessageResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{dataPart(t, map[string]any{"a": 1}), dataPart(t, 7)}}},
			`{"messageId":"m","role":"agent","parts":[{"kind":"data","data":{"a":1}},{"kind":"data","data":{"value":7},"metadata":{"data_part_compat":true}}],"kind":"message"}`},
		{"task", &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Timestamp: ts}},
			`{"id":"t","contextId":"c","status":{"state":"input-required","timestamp":"2026-03-04T05:06:07.891Z"},"kind":"task"}`},
		{"status update", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateUnspecified}}},
			`{"taskId":"t","contextId":"c","status":{"state":"unknown"},"final":false,"kind":"status-update"}`},
		{"artifact update", &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a"}}},
			`{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[]},"kind":"artifact-update"}`},
		{"push config", &a2a.TaskPushNotificationConfig{Tenant: "dropped", ID: "p", TaskID: "t", URL: "https://h", Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer"}},
			`{"taskId":"t","pushNotificationConfig":{"id":"p","url":"https://h","authentication":{"schemes":["Bearer"]}}}`},
		{"push config list", &a2a.ListTaskPushNotificationConfigsResponse{},
			`[]`},
		{"delete", nil, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a2av03.EncodeResult(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestRequests reads each 0.3 method's params as the v1 request, and
// writes that request back as a client would.
func TestRequests(t *testing.T) {
	f := false
	tests := []struct {
		method    string
		params    string
		want      any
		wantAgain string // params EncodeRequest writes; "" means params itself
	}{
		{a2av03.MethodSendMessage,
			`{"message":{"kind":"message","messageId":"m","taskId":"t","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false,"historyLength":3,"acceptedOutputModes":["text/plain"],"pushNotificationConfig":{"url":"https://h","token":"k"}},"metadata":{"x":1}}`,
			&a2a.SendMessageRequest{
				Message: &a2a.Message{MessageID: "m", TaskID: "t", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}},
				Configuration: &a2a.SendMessageConfiguration{
					AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(int32(3)), ReturnImmediately: true,
					TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{TaskID: "t", ID: "t", URL: "https://h", Token: "k"},
				},
				Metadata: map[string]any{"x": 1.0},
			},
			`{"message":{"messageId":"m","taskId":"t","role":"user","parts":[{"kind":"text","text":"hi"}],"kind":"message"},"configuration":{"acceptedOutputModes":["text/plain"],"blocking":false,"historyLength":3,"pushNotificationConfig":{"id":"t","url":"https://h","token":"k"}},"metadata":{"x":1}}`},
		{a2av03.MethodStreamMessage, `{"message":{"messageId":"m","role":"agent","parts":[]},"configuration":{}}`,
			&a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{}}, Configuration: &a2a.SendMessageConfiguration{}},
			`{"message":{"messageId":"m","role":"agent","parts":[],"kind":"message"},"configuration":{"blocking":true}}`},
		{a2av03.MethodGetTask, `{"id":"t","historyLength":0}`, &a2a.GetTaskRequest{ID: "t", HistoryLength: ptr(int32(0))}, ""},
		{a2av03.MethodCancelTask, `{"id":"t","metadata":{"why":"x"}}`, &a2a.CancelTaskRequest{ID: "t", Metadata: map[string]any{"why": "x"}}, ""},
		{a2av03.MethodResubscribe, `{"id":"t"}`, &a2a.SubscribeToTaskRequest{ID: "t"}, ""},
		{a2av03.MethodSetPushConfig, `{"taskId":"t","pushNotificationConfig":{"id":"p","url":"https://h"}}`,
			&a2a.TaskPushNotificationConfig{TaskID: "t", ID: "p", URL: "https://h"}, ""},
		{a2av03.MethodGetPushConfig, `{"id":"t","pushNotificationConfigId":"p"}`, &a2a.GetTaskPushNotificationConfigRequest{TaskID: "t", ID: "p"}, ""},
		{a2av03.MethodGetPushConfig, `{"id":"t"}`, &a2a.GetTaskPushNotificationConfigRequest{TaskID: "t", ID: "t"}, `{"id":"t","pushNotificationConfigId":"t"}`},
		{a2av03.MethodListPushConfigs, `{"id":"t"}`, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: "t"}, ""},
		{a2av03.MethodDeletePushConfig, `{"id":"t","pushNotificationConfigId":"p"}`, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: "t", ID: "p"}, ""},
		{a2av03.MethodGetAuthenticatedExtendedCard, ``, &a2a.GetExtendedAgentCardRequest{}, "null"},
	}
	_ = f
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			v1Method, req, e := a2av03.DecodeRequest(tc.method, json.RawMessage(tc.params))
			if e != nil {
				t.Fatal(e)
			}
			if want, _ := a2av03.V1Method(tc.method); v1Method != want {
				t.Errorf("v1 method %s, want %s", v1Method, want)
			}
			if diff := cmp.Diff(tc.want, req); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			m, params, err := a2av03.EncodeRequest(v1Method, req)
			if err != nil {
				t.Fatal(err)
			}
			if m != tc.method {
				t.Errorf("method again %s", m)
			}
			again, _ := json.Marshal(params)
			want := tc.wantAgain
			if want == "" {
				want = tc.params
			}
			if string(again) != want {
				t.Errorf("params again %s\nwant         %s", again, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestRefused: what a 0.3 reader must not accept, and the error a server
// answers it with.
func TestRefused(t *testing.T) {
	tests := []struct {
		name, method, params string
		code                 int
		wantIn               string
	}{
		{"unknown method", "tasks/list", `{}`, a2a.CodeMethodNotFound, "tasks/list"},
		{"v1 name", a2a.MethodSendMessage, `{}`, a2a.CodeMethodNotFound, "SendMessage"},
		{"duplicate key", a2av03.MethodGetTask, `{"id":"a","id":"b"}`, a2a.CodeInvalidParams, `duplicate key "id"`},
		{"duplicate key in metadata", a2av03.MethodGetTask, `{"id":"a","metadata":{"x":1,"x":2}}`, a2a.CodeInvalidParams, `duplicate key "x" in metadata`},
		{"duplicate kind", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","kind":"file","text":"x"}]}}`, a2a.CodeInvalidParams, `duplicate key "kind"`},
		{"part kind missing", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"text":"x"}]}}`, a2a.CodeInvalidParams, `message.parts[0]`},
		{"part kind unknown", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"image","text":"x"}]}}`, a2a.CodeInvalidParams, `got "image"`},
		{"case variant is not the kind", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"KIND":"text","text":"x"}]}}`, a2a.CodeInvalidParams, `got ""`},
		{"text missing", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"text"}]}}`, a2a.CodeInvalidParams, `without "text"`},
		{"file with both", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"","uri":"u"}}]}}`, a2a.CodeInvalidParams, `exactly one`},
		{"file with neither", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"name":"n"}}]}}`, a2a.CodeInvalidParams, `exactly one`},
		{"bad base64", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"**"}}]}}`, a2a.CodeInvalidParams, `not base64`},
		{"data missing", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":[{"kind":"data"}]}}`, a2a.CodeInvalidParams, `without "data"`},
		{"wrong kind for message", a2av03.MethodSendMessage, `{"message":{"kind":"task","messageId":"m","role":"user","parts":[]}}`, a2a.CodeInvalidParams, `kind "task" where "message" belongs`},
		{"message missing", a2av03.MethodSendMessage, `{}`, a2a.CodeInvalidParams, `"message" is required`},
		{"parts not an array", a2av03.MethodSendMessage, `{"message":{"messageId":"m","role":"user","parts":{}}}`, a2a.CodeInvalidParams, `message.parts: want an array, got object`},
		{"id not a string", a2av03.MethodGetTask, `{"id":7}`, a2a.CodeInvalidParams, `id: want string`},
		{"params not an object", a2av03.MethodGetTask, `[1]`, a2a.CodeInvalidParams, `want an object`},
		{"malformed", a2av03.MethodGetTask, `{"id":`, a2a.CodeInvalidParams, `malformed JSON`},
		{"delete without config id", a2av03.MethodDeletePushConfig, `{"id":"t"}`, a2a.CodeInvalidParams, `pushNotificationConfigId`},
		{"card params malformed", a2av03.MethodGetAuthenticatedExtendedCard, `{"a":1,"a":2}`, a2a.CodeInvalidParams, `duplicate key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, req, e := a2av03.DecodeRequest(tc.method, json.RawMessage(tc.params))
			if e == nil {
				t.Fatalf("accepted: %+v", req)
			}
			if e.Code != tc.code || !strings.Contains(e.Message, tc.wantIn) {
				t.Errorf("error %d %q, want %d containing %q", e.Code, e.Message, tc.code, tc.wantIn)
			}
		})
	}
}

// TestTolerated: what a 0.3 reader accepts although a strict schema
// reading would not.
func TestTolerated(t *testing.T) {
	var e a2av03.Event
	// Unknown members and a case variant of a known one are ignored; a
	// naive timestamp is UTC; an unknown state reads as unspecified.
	in := `{"kind":"task","id":"t","contextId":"c","Status":{"state":"done"},"status":{"state":"mystery","timestamp":"2025-04-02T16:59:25.331844"},"extra":{"a":[1]}}`
	if err := a2av03.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	r, err := e.V1()
	if err != nil {
		t.Fatal(err)
	}
	want := a2a.TaskStatus{State: a2a.TaskStateUnspecified, Timestamp: time.Date(2025, 4, 2, 16, 59, 25, 331844000, time.UTC)}
	if diff := cmp.Diff(want, r.Task.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	// A message where the position says message needs no kind.
	var p a2av03.MessageSendParams
	if err := a2av03.Unmarshal([]byte(`{"message":{"messageId":"m","role":"user","parts":[]}}`), &p); err != nil {
		t.Fatal(err)
	}
	// URL-safe and unpadded base64.
	for _, b64 := range []string{"_-8", "_-8=", "/+8="} {
		part := a2av03.Part{Kind: a2av03.KindFile, File: &a2av03.File{Bytes: &b64}}
		v1, err := part.V1()
		if err != nil || string(v1.Raw) != "\xff\xef" {
			t.Errorf("%q: %q, %v", b64, v1.Raw, err)
		}
	}
}

func TestEventNeedsKind(t *testing.T) {
	for _, in := range []string{`{}`, `{"kind":"file"}`, `{"id":"t","status":{"state":"completed"}}`, `[]`, `null`} {
		var e a2av03.Event
		err := a2av03.Unmarshal([]byte(in), &e)
		if err == nil && in != "null" {
			t.Errorf("%s: accepted %+v", in, e)
		}
		if in == "null" {
			if _, err := e.V1(); err == nil {
				t.Errorf("null event converted")
			}
		}
	}
	var e a2av03.Event
	if _, err := a2av03.DecodeResult(a2a.MethodSendMessage, json.RawMessage(`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}`)); err == nil {
		t.Errorf("message/send answered with a status update was accepted")
	}
	_ = e
}

func TestResultErrors(t *testing.T) {
	if _, err := a2av03.EncodeResult(&a2a.ListTasksResponse{}); err == nil {
		t.Error("ListTasksResponse encoded")
	}
	if _, err := a2av03.EncodeResult(&a2a.SendMessageResponse{}); err == nil {
		t.Error("empty SendMessageResponse encoded")
	}
	_, _, err := a2av03.EncodeRequest(a2a.MethodListTasks, &a2a.ListTasksRequest{})
	if !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("ListTasks: %v, want UnsupportedOperation", err)
	}
	if _, _, err := a2av03.EncodeRequest(a2a.MethodGetTask, &a2a.CancelTaskRequest{}); err == nil {
		t.Error("GetTask with a CancelTaskRequest encoded")
	}
	if _, err := a2av03.DecodeResult(a2a.MethodGetTask, json.RawMessage(`{"kind":"task","id":"t","status":{"state":"working","timestamp":"yesterday"}}`)); err == nil || !strings.Contains(err.Error(), "status.timestamp") {
		t.Errorf("bad timestamp: %v", err)
	}
}

func TestMethods(t *testing.T) {
	v1s := map[string]bool{}
	for _, m := range []string{
		a2av03.MethodSendMessage, a2av03.MethodStreamMessage, a2av03.MethodGetTask, a2av03.MethodCancelTask,
		a2av03.MethodResubscribe, a2av03.MethodSetPushConfig, a2av03.MethodGetPushConfig, a2av03.MethodListPushConfigs,
		a2av03.MethodDeletePushConfig, a2av03.MethodGetAuthenticatedExtendedCard,
	} {
		v1, ok := a2av03.V1Method(m)
		if !ok {
			t.Fatalf("%s has no v1 method", m)
		}
		back, ok := a2av03.MethodFromV1(v1)
		if !ok || back != m {
			t.Errorf("%s -> %s -> %s", m, v1, back)
		}
		if _, isV03 := a2av03.V1Method(v1); isV03 {
			t.Errorf("v1 name %s taken as a 0.3 method", v1)
		}
		if a2av03.Streaming(m) != (v1 == a2a.MethodSendStreamingMessage || v1 == a2a.MethodSubscribeToTask) {
			t.Errorf("Streaming(%s) wrong", m)
		}
		v1s[v1] = true
	}
	if len(v1s) != 10 {
		t.Errorf("%d distinct v1 methods, want 10", len(v1s))
	}
	if _, ok := a2av03.MethodFromV1(a2a.MethodListTasks); ok {
		t.Error("ListTasks has a 0.3 name")
	}
}
