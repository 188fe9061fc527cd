package a2aclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2av03"
)

// wire03 records what reaches an agent: the JSON-RPC method and the
// version headers of each call.
type wire03 struct {
	mu    sync.Mutex
	calls []call03
}

type call03 struct {
	Method, Version, Extensions, ExtensionsV03 string
}

func (w *wire03) methods() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.calls {
		out = append(out, c.Method)
	}
	return out
}

func (w *wire03) last() call03 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[len(w.calls)-1]
}

// newAgent03 is the scripted a2asrv agent published as an A2A 0.3 agent:
// its well-known path serves a 0.3 card (as a2a-js 0.3 does: url,
// preferredTransport, no supportedInterfaces) and a2asrv answers the 0.3
// methods on its JSON-RPC URL.
func newAgent03(t *testing.T) (*agent, *wire03) {
	w := &wire03{}
	var url string
	a := newAgent(t, &agentOptions{push: true, extended: true, wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == a2a.WellKnownCardPath {
				rw.Header().Set("Content-Type", "application/json")
				io.WriteString(rw, `{"protocolVersion":"0.3.0","name":"scripted 0.3","description":"d","version":"1",
"url":"`+url+`","preferredTransport":"JSONRPC","capabilities":{"streaming":true,"pushNotifications":true},
"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[],"supportsAuthenticatedExtendedCard":true}`)
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var env struct{ Method string }
			_ = json.Unmarshal(body, &env)
			w.mu.Lock()
			w.calls = append(w.calls, call03{env.Method, r.Header.Get(a2a.HeaderVersion), r.Header.Get(a2a.HeaderExtensions), r.Header.Get("X-A2A-Extensions")})
			w.mu.Unlock()
			h.ServeHTTP(rw, r)
		})
	}})
	url = a.srv.URL
	return a, w
}

