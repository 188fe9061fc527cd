package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	goa2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	goa2asrv "github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"novaos.dev/novaos/a2a"
)

// Part (b): a2a-go v2.3.1's own JSON-RPC server, read on the wire with our
// decoder. These tests check that our wire model understands what the Go
// reference SDK emits, and record where that SDK departs from the spec.

// goPeerExecutor is the a2a-go agent behind the peer server, behaving like
// echoExecutor: "message" answers with a message, "slow" works until
// cancelled, "ask" waits for input, a leading "parts" text part returns the
// other parts as an artifact, anything else is echoed as an artifact and
// completes.
type goPeerExecutor struct{}

func (goPeerExecutor) Execute(ctx context.Context, ec *goa2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		if ps := ec.Message.Parts; len(ps) > 1 && ps[0].Text() == partsCommand {
			if ec.StoredTask == nil {
				if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
					return
				}
			}
			if !yield(goa2a.NewArtifactEvent(ec, ps[1:]...), nil) {
				return
			}
			yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil), nil)
			return
		}
		text := goPeerText(ec.Message)
		if st := ec.StoredTask; st != nil && st.Status.State == goa2a.TaskStateInputRequired {
			if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("answer: "+text)), nil) {
				return
			}
			yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil), nil)
			return
		}
		if text == "ask" {
			if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			q := goa2a.NewMessageForTask(goa2a.MessageRoleAgent, ec, goa2a.NewTextPart("what number?"))
			yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateInputRequired, q), nil)
			return
		}
		if text == "message" {
			yield(goa2a.NewMessage(goa2a.MessageRoleAgent, goa2a.NewTextPart("echo: message")), nil)
			return
		}
		if ec.StoredTask == nil {
			if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateWorking, nil), nil) {
			return
		}
		if text == "slow" {
			<-ctx.Done()
			return
		}
		if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		done := goa2a.NewMessageForTask(goa2a.MessageRoleAgent, ec, goa2a.NewTextPart("done"))
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, done), nil)
	}
}

func (goPeerExecutor) Cancel(_ context.Context, ec *goa2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

func goPeerText(m *goa2a.Message) string {
	if m == nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range m.Parts {
		sb.WriteString(p.Text())
	}
	return sb.String()
}

// bearerUser makes any bearer token an authenticated a2a-go user named after
// the token; a2a-go's task store refuses ListTasks without one.
type bearerUser struct {
	goa2asrv.PassthroughCallInterceptor
}

func (bearerUser) Before(ctx context.Context, cc *goa2asrv.CallContext, _ *goa2asrv.Request) (context.Context, any, error) {
	if v, ok := cc.ServiceParams().Get("authorization"); ok && len(v) > 0 {
		if name, ok := strings.CutPrefix(v[0], "Bearer "); ok && name != "" {
			cc.User = goa2asrv.NewAuthenticatedUser(name, nil)
		}
	}
	return ctx, nil, nil
}

// startGoPeer serves a2a-go's JSON-RPC handler at / and its card at the
// well-known path.
func startGoPeer(t *testing.T) *httptest.Server {
	t.Helper()
	return startGoServer(t, false)
}

// startGoServer is startGoPeer; with rest, the same request handler is
// also served over HTTP+JSON at /rest (NewRESTHandler), and at /tenants
// with a /{tenant} prefix (NewTenantRESTHandler), and the card lists the
// /rest interface first.
func startGoServer(t *testing.T, rest bool) *httptest.Server {
	t.Helper()
	h := goa2asrv.NewHandler(goPeerExecutor{},
		goa2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)),
		goa2asrv.WithCallInterceptors(bearerUser{}),
		goa2asrv.WithLogger(slog.New(slog.DiscardHandler)),
	)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &goa2a.AgentCard{
		Name:        "a2a-go peer",
		Description: "a2a-go v2.3.1 reference server",
		Version:     "1.0.0",
		SupportedInterfaces: []*goa2a.AgentInterface{
			goa2a.NewAgentInterface(srv.URL, goa2a.TransportProtocolJSONRPC),
		},
		Capabilities:       goa2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []goa2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}},
	}
	if rest {
		card.SupportedInterfaces = append([]*goa2a.AgentInterface{goa2a.NewAgentInterface(srv.URL+"/rest", goa2a.TransportProtocolHTTPJSON)}, card.SupportedInterfaces...)
		mux.Handle("/rest/", http.StripPrefix("/rest", goa2asrv.NewRESTHandler(h)))
		mux.Handle("/tenants/", http.StripPrefix("/tenants", goa2asrv.NewTenantRESTHandler("/{*}", h)))
	}
	// a2a-go's gRPC handler on a listener of its own, last in the card.
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	goa2agrpc.NewHandler(h).RegisterWith(g)
	go g.Serve(gl)
	t.Cleanup(g.Stop)
	card.SupportedInterfaces = append(card.SupportedInterfaces, goa2a.NewAgentInterface(gl.Addr().String(), goa2a.TransportProtocolGRPC))
	mux.Handle(goa2asrv.WellKnownAgentCardPath, goa2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", goa2asrv.NewJSONRPCHandler(h))
	return srv
}

