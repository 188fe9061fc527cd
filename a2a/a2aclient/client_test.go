package a2aclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/secret"
)

// TestMethods runs every method over each binding: JSON-RPC and HTTP+JSON
// straight to the agent's a2asrv handler, and HTTP+JSON through
// restBridge (whose answers follow the peers' REST servers: 204 on
// delete, error events named "error").
func TestMethods(t *testing.T) {
	for _, tc := range []struct{ name, binding string }{
		{"JSONRPC", a2a.BindingJSONRPC},
		{"HTTP+JSON", a2a.BindingHTTPJSON},
		{"HTTP+JSON through the bridge", a2a.BindingHTTPJSON},
	} {
		binding := tc.binding
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, &agentOptions{tenant: "acme", push: true, extended: true})
			card, url := a.card, a.srv.URL
			switch tc.name {
			case "HTTP+JSON":
				// a2asrv serves HTTP+JSON on the JSON-RPC URL.
				c := *a.card
				c.SupportedInterfaces = append(c.SupportedInterfaces, a2a.AgentInterface{URL: a.srv.URL, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion, Tenant: "acme"})
				card = &c
			case "HTTP+JSON through the bridge":
				b := newRESTBridge(t, a, nil)
				card, url = b.card("acme"), b.srv.URL
			}
			c, err := a2aclient.New(card, &a2aclient.Options{Transports: []string{binding}})
			must(t, err)
			if c.Tenant() != "acme" || c.URL() != url || c.Binding() != binding {
				t.Fatalf("client tenant %q url %q binding %q: the %s interface was not selected", c.Tenant(), c.URL(), c.Binding(), binding)
			}
			testMethods(t, a, c)
		})
	}
}

func testMethods(t *testing.T, a *agent, c *a2aclient.Client) {
	ctx := t.Context()

	r, err := c.SendMessage(ctx, msgReq("m-1", "hello"))
	must(t, err)
	if r.Task == nil || r.Task.Status.State != a2a.TaskStateCompleted || a2a.PartsText(r.Task.Artifacts[0].Parts) != "hello" {
		t.Fatalf("SendMessage = %+v", r)
	}
	r2, err := c.SendMessage(ctx, msgReq("m-2", "reply hi"))
	must(t, err)
	if r2.Message == nil || r2.Message.Text() != "You said: hi" {
		t.Fatalf("SendMessage reply = %+v", r2)
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.Task.ID})
	must(t, err)
	if d := cmp.Diff(r.Task, got); d != "" {
		t.Errorf("GetTask (-send +get):\n%s", d)
	}
	l, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
	must(t, err)
	if len(l.Tasks) != 1 || l.Tasks[0].ID != r.Task.ID {
		t.Errorf("ListTasks = %+v", l)
	}

	// Cancel a live task.
	slow, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msgReq("m-3", "slow").Message, Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	must(t, err)
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: slow.Task.ID})
	must(t, err)
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask state = %v", canceled.Status.State)
	}

	// Subscribe to a task held in WORKING, then let it finish.
	held, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msgReq("m-4", "hold 1").Message, Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
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

	// Push configs.
	ask, err := c.SendMessage(ctx, msgReq("m-5", "ask"))
	must(t, err)
	cfg, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: ask.Task.ID, URL: "https://hooks.example.com/x"})
	must(t, err)
	if cfg.ID == "" || cfg.Tenant != "acme" {
		t.Errorf("created config = %+v", cfg)
	}
	g, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: ask.Task.ID, ID: cfg.ID})
	must(t, err)
	if g.URL != cfg.URL {
		t.Errorf("got config %+v", g)
	}
	ls, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: ask.Task.ID})
	must(t, err)
	if len(ls.Configs) != 1 {
		t.Errorf("listed %d configs", len(ls.Configs))
	}
	must(t, c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: ask.Task.ID, ID: cfg.ID}))
	if _, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: ask.Task.ID, ID: cfg.ID}); err == nil {
		t.Error("deleted config still found")
	}
	ext, err := c.GetExtendedAgentCard(ctx)
	must(t, err)
	if ext.Description != "Extended card" {
		t.Errorf("extended card = %+v", ext)
	}

	// Follow-up on an interrupted task, through SendText.
	done, err := c.SendText(ctx, "the red one", ask.Task.ID, ask.Task.ContextID)
	must(t, err)
	if done.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("follow-up state = %v", done.Task.Status.State)
	}
}