// TestV03Methods calls every method of an A2A 0.3 agent found through its
// 0.3 card, and checks the 0.3 wire: method names, no A2A-Version,
// extensions in X-A2A-Extensions.
func TestV03Methods(t *testing.T) {
	a, w := newAgent03(t)
	ctx := t.Context()
	c, err := a2aclient.NewFromURL(ctx, a.srv.URL, nil)
	must(t, err)
	if c.URL() != a.srv.URL || c.Binding() != a2a.BindingJSONRPC || c.Card().SupportedInterfaces[0].ProtocolVersion != "0.3.0" {
		t.Fatalf("client url %s binding %s card %+v", c.URL(), c.Binding(), c.Card().SupportedInterfaces)
	}

	r, err := c.SendMessage(ctx, msgReq("m-1", "hello"), a2aclient.WithExtensions("https://example.com/ext/trace/v1"))
	must(t, err)
	if r.Task == nil || r.Task.Status.State != a2a.TaskStateCompleted || a2a.PartsText(r.Task.Artifacts[0].Parts) != "hello" {
		t.Fatalf("SendMessage = %+v", r)
	}
	if got, want := w.last(), (call03{"message/send", "", "", "https://example.com/ext/trace/v1"}); got != want {
		t.Errorf("wire: %+v, want %+v", got, want)
	}
	r2, err := c.SendMessage(ctx, msgReq("m-2", "reply hi"))
	must(t, err)
	if r2.Message == nil || r2.Message.Text() != "You said: hi" || r2.Message.Role != a2a.RoleAgent {
		t.Fatalf("SendMessage reply = %+v", r2)
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.Task.ID})
	must(t, err)
	if d := cmp.Diff(r.Task, got); d != "" {
		t.Errorf("GetTask (-send +get):\n%s", d)
	}

	slow, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msgReq("m-3", "slow").Message, Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	must(t, err)
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: slow.Task.ID})
	must(t, err)
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask state = %v", canceled.Status.State)
	}

	frames, err := collect(t, c.SendStreamingMessage(ctx, msgReq("m-4", "steps 2")))
	must(t, err)
	if got, want := frameKinds(frames), "task artifact artifact status:TASK_STATE_COMPLETED "; got != want {
		t.Errorf("SendStreamingMessage frames = %q, want %q", got, want)
	}

	held, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msgReq("m-5", "hold 1").Message, Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	must(t, err)
	var kinds []string
	for f, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: held.Task.ID}) {
		must(t, err)
		if f.Task != nil {
			close(a.release)
		}
		kinds = append(kinds, frameKinds([]*a2a.StreamResponse{f}))
	}
	if len(kinds) < 2 || kinds[0] != "task " || kinds[len(kinds)-1] != "status:TASK_STATE_COMPLETED " {
		t.Errorf("SubscribeToTask frames = %v", kinds)
	}

	ask, err := c.SendMessage(ctx, msgReq("m-6", "ask"))
	must(t, err)
	// 0.3 gives a config set without an id the task's id.
	cfg, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: ask.Task.ID, URL: "https://hooks.example.com/x"})
	must(t, err)
	if cfg.ID != ask.Task.ID || cfg.TaskID != ask.Task.ID || cfg.URL != "https://hooks.example.com/x" {
		t.Errorf("created config = %+v", cfg)
	}
	g, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: ask.Task.ID, ID: cfg.ID})
	must(t, err)
	if d := cmp.Diff(cfg, g); d != "" {
		t.Errorf("got config (-created +got):\n%s", d)
	}
	ls, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: ask.Task.ID})
	must(t, err)
	if len(ls.Configs) != 1 || ls.Configs[0].URL != cfg.URL {
		t.Errorf("listed configs %+v", ls.Configs)
	}
	must(t, c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: ask.Task.ID, ID: cfg.ID}))
	ls, err = c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: ask.Task.ID})
	must(t, err)
	if len(ls.Configs) != 0 {
		t.Errorf("configs after delete: %+v", ls.Configs)
	}
	ext, err := c.GetExtendedAgentCard(ctx)
	must(t, err)
	if ext.Description != "Extended card" || len(ext.SupportedInterfaces) == 0 {
		t.Errorf("extended card = %+v", ext)
	}
	done, err := c.SendText(ctx, "the red one", ask.Task.ID, ask.Task.ContextID)
	must(t, err)
	if done.Task.Status.State != a2a.TaskStateCompleted || done.Task.Status.Message.Text() != "answer: the red one" {
		t.Errorf("follow-up = %+v", done.Task.Status)
	}

	want := []string{
		"message/send", "message/send", "tasks/get", "message/send", "tasks/cancel", "message/stream",
		"message/send", "tasks/resubscribe", "message/send", "tasks/pushNotificationConfig/set",
		"tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
		"tasks/pushNotificationConfig/list", "agent/getAuthenticatedExtendedCard", "message/send",
	}
	if d := cmp.Diff(want, w.methods()); d != "" {
		t.Errorf("0.3 methods on the wire (-want +got):\n%s", d)
	}
	for _, call := range w.calls {
		if call.Version != "" || call.Extensions != "" {
			t.Errorf("%s sent A2A-Version %q, A2A-Extensions %q; 0.3 has neither", call.Method, call.Version, call.Extensions)
		}
	}

	t.Run("ListTasks is refused without a request", func(t *testing.T) {
		n := len(w.methods())
		_, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
		var e *a2a.Error
		if !errors.Is(err, a2a.ErrUnsupportedOperation) || !errors.As(err, &e) || !strings.Contains(err.Error(), "0.3") {
			t.Errorf("ListTasks: %v, want UnsupportedOperation naming 0.3", err)
		}
		if len(w.methods()) != n {
			t.Errorf("ListTasks sent a request: %v", w.methods()[n:])
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "nope"})
		var ce *a2aclient.CallError
		if !errors.As(err, &ce) || !errors.Is(err, a2a.ErrTaskNotFound) || ce.Method != a2a.MethodGetTask {
			t.Errorf("GetTask of an unknown task: %v", err)
		}
		if err := onlyError(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "nope"})); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("SubscribeToTask of an unknown task: %v", err)
		}
		if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: r.Task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
			t.Errorf("CancelTask of a completed task: %v", err)
		}
	})
}

