package interop

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"

	"novaos.dev/novaos/a2a"
	ours "novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/secret"
)

// Our client (a2a/a2aclient) against the two reference servers: a2a-go
// v2.3.1's handler in-process and the @a2a-js/sdk 1.3.0 Express server
// (js/server.mjs), over JSON-RPC and over HTTP+JSON. One scenario covers
// card discovery, send (task and message answers), stream, get, list,
// cancel, subscribe, input-required, push configs and the error mapping;
// the peers' deviations it meets are asserted where they occur (see
// README.md, "Our client").

// goAuth: a2a-go refuses ListTasks without an authenticated user (D4);
// its test interceptor makes any bearer token one.
var goAuth = ours.Bearer(secret.New("alice"))

var restOnly = []string{a2a.BindingHTTPJSON}

func TestOurClient_GoServer(t *testing.T) {
	runOurClient(t, startGoPeer(t).URL, &ours.Options{Auth: goAuth})
}

func TestOurClient_JSServer(t *testing.T) {
	runOurClient(t, startJSPeer(t), nil)
}

func TestOurClientREST_GoServer(t *testing.T) {
	runOurClient(t, startGoServer(t, true).URL, &ours.Options{Auth: goAuth, Transports: restOnly})
}

// Our client over gRPC (a2a/a2agrpc/grpcclient) against a2a-go's gRPC
// handler.
func TestOurClientGRPC_GoServer(t *testing.T) {
	runOurClient(t, startGoPeer(t).URL, &ours.Options{Auth: goAuth, Transports: []string{a2a.BindingGRPC},
		TransportFactories: map[string]ours.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}})
}

func TestOurClientREST_JSServer(t *testing.T) {
	runOurClient(t, startJSServer(t, "rest"), &ours.Options{Transports: restOnly})
}

// Both peers' cards list HTTP+JSON first, then JSON-RPC: with no
// preference our client takes the card's first interface; a preference
// for JSON-RPC picks the card's second.
func TestOurClient_InterfaceSelection(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"a2a-go", func(t *testing.T) string { return startGoServer(t, true).URL }},
		{"a2a-js", func(t *testing.T) string { return startJSServer(t, "rest") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			base := tc.url(t)
			for _, want := range []struct {
				transports []string
				binding    string
				url        string
			}{
				{nil, a2a.BindingHTTPJSON, base + "/rest"},
				{[]string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}, a2a.BindingJSONRPC, base},
			} {
				c, err := ours.NewFromURL(ctx, base, &ours.Options{Transports: want.transports})
				if err != nil {
					t.Fatal(err)
				}
				if c.Binding() != want.binding || c.URL() != want.url {
					t.Errorf("preference %v: %s at %s, want %s at %s", want.transports, c.Binding(), c.URL(), want.binding, want.url)
				}
				r, err := c.SendText(ctx, "hello", "", "")
				if err != nil || r.Task == nil || r.Task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("%s: send = %+v, %v", want.binding, r, err)
				}
			}
		})
	}
}

// The /{tenant} prefix: a2a-go's tenant handler serves nothing without
// it, a2a-js routes both forms.
func TestOurClientREST_TenantPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
		auth ours.AuthProvider
	}{
		{"a2a-go", func(t *testing.T) string { return startGoServer(t, true).URL + "/tenants" }, goAuth},
		{"a2a-js", func(t *testing.T) string { return startJSServer(t, "rest") + "/rest" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := ours.NewForURL(tc.url(t), &ours.Options{Transports: restOnly, Tenant: "acme", Auth: tc.auth})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.SendText(ctx, "hello", "", "")
			if err != nil || r.Task == nil {
				t.Fatalf("send: %+v, %v", r, err)
			}
			if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.Task.ID}); err != nil || got.ID != r.Task.ID {
				t.Errorf("get: %+v, %v", got, err)
			}
			ks, _, err := streamKinds(t, c.SendStreamingMessage(ctx, ours.TextRequest("stream me", "", "")))
			if err != nil || ks[len(ks)-1] != "status:TASK_STATE_COMPLETED" {
				t.Errorf("stream: %v, %v", ks, err)
			}
		})
	}
}

func streamKinds(t *testing.T, seq func(func(*a2a.StreamResponse, error) bool)) ([]string, []*a2a.StreamResponse, error) {
	t.Helper()
	var ks []string
	var fs []*a2a.StreamResponse
	for f, err := range seq {
		if err != nil {
			return ks, fs, err
		}
		ks = append(ks, kind(f))
		fs = append(fs, f)
	}
	return ks, fs, nil
}