func TestGoServer_AgentCard(t *testing.T) {
	srv := startGoPeer(t)
	resp, err := http.Get(srv.URL + a2a.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var card a2a.AgentCard
	if err := a2a.Unmarshal(body, &card); err != nil {
		t.Fatalf("decode card: %v; body %s", err, body)
	}
	want := []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}}
	if len(card.SupportedInterfaces) == 2 && card.SupportedInterfaces[1].ProtocolBinding == a2a.BindingGRPC {
		want = append(want, card.SupportedInterfaces[1]) // its gRPC listener's address varies
	}
	if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
		t.Errorf("supportedInterfaces (-want +got):\n%s", diff)
	}
	if card.Capabilities.Streaming == nil || !*card.Capabilities.Streaming {
		t.Errorf("capabilities.streaming = %v, want true", card.Capabilities.Streaming)
	}
	if card.Name != "a2a-go peer" || len(card.Skills) != 1 || card.Skills[0].ID != "echo" {
		t.Errorf("card = %+v", card)
	}
}

func TestGoServer_SendMessage(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	tests := []struct {
		name      string
		text      string
		wantTask  bool
		wantState a2a.TaskState
		wantText  string
	}{
		{name: "task with artifact", text: "hello", wantTask: true, wantState: a2a.TaskStateCompleted, wantText: "echo: hello"},
		{name: "direct message", text: "message", wantText: "echo: message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := userMessage(tc.text)
			res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: msg}))
			if (res.Task != nil) != tc.wantTask || (res.Message != nil) == tc.wantTask {
				t.Fatalf("result = %+v, want task=%v", res, tc.wantTask)
			}
			if !tc.wantTask {
				if res.Message.Role != a2a.RoleAgent || res.Message.Text() != tc.wantText {
					t.Errorf("message = %+v", res.Message)
				}
				return
			}
			task := res.Task
			if task.Status.State != tc.wantState || task.ID == "" || task.ContextID == "" {
				t.Errorf("task status %v id %q context %q", task.Status.State, task.ID, task.ContextID)
			}
			if task.Status.Timestamp.IsZero() {
				t.Error("status timestamp missing")
			}
			if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != tc.wantText {
				t.Errorf("artifacts = %+v", task.Artifacts)
			}
			if len(task.History) == 0 || task.History[0].MessageID != msg.MessageID || task.History[0].Role != a2a.RoleUser {
				t.Errorf("history = %+v, want the user message first", task.History)
			}
		})
	}
}

func TestGoServer_SendStreamingMessage(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	s := c.open(t, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: userMessage("stream me")})
	evs := s.rest()
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("frames (-want +got):\n%s", diff)
	}
	taskID := evs[0].Task.ID
	for i, ev := range evs {
		if ev.TaskID() != taskID {
			t.Errorf("frame %d task id %q, want %q", i, ev.TaskID(), taskID)
		}
	}
	if got := a2a.PartsText(evs[2].ArtifactUpdate.Artifact.Parts); got != "echo: stream me" {
		t.Errorf("artifact text %q", got)
	}
	if !evs[3].Final() {
		t.Error("last frame is not final")
	}
	if evs[3].StatusUpdate.ContextID != evs[0].Task.ContextID {
		t.Errorf("status contextId %q, want %q", evs[3].StatusUpdate.ContextID, evs[0].Task.ContextID)
	}
}

func TestGoServer_StreamMessageOnly(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	evs := c.open(t, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: userMessage("message")}).rest()
	if diff := cmp.Diff([]string{"message"}, kinds(evs)); diff != "" {
		t.Fatalf("frames (-want +got):\n%s", diff)
	}
}

func TestGoServer_GetTask(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	sent := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")}))
	tests := []struct {
		name        string
		history     *int32
		wantHistory int
	}{
		// a2a-go keeps the final status message in status only, so the
		// default history is just the user's message.
		{name: "default history", wantHistory: 1},
		{name: "history 0", history: int32p(0), wantHistory: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeResult[a2a.Task](t, c.call(t, a2a.MethodGetTask, a2a.GetTaskRequest{ID: sent.Task.ID, HistoryLength: tc.history}))
			if got.ID != sent.Task.ID || got.Status.State != a2a.TaskStateCompleted {
				t.Errorf("task %q state %v", got.ID, got.Status.State)
			}
			if len(got.History) != tc.wantHistory {
				t.Errorf("history has %d messages, want %d", len(got.History), tc.wantHistory)
			}
		})
	}
}