// TestV03Answers reads 0.3 answers a real server does not give: each
// result shape, and each way an answer can be wrong.
func TestV03Answers(t *testing.T) {
	task := `{"kind":"task","id":"t","contextId":"c","status":{"state":"completed","timestamp":"2025-04-02T16:59:25.331844"}}`
	rpc := func(result string) string { return `{"jsonrpc":"2.0","id":1,"result":` + result + `}` }
	for _, tc := range []struct {
		name   string
		answer string
		call   func(*a2aclient.Client) (any, error)
		want   any   // the result, when no error
		err    error // errors.Is target
	}{
		{"send: a task", rpc(task), send03, &a2a.SendMessageResponse{Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: mustTime(t, "2025-04-02T16:59:25.331844Z")}}}, nil},
		{"send: a message", rpc(`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"data","data":{"value":[1]},"metadata":{"data_part_compat":true}}]}`), send03,
			&a2a.SendMessageResponse{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`[1]`)}}}}, nil},
		{"send: no kind", rpc(`{"id":"t","contextId":"c","status":{"state":"completed"}}`), send03, nil, a2aclient.ErrInvalidResponse},
		{"send: a v1 result", rpc(`{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`), send03, nil, a2aclient.ErrInvalidResponse},
		{"send: null result", rpc(`null`), send03, nil, a2aclient.ErrInvalidResponse},
		{"send: repeated key", rpc(`{"kind":"message","kind":"task","messageId":"m","role":"agent","parts":[]}`), send03, nil, a2aclient.ErrInvalidResponse},
		{"send: an error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}`, send03, nil, a2a.ErrTaskNotFound},
		{"get: a message", rpc(`{"kind":"message","messageId":"m","role":"agent","parts":[]}`), get03, nil, a2aclient.ErrInvalidResponse},
		{"get: a bad timestamp", rpc(strings.Replace(task, "2025-04-02T16:59:25.331844", "yesterday", 1)), get03, nil, a2aclient.ErrInvalidResponse},
		{"list configs: a bare array", rpc(`[{"taskId":"t","pushNotificationConfig":{"id":"p","url":"https://h/x"}}]`), listConfigs03,
			&a2a.ListTaskPushNotificationConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{{TaskID: "t", ID: "p", URL: "https://h/x"}}}, nil},
		{"list configs: an object", rpc(`{"configs":[]}`), listConfigs03, nil, a2aclient.ErrInvalidResponse},
		{"delete: null", rpc(`null`), delete03, nil, nil},
		{"delete: no result member", `{"jsonrpc":"2.0","id":1}`, delete03, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			c := client03(t, srv.URL)
			got, err := tc.call(c)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			must(t, err)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

func client03(t *testing.T, url string) *a2aclient.Client {
	t.Helper()
	c, err := a2aclient.New(&a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3"}}}, &a2aclient.Options{ResumeAttempts: -1})
	must(t, err)
	return c
}

func send03(c *a2aclient.Client) (any, error) {
	return c.SendMessage(context.Background(), msgReq("m", "x"))
}

func get03(c *a2aclient.Client) (any, error) {
	return c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: "t"})
}

func listConfigs03(c *a2aclient.Client) (any, error) {
	return c.ListTaskPushNotificationConfigs(context.Background(), &a2a.ListTaskPushNotificationConfigsRequest{TaskID: "t"})
}

func delete03(c *a2aclient.Client) (any, error) {
	return nil, c.DeleteTaskPushNotificationConfig(context.Background(), &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: "t", ID: "p"})
}