func runOurClient(t *testing.T, baseURL string, opts *ours.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	o := ours.Options{Timeout: 10 * time.Second, ResumeAttempts: -1}
	if opts != nil {
		o.Auth, o.Transports, o.TransportFactories = opts.Auth, opts.Transports, opts.TransportFactories
	}
	c, err := ours.NewFromURL(ctx, baseURL, &o)
	if err != nil {
		t.Fatalf("NewFromURL: %v", err)
	}
	if len(o.Transports) > 0 && c.Binding() != o.Transports[0] {
		t.Fatalf("binding %s at %s, want %s", c.Binding(), c.URL(), o.Transports[0])
	}
	if c.Card().Capabilities.Streaming == nil || !*c.Card().Capabilities.Streaming {
		t.Fatalf("card = %+v", c.Card())
	}

	var done *a2a.Task
	t.Run("SendMessage", func(t *testing.T) {
		r, err := c.SendText(ctx, "hello", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Task == nil || r.Task.Status.State != a2a.TaskStateCompleted || len(r.Task.Artifacts) != 1 || a2a.PartsText(r.Task.Artifacts[0].Parts) != "echo: hello" {
			t.Fatalf("task = %+v", r.Task)
		}
		done = r.Task
		m, err := c.SendText(ctx, "message", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if m.Message == nil || m.Message.Text() != "echo: message" {
			t.Errorf("message answer = %+v", m)
		}
	})

	t.Run("SendStreamingMessage", func(t *testing.T) {
		ks, fs, err := streamKinds(t, c.SendStreamingMessage(ctx, ours.TextRequest("stream me", "", "")))
		if err != nil {
			t.Fatalf("stream: %v (frames %v)", err, ks)
		}
		if len(ks) < 2 || !strings.HasPrefix(ks[0], "task:") || ks[len(ks)-1] != "status:TASK_STATE_COMPLETED" {
			t.Errorf("frames %v, want a task first and the completion last", ks)
		}
		for _, f := range fs {
			if f.TaskID() != fs[0].Task.ID {
				t.Errorf("frame for task %q in the stream of %q", f.TaskID(), fs[0].Task.ID)
			}
		}
	})

	t.Run("InputRequired", func(t *testing.T) {
		ks, fs, err := streamKinds(t, c.SendStreamingMessage(ctx, ours.TextRequest("ask", "", "")))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if ks[len(ks)-1] != "status:TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("frames %v, want the stream to end at input-required", ks)
		}
		id, ctxID := fs[0].TaskID(), fs[0].Task.ContextID
		r, err := c.SendText(ctx, "42", id, ctxID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Task.Status.State != a2a.TaskStateCompleted || !strings.Contains(a2a.PartsText(r.Task.Artifacts[len(r.Task.Artifacts)-1].Parts), "answer: 42") {
			t.Errorf("follow-up = %+v", r.Task)
		}
	})

	t.Run("GetTask", func(t *testing.T) {
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != done.ID || got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("task = %+v", got)
		}
		_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
		if !errors.Is(err, a2a.ErrTaskNotFound) || !errors.Is(err, ours.ErrClassA2A) {
			t.Errorf("unknown task: %v", err)
		}
	})

	t.Run("ListTasks", func(t *testing.T) {
		l, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: done.ContextID})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) != 1 || l.Tasks[0].ID != done.ID {
			t.Errorf("tasks = %+v", l.Tasks)
		}
	})

	t.Run("CancelTask", func(t *testing.T) {
		r, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: ours.TextRequest("slow", "", "").Message,
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: r.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("state after cancel = %v", got.Status.State)
		}
		if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: done.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
			t.Errorf("cancel of a completed task: %v", err)
		}
	})

	t.Run("SubscribeToTask", func(t *testing.T) {
		r, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: ours.TextRequest("slow", "", "").Message,
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for f, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: r.Task.ID}) {
			if err != nil {
				t.Fatalf("subscribe: %v (frames %v)", err, ks)
			}
			ks = append(ks, kind(f))
			if len(ks) == 1 {
				if f.Task == nil {
					t.Fatalf("first frame %s, want the task snapshot", ks[0])
				}
				if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: r.Task.ID}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(ks) < 2 || ks[len(ks)-1] != "status:TASK_STATE_CANCELED" {
			t.Errorf("frames %v, want the stream to end canceled", ks)
		}
	})

	t.Run("StreamRefusal", func(t *testing.T) {
		// A streaming call naming an unknown task: a2a-js refuses it with
		// plain JSON, a2a-go with an SSE error event (over both bindings);
		// all reach the caller as the typed error.
		_, _, err := streamKinds(t, c.SendStreamingMessage(ctx, ours.TextRequest("x", "no-such-task", "")))
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("err = %v, want TaskNotFound", err)
		}
	})

	t.Run("PushConfigs", func(t *testing.T) {
		cfg, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: done.ID, ID: "cfg-1", URL: "https://hooks.example.com/a2a"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: done.ID, ID: cfg.ID})
		if err != nil || got.URL != "https://hooks.example.com/a2a" {
			t.Fatalf("get = %+v, %v", got, err)
		}
		l, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: done.ID})
		if err != nil || len(l.Configs) != 1 {
			t.Fatalf("list = %+v, %v", l, err)
		}
		// a2a-go answers the delete without a result member over JSON-RPC
		// (D5) and with an empty 200 over REST, a2a-js with 204 over REST:
		// our client reads each as success.
		if err := c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: done.ID, ID: cfg.ID}); err != nil {
			t.Fatal(err)
		}
	})
}