func TestTenantOverride(t *testing.T) {
	a := newAgent(t, &agentOptions{tenant: "acme"})
	var params []string
	rec := a2aclient.InterceptorFuncs{BeforeFunc: func(ctx context.Context, call *a2aclient.Call) (context.Context, error) {
		b, _ := json.Marshal(call.Params)
		params = append(params, string(b))
		return ctx, nil
	}}
	c, err := a2aclient.New(a.card, &a2aclient.Options{Tenant: "globex", Interceptors: []a2aclient.Interceptor{rec}})
	must(t, err)
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatal(err)
	}
	_, _ = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x", Tenant: "explicit"})
	want := []string{`{"tenant":"globex","id":"x"}`, `{"tenant":"explicit","id":"x"}`}
	if d := cmp.Diff(want, params); d != "" {
		t.Errorf("params (-want +got):\n%s", d)
	}
}

func TestErrors(t *testing.T) {
	answer := func(status int, ct, body string) *a2aclient.Client {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		c, err := a2aclient.NewForURL(srv.URL, nil)
		must(t, err)
		return c
	}
	rpcErr := func(code int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"error":{"code":%d,"message":"m"}}`, code)
	}
	for _, tc := range []struct {
		name string
		c    *a2aclient.Client
		want []error
		not  []error
	}{
		{"task not found", answer(200, "application/json", rpcErr(-32001)), []error{a2a.ErrTaskNotFound, a2aclient.ErrClassA2A}, []error{a2aclient.ErrUnreachable, a2a.ErrTaskNotCancelable}},
		{"unknown A2A code", answer(200, "application/json", rpcErr(-32050)), []error{a2aclient.ErrClassA2A}, []error{a2aclient.ErrClassJSONRPC}},
		{"method not found", answer(200, "application/json", rpcErr(-32601)), []error{a2a.ErrMethodNotFound, a2aclient.ErrClassJSONRPC}, []error{a2aclient.ErrClassA2A}},
		{"unknown JSON-RPC code", answer(200, "application/json", rpcErr(-32650)), []error{a2aclient.ErrClassJSONRPC}, nil},
		{"application code", answer(200, "application/json", rpcErr(-31000)), []error{a2aclient.ErrClassApplication}, []error{a2aclient.ErrUnauthenticated}},
		{"error with HTTP status", answer(400, "application/json", rpcErr(-32602)), []error{a2a.ErrInvalidParams}, nil},
		{"HTTP 404", answer(404, "text/plain", "no"), []error{a2aclient.ErrUnreachable}, nil},
		{"HTTP 401", answer(401, "text/plain", "no"), []error{a2aclient.ErrUnauthenticated}, []error{a2aclient.ErrUnreachable, a2aclient.ErrForbidden}},
		{"HTTP 403", answer(403, "text/plain", "no"), []error{a2aclient.ErrForbidden}, []error{a2aclient.ErrUnauthenticated}},
		{"HTTP 429", answer(429, "text/plain", "slow down"), []error{a2aclient.ErrRateLimited}, nil},
		{"unauthenticated code", answer(200, "application/json", rpcErr(-31401)), []error{a2aclient.ErrUnauthenticated, a2aclient.ErrClassApplication}, nil},
		{"HTTP 500 text", answer(500, "text/plain", "oops"), nil, []error{a2aclient.ErrUnreachable}},
		{"not JSON", answer(200, "application/json", "<html>"), []error{a2aclient.ErrInvalidResponse}, nil},
		{"wrong result shape", answer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"},"message":{"messageId":"m"}}}`), []error{a2aclient.ErrInvalidResponse}, nil},
		{"too large", answer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":"`+strings.Repeat("x", 11<<20)+`"}`), []error{a2aclient.ErrResponseTooLarge}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.SendMessage(t.Context(), msgReq("m", "x"))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = false", err, w)
				}
			}
			for _, w := range tc.not {
				if errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = true", err, w)
				}
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c, err := a2aclient.NewForURL(url, nil)
		must(t, err)
		res := c.SendMessageSafe(t.Context(), msgReq("m", "x"))
		if res.OK() || !res.Unreachable() || res.Task != nil {
			t.Errorf("SendMessageSafe = %+v, want unreachable", res)
		}
	})
	t.Run("safe with an answer", func(t *testing.T) {
		res := answer(200, "application/json", rpcErr(-32001)).SendMessageSafe(t.Context(), msgReq("m", "x"))
		if res.OK() || res.Unreachable() || !errors.Is(res.Err, a2a.ErrTaskNotFound) {
			t.Errorf("SendMessageSafe = %+v", res)
		}
		a := newAgent(t, nil)
		c, _ := a2aclient.New(a.card, nil)
		if res := c.SendMessageSafe(t.Context(), msgReq("m", "hi")); !res.OK() || res.Task == nil {
			t.Errorf("SendMessageSafe = %+v", res)
		}
	})
}

func TestTimeouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{Timeout: 20 * time.Millisecond})
	must(t, err)
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "t"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, a2aclient.ErrUnreachable) {
		t.Errorf("default timeout: err = %v, want DeadlineExceeded", err)
	}
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "t"}, a2aclient.WithTimeout(5*time.Second)); err != nil {
		t.Errorf("per-call override: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "t"}, a2aclient.WithTimeout(-1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context deadline: err = %v", err)
	}
}

// TestInterceptorsAndAuth runs over each binding: interceptors and auth
// providers see every call whatever carries it.
func TestInterceptorsAndAuth(t *testing.T) {
	for _, tc := range []struct{ name, binding string }{
		{"JSONRPC", a2a.BindingJSONRPC},
		{"HTTP+JSON", a2a.BindingHTTPJSON},
		{"HTTP+JSON through the bridge", a2a.BindingHTTPJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, nil)
			card := a.card
			switch tc.name {
			case "HTTP+JSON":
				c := *a.card
				c.SupportedInterfaces = append(c.SupportedInterfaces, a2a.AgentInterface{URL: a.srv.URL, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion})
				card = &c
			case "HTTP+JSON through the bridge":
				card = newRESTBridge(t, a, nil).card("")
			}
			testInterceptorsAndAuth(t, a, card, tc.binding)
		})
	}
}