// TestV03Streams reads 0.3 stream answers: frames as SSE events, a
// refusal as one JSON body, and a frame that is not 0.3.
func TestV03Streams(t *testing.T) {
	ev := func(result string) string {
		return "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":" + result + "}\n\n"
	}
	for _, tc := range []struct {
		name, ct, body string
		kinds          string
		err            error
	}{
		{"frames", "text/event-stream", ev(`{"kind":"task","id":"t","contextId":"c","status":{"state":"submitted"}}`) +
			ev(`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}}`) +
			ev(`{"kind":"status-update","taskId":"t","contextId":"c","final":true,"status":{"state":"completed"}}`),
			"task artifact status:TASK_STATE_COMPLETED ", nil},
		{"a message ends it", "text/event-stream", ev(`{"kind":"message","messageId":"m","role":"agent","parts":[]}`), "message ", nil},
		{"an error frame", "text/event-stream", ev(`{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}`) +
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32004,\"message\":\"no\"}}\n\n", "task ", a2a.ErrUnsupportedOperation},
		{"a v1 frame", "text/event-stream", ev(`{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`), "", a2aclient.ErrInvalidResponse},
		{"a refusal as JSON", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}`, "", a2a.ErrTaskNotFound},
		{"a whole answer as JSON", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","role":"agent","parts":[]}}`, "message ", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var method string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var env struct{ Method string }
				_ = json.NewDecoder(r.Body).Decode(&env)
				method = env.Method
				w.Header().Set("Content-Type", tc.ct)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			frames, err := collect(t, client03(t, srv.URL).SendStreamingMessage(t.Context(), msgReq("m", "x")))
			if method != "message/stream" {
				t.Errorf("method %q, want message/stream", method)
			}
			if got := frameKinds(frames); got != tc.kinds {
				t.Errorf("frames %q, want %q", got, tc.kinds)
			}
			if tc.err == nil {
				must(t, err)
			} else if !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// TestV03CardSelection: a 0.3 JSON-RPC interface is called only when the
// card offers no 1.x interface of a binding the client would take.
func TestV03CardSelection(t *testing.T) {
	rpc03 := a2a.AgentInterface{URL: "http://x/rpc03", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"}
	rpc1 := a2a.AgentInterface{URL: "http://x/rpc1", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}
	rest1 := a2a.AgentInterface{URL: "http://x/rest1", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0"}
	rest03 := a2a.AgentInterface{URL: "http://x/rest03", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "0.3.0"}
	rpc02 := a2a.AgentInterface{URL: "http://x/rpc02", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.2.5"}
	for _, tc := range []struct {
		name       string
		ifaces     []a2a.AgentInterface
		transports []string
		want       string // URL, or "" for ErrNoInterface
	}{
		{"only 0.3", []a2a.AgentInterface{rpc03}, nil, rpc03.URL},
		{"v1 JSON-RPC after 0.3", []a2a.AgentInterface{rpc03, rpc1}, nil, rpc1.URL},
		{"v1 HTTP+JSON beats 0.3 JSON-RPC", []a2a.AgentInterface{rpc03, rest1}, nil, rest1.URL},
		{"0.3 JSON-RPC beats an unwanted binding", []a2a.AgentInterface{rest1, rpc03}, []string{a2a.BindingJSONRPC}, rpc03.URL},
		{"v1 of a later binding beats 0.3", []a2a.AgentInterface{rpc03, rest1}, []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}, rest1.URL},
		{"0.3 HTTP+JSON is not spoken", []a2a.AgentInterface{rest03, rpc03}, []string{a2a.BindingHTTPJSON, a2a.BindingJSONRPC}, rpc03.URL},
		{"only 0.3 HTTP+JSON", []a2a.AgentInterface{rest03}, nil, ""},
		{"0.2 is not spoken", []a2a.AgentInterface{rpc02}, nil, ""},
		{"bare 0.3", []a2a.AgentInterface{{URL: "http://x/bare", ProtocolBinding: "jsonrpc", ProtocolVersion: "0.3"}}, nil, "http://x/bare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			card := &a2a.AgentCard{Name: "x", SupportedInterfaces: tc.ifaces}
			c, err := a2aclient.New(card, &a2aclient.Options{Transports: tc.transports})
			if tc.want == "" {
				if !errors.Is(err, a2aclient.ErrNoInterface) || !strings.Contains(err.Error(), "or 0.3 over JSONRPC") {
					t.Fatalf("err = %v, want ErrNoInterface", err)
				}
				return
			}
			must(t, err)
			if c.URL() != tc.want {
				t.Errorf("selected %s, want %s", c.URL(), tc.want)
			}
			in, err := a2aclient.SelectInterface(card, tc.transports...)
			if len(tc.transports) > 0 && (err != nil || in.URL != tc.want) {
				t.Errorf("SelectInterface = %+v, %v; want %s", in, err, tc.want)
			}
		})
	}
}

// TestV03Cards: ParseCard reads a 0.3 card as v1 interfaces stating 0.3,
// and a hybrid card (v1 and 0.3 members) as the v1 card.
func TestV03Cards(t *testing.T) {
	card03 := `{"protocolVersion":"0.3.0","name":"old","description":"d","version":"1","url":"http://x/a",
"preferredTransport":"JSONRPC","additionalInterfaces":[{"url":"http://x/a","transport":"JSONRPC"},{"url":"http://x/g","transport":"GRPC"}],
"capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"skills":[]}`
	v1 := &a2a.AgentCard{Name: "new", Description: "d", Version: "1", SupportedInterfaces: []a2a.AgentInterface{
		{URL: "http://x/v1", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
		{URL: "http://x/v03", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3"},
	}}
	hybrid, err := a2av03.HybridCard(v1)
	must(t, err)
	for _, tc := range []struct {
		name, body string
		want       []a2a.AgentInterface
		selected   string
	}{
		{"0.3", card03, []a2a.AgentInterface{
			{URL: "http://x/a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"},
			{URL: "http://x/g", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "0.3.0"},
		}, "http://x/a"},
		{"0.3 without preferredTransport or protocolVersion", `{"name":"old","url":"http://x/a"}`, []a2a.AgentInterface{
			{URL: "http://x/a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"},
		}, "http://x/a"},
		{"hybrid", string(hybrid), v1.SupportedInterfaces, "http://x/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			card, err := a2aclient.ParseCard([]byte(tc.body))
			must(t, err)
			if d := cmp.Diff(tc.want, card.SupportedInterfaces); d != "" {
				t.Errorf("interfaces (-want +got):\n%s", d)
			}
			in, err := a2aclient.SelectInterface(card)
			must(t, err)
			if in.URL != tc.selected {
				t.Errorf("selected %s, want %s", in.URL, tc.selected)
			}
		})
	}
	for _, body := range []string{
		`{"name":"old"}`,
		`{"name":"old","url":"http://x/a","additionalInterfaces":{}}`,
		`{"name":"old","url":"http://x/a","url":"http://evil/"}`,
		`{"name":"","url":"http://x/a"}`,
	} {
		if _, err := a2aclient.ParseCard([]byte(body)); !errors.Is(err, a2aclient.ErrInvalidResponse) {
			t.Errorf("ParseCard(%s) = %v, want ErrInvalidResponse", body, err)
		}
	}
}

func mustTime(t *testing.T, v string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, v)
	must(t, err)
	return ts
}