// Deviation D2 seen by our client: a2a-go answers SubscribeToTask on a
// completed task with an SSE stream holding the completed task, the error
// -32001, or both. Our client ends at the completed task (a final frame)
// or reports TaskNotFound; never a silent empty success. a2a-js refuses
// with -32004 as the spec says.
func TestOurClient_SubscribeTerminalTask(t *testing.T) {
	for _, tc := range []struct {
		name       string
		url        func(t *testing.T) string
		auth       ours.AuthProvider
		transports []string
	}{
		{"a2a-go", func(t *testing.T) string { return startGoPeer(t).URL }, goAuth, nil},
		{"a2a-js", startJSPeer, nil, nil},
		{"a2a-go REST", func(t *testing.T) string { return startGoServer(t, true).URL }, goAuth, restOnly},
		{"a2a-js REST", func(t *testing.T) string { return startJSServer(t, "rest") }, nil, restOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := ours.NewFromURL(ctx, tc.url(t), &ours.Options{Auth: tc.auth, Transports: tc.transports})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.SendText(ctx, "hello", "", "")
			if err != nil {
				t.Fatal(err)
			}
			ks, _, err := streamKinds(t, c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: r.Task.ID}))
			switch {
			case strings.HasPrefix(tc.name, "a2a-js"):
				if !errors.Is(err, a2a.ErrUnsupportedOperation) || len(ks) != 0 {
					t.Errorf("frames %v, err %v; want -32004 before any frame", ks, err)
				}
			case err != nil:
				if !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Errorf("err = %v, want TaskNotFound (D2) or the completed task", err)
				}
			default:
				if len(ks) != 1 || ks[0] != "task:TASK_STATE_COMPLETED" {
					t.Errorf("frames %v, want the completed task", ks)
				}
			}
		})
	}
}

// What a2a-go v2.3.1's HTTP+JSON server does where the spec leaves room
// or says otherwise (README.md, D14–D16), read on the raw wire.
func TestGoServerREST_Deviations(t *testing.T) {
	base := startGoServer(t, true).URL + "/rest"
	do := func(verb, path, body string) (*http.Response, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(testCtx(t), verb, base+path, r)
		req.Header.Set("Content-Type", "application/a2a+json")
		req.Header.Set(a2a.HeaderVersion, "1.0")
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// D14: answers are application/json, where §11.1 says application/a2a+json SHOULD.
	resp, body := do("POST", "/message:send", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("send: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var sent a2a.SendMessageResponse
	if err := a2a.Unmarshal([]byte(body), &sent); err != nil || sent.Task == nil {
		t.Fatalf("send answer %s: %v", body, err)
	}
	// D15: GET :subscribe (the proto's verb) is routed to GetTask with the
	// id "<id>:subscribe": TaskNotFound, not a stream and not a 405.
	resp, body = do("GET", "/tasks/"+sent.Task.ID+":subscribe", "")
	if resp.StatusCode != 404 || !strings.Contains(body, "TASK_NOT_FOUND") {
		t.Errorf("GET subscribe: %d %s", resp.StatusCode, body)
	}
	// D16: a deleted push config is answered 200 with an empty body
	// (google.protobuf.Empty is {} in JSON).
	do("POST", "/tasks/"+sent.Task.ID+"/pushNotificationConfigs", `{"id":"c1","url":"https://hooks.example.com/a"}`)
	resp, body = do("DELETE", "/tasks/"+sent.Task.ID+"/pushNotificationConfigs/c1", "")
	if resp.StatusCode != 200 || body != "" {
		t.Errorf("delete: %d %q", resp.StatusCode, body)
	}
}