func testInterceptorsAndAuth(t *testing.T, a *agent, card *a2a.AgentCard, binding string) {
	var log []string
	mk := func(name string) a2aclient.Interceptor {
		return a2aclient.InterceptorFuncs{
			BeforeFunc: func(ctx context.Context, call *a2aclient.Call) (context.Context, error) {
				if call.Binding != binding {
					t.Errorf("call.Binding = %q, want %q", call.Binding, binding)
				}
				log = append(log, name+" before "+call.Method+" card="+call.Card.Name+" session="+call.SessionID)
				call.Header.Set("X-Trace", name)
				call.Values = map[string]any{"n": name}
				return ctx, nil
			},
			AfterFunc: func(ctx context.Context, call *a2aclient.Call, result any, err error) error {
				_, isTask := result.(*a2a.Task)
				log = append(log, fmt.Sprintf("%s after %s task=%v err=%v", name, call.Method, isTask, err != nil))
				return err
			},
		}
	}
	store := &a2aclient.MemoryCredentials{}
	store.Set("alice", a2aclient.Credential{Scheme: "bearer", Value: secret.New("alice-token")})
	store.Set("bob", a2aclient.Credential{Scheme: "apiKey", Value: secret.New("bob-key")})
	c, err := a2aclient.New(card, &a2aclient.Options{
		Transports:   []string{binding},
		Interceptors: []a2aclient.Interceptor{mk("one"), mk("two")},
		Auth:         a2aclient.SessionAuth(store, true),
		Header:       http.Header{"X-Static": {"s"}},
		Extensions:   []string{"urn:a"},
	})
	must(t, err)
	drain := func() http.Header {
		for {
			select {
			case h := <-a.headers:
				if len(a.headers) == 0 {
					return h
				}
			default:
				t.Fatal("no request seen")
			}
		}
	}
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}, a2aclient.WithSession("alice"), a2aclient.WithExtensions("urn:b"), a2aclient.WithHeader("X-Call", "c"))
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatal(err)
	}
	h := drain()
	for k, want := range map[string]string{"Authorization": "Bearer alice-token", "X-Trace": "two", "X-Static": "s", "X-Call": "c", "A2A-Extensions": "urn:a, urn:b", "A2A-Version": "1.0"} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	r, err := c.SendMessage(t.Context(), msgReq("m", "hi"), a2aclient.WithSession("bob"))
	must(t, err)
	_ = r
	h = drain()
	if h.Get("X-API-Key") != "bob-key" || h.Get("Authorization") != "" {
		t.Errorf("bob's headers = %v", h)
	}
	want := []string{
		"one before GetTask card=scripted session=alice",
		"two before GetTask card=scripted session=alice",
		"two after GetTask task=false err=true",
		"one after GetTask task=false err=true",
		"one before SendMessage card=scripted session=bob",
		"two before SendMessage card=scripted session=bob",
		"two after SendMessage task=false err=false",
		"one after SendMessage task=false err=false",
	}
	if d := cmp.Diff(want, log); d != "" {
		t.Errorf("interceptor log (-want +got):\n%s", d)
	}

	// A Before error stops the call; a required credential that is
	// missing too.
	deny := errors.New("denied")
	c2, _ := a2aclient.New(card, &a2aclient.Options{Transports: []string{binding}, Interceptors: []a2aclient.Interceptor{a2aclient.InterceptorFuncs{
		BeforeFunc: func(ctx context.Context, call *a2aclient.Call) (context.Context, error) { return ctx, deny },
	}}})
	if _, err := c2.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}); !errors.Is(err, deny) {
		t.Errorf("before error: %v", err)
	}
	if err := onlyError(c2.SendStreamingMessage(t.Context(), msgReq("m", "hi"))); !errors.Is(err, deny) {
		t.Errorf("stream before error: %v", err)
	}
	c3, _ := a2aclient.New(card, &a2aclient.Options{Transports: []string{binding}, Auth: a2aclient.SessionAuth(store, false)})
	if _, err := c3.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}, a2aclient.WithSession("carol")); !errors.Is(err, a2aclient.ErrNoCredential) {
		t.Errorf("missing credential: %v", err)
	}

	// An After that replaces the error.
	c4, _ := a2aclient.New(card, &a2aclient.Options{Transports: []string{binding}, Interceptors: []a2aclient.Interceptor{a2aclient.InterceptorFuncs{
		AfterFunc: func(ctx context.Context, call *a2aclient.Call, result any, err error) error { return deny },
	}}})
	if _, err := c4.SendMessage(t.Context(), msgReq("m", "hi")); !errors.Is(err, deny) {
		t.Errorf("after error: %v", err)
	}
}

func TestSecretRedacted(t *testing.T) {
	s := secret.New("hunter2")
	c := a2aclient.Credential{Scheme: "bearer", Value: s}
	b, _ := json.Marshal(c)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, c, c, s, s, s), string(b)} {
		if strings.Contains(out, "hunter2") || strings.Contains(out, fmt.Sprintf("%x", "hunter2")) {
			t.Errorf("secret leaked: %s", out)
		}
	}
	if s.Reveal() != "hunter2" {
		t.Error("Reveal")
	}
}

func TestNewRefusals(t *testing.T) {
	if _, err := a2aclient.New(&a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: "http://x", ProtocolBinding: "GRPC"}}}, nil); !errors.Is(err, a2aclient.ErrNoInterface) {
		t.Errorf("no JSONRPC interface: %v", err)
	}
	if _, err := a2aclient.New(&a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: "http://x", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.2.5"}}}, nil); !errors.Is(err, a2aclient.ErrNoInterface) {
		t.Errorf("v0.2 interface: %v", err)
	}
	if _, err := a2aclient.NewForURL("ftp://x", nil); err == nil {
		t.Error("ftp URL accepted")
	}
}

// onlyError drains a stream that must fail before its first frame: it
// returns the one error the stream yields, or an error saying what the
// stream did instead (frames, more errors, or nothing at all, which a plain
// range loop would let pass).
func onlyError(seq iter.Seq2[*a2a.StreamResponse, error]) error {
	var frames, errs int
	var first error
	for _, err := range seq {
		switch {
		case err == nil:
			frames++
		case first == nil:
			first = err
			fallthrough
		default:
			errs++
		}
	}
	if frames != 0 || errs != 1 {
		return fmt.Errorf("stream yielded %d frames and %d errors (first %v), want one error and no frame", frames, errs, first)
	}
	return first
}