func TestGoServer_ListTasks(t *testing.T) {
	srv := startGoPeer(t)
	c := newRawClient(srv.URL).withHeader("Authorization", "Bearer alice")
	ctxID := a2a.NewID()
	for _, text := range []string{"one", "two"} {
		m := userMessage(text)
		m.ContextID = ctxID
		decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: m}))
	}
	got := decodeResult[a2a.ListTasksResponse](t, c.call(t, a2a.MethodListTasks, a2a.ListTasksRequest{ContextID: ctxID, IncludeArtifacts: true}))
	if len(got.Tasks) != 2 || got.TotalSize != 2 || got.NextPageToken != "" {
		t.Fatalf("list = %d tasks, total %d, next %q", len(got.Tasks), got.TotalSize, got.NextPageToken)
	}
	if !got.Tasks[1].Status.Timestamp.Before(got.Tasks[0].Status.Timestamp) && !got.Tasks[1].Status.Timestamp.Equal(got.Tasks[0].Status.Timestamp) {
		t.Errorf("tasks not sorted by status timestamp descending")
	}
	for _, task := range got.Tasks {
		if len(task.Artifacts) != 1 {
			t.Errorf("task %s: %d artifacts with includeArtifacts", task.ID, len(task.Artifacts))
		}
	}
}

// Deviation: a2a-go answers ListTasks from an unauthenticated caller with
// its own code -31401 UNAUTHENTICATED. The spec only requires results to be
// scoped to the caller; our server lists the anonymous scope's tasks.
func TestGoServer_Deviation_ListTasksUnauthenticated(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	e := wantError(t, c.call(t, a2a.MethodListTasks, a2a.ListTasksRequest{}), -31401)
	if r := errorInfoReason(e); r != "UNAUTHENTICATED" {
		t.Errorf("ErrorInfo reason %q", r)
	}
}

func TestGoServer_CancelTask(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{
		Message:       userMessage("slow"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	}))
	if res.Task == nil || res.Task.Status.State.Terminal() {
		t.Fatalf("returnImmediately result = %+v, want a live task", res)
	}
	got := decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
	if got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel state %v", got.Status.State)
	}
	// A repeated cancel is idempotent (the spec allows it): the canceled
	// task again.
	again := decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
	if again.Status.State != a2a.TaskStateCanceled {
		t.Errorf("second cancel state %v", again.Status.State)
	}
}

func TestGoServer_CancelCompletedTask(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	task := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
	e := wantError(t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: task.ID}), a2a.CodeTaskNotCancelable)
	if r := errorInfoReason(e); r != "TASK_NOT_CANCELABLE" {
		t.Errorf("ErrorInfo reason %q", r)
	}
}

func TestGoServer_SubscribeToTask(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{
		Message:       userMessage("slow"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	}))
	s := c.open(t, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: res.Task.ID})
	first := s.nextEvent()
	if first.Task == nil || first.Task.ID != res.Task.ID {
		t.Fatalf("first frame %s, want the task snapshot", kind(first))
	}
	decodeResult[a2a.Task](t, c.call(t, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: res.Task.ID}))
	evs := s.rest()
	if len(evs) == 0 || kind(evs[len(evs)-1]) != "status:TASK_STATE_CANCELED" {
		t.Fatalf("frames after cancel %v, want a final canceled status", kinds(evs))
	}
}

func TestGoServer_PushConfigs(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	task := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
	in := a2a.TaskPushNotificationConfig{
		TaskID:         task.ID,
		URL:            "https://hooks.example.com/a2a",
		Token:          "tok-1",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"},
	}
	created := decodeResult[a2a.TaskPushNotificationConfig](t, c.call(t, a2a.MethodCreateTaskPushNotificationConfig, in))
	if created.ID == "" {
		t.Fatal("created config has no id")
	}
	want := in
	want.ID = created.ID
	if diff := cmp.Diff(want, *created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	got := decodeResult[a2a.TaskPushNotificationConfig](t, c.call(t, a2a.MethodGetTaskPushNotificationConfig, a2a.GetTaskPushNotificationConfigRequest{TaskID: task.ID, ID: created.ID}))
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	list := decodeResult[a2a.ListTaskPushNotificationConfigsResponse](t, c.call(t, a2a.MethodListTaskPushNotificationConfigs, a2a.ListTaskPushNotificationConfigsRequest{TaskID: task.ID}))
	if len(list.Configs) != 1 || list.Configs[0].ID != created.ID {
		t.Errorf("list = %+v", list)
	}
	// Deviation: a2a-go answers a successful delete with neither result
	// nor error ({"jsonrpc":"2.0","id":n}); JSON-RPC 2.0 requires a result
	// member (the spec's Empty is "result": null or {}).
	body, _ := c.callRaw(t, a2a.MethodDeleteTaskPushNotificationConfig, a2a.DeleteTaskPushNotificationConfigRequest{TaskID: task.ID, ID: created.ID})
	var envelope map[string]json.RawMessage
	if err := json.Unmarshal(body, &envelope); err != nil {
		t.Fatalf("delete body %s: %v", body, err)
	}
	if _, hasResult := envelope["result"]; hasResult || envelope["error"] != nil {
		t.Errorf("delete body %s: the peer used to omit result", body)
	}
	// Our wire model reads the omission tolerantly, as result null.
	if r, err := a2a.DecodeResponse(body); err != nil || r.Error != nil || string(r.Result) != "null" {
		t.Errorf("DecodeResponse(%s) = %+v, %v; want result null", body, r, err)
	}
	list = decodeResult[a2a.ListTaskPushNotificationConfigsResponse](t, c.call(t, a2a.MethodListTaskPushNotificationConfigs, a2a.ListTaskPushNotificationConfigsRequest{TaskID: task.ID}))
	if len(list.Configs) != 0 {
		t.Errorf("list after delete = %+v", list.Configs)
	}
}

func TestGoServer_Errors(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	tests := []struct {
		name       string
		method     string
		params     any
		wantCode   int
		wantReason string
	}{
		{name: "unknown task", method: a2a.MethodGetTask, params: a2a.GetTaskRequest{ID: "no-such-task"}, wantCode: a2a.CodeTaskNotFound, wantReason: "TASK_NOT_FOUND"},
		{name: "cancel unknown task", method: a2a.MethodCancelTask, params: a2a.CancelTaskRequest{ID: "no-such-task"}, wantCode: a2a.CodeTaskNotFound, wantReason: "TASK_NOT_FOUND"},
		{name: "v0.3 method name", method: "message/send", params: map[string]any{}, wantCode: a2a.CodeMethodNotFound, wantReason: "METHOD_NOT_FOUND"},
		{name: "message to unknown task", method: a2a.MethodSendMessage, params: a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m1", TaskID: "no-such-task", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}, wantCode: a2a.CodeTaskNotFound, wantReason: "TASK_NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := wantError(t, c.call(t, tc.method, tc.params), tc.wantCode)
			if r := errorInfoReason(e); r != tc.wantReason {
				t.Errorf("ErrorInfo reason %q, want %q (data %s)", r, tc.wantReason, e.Data)
			}
		})
	}
}

// Deviation: a2a-go answers a message to a terminal task with -32602
// invalid params; the spec (and our server) say -32004 unsupported
// operation.
func TestGoServer_Deviation_SendToTerminalTaskInvalidParams(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	task := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
	m := userMessage("again")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	wantError(t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: m}), a2a.CodeInvalidParams)
}

// Deviation: a2a-go answers SubscribeToTask on a terminal task with an SSE
// stream instead of the spec's -32004 unsupported operation (which a2a-js
// and our server send before opening a stream). What the stream holds
// depends on whether the finished execution has been torn down yet: the
// error -32001 "task not found: no active execution", the completed task
// snapshot, or the snapshot followed by that error.
func TestGoServer_Deviation_SubscribeTerminalTask(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	task := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})).Task
	s := c.open(t, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: task.ID})
	var frames []string
	for {
		r, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Error != nil {
			frames = append(frames, fmt.Sprintf("error:%d", r.Error.Code))
			continue
		}
		frames = append(frames, kind(decodeResult[a2a.StreamResponse](t, r)))
	}
	allowed := [][]string{
		{"error:-32001"},
		{"task:TASK_STATE_COMPLETED"},
		{"task:TASK_STATE_COMPLETED", "error:-32001"},
	}
	for _, want := range allowed {
		if cmp.Equal(want, frames) {
			return
		}
	}
	t.Errorf("frames %v, want one of %v", frames, allowed)
}

// Deviation: a2a-go does not check A2A-Version: a request without it (which
// the spec says means 0.3) or with an unknown version is served.
func TestGoServer_Deviation_VersionNotChecked(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	for _, v := range []string{"", "0.5"} {
		r := c.withHeader("A2A-Version", v).call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("message")})
		if r.Error != nil {
			t.Errorf("A2A-Version %q: error %d, the peer used to accept it", v, r.Error.Code)
		}
	}
}

// The raw decoder must also see the result shape SendMessage uses: exactly
// one member.
func TestGoServer_SendMessageResultShape(t *testing.T) {
	c := newRawClient(startGoPeer(t).URL)
	r := c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("hello")})
	var members map[string]json.RawMessage
	if err := json.Unmarshal(r.Result, &members); err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members["task"] == nil {
		t.Errorf("result members %v, want only task", keys(members))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
