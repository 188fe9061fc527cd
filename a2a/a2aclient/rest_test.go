package a2aclient_test

import (
	"context"
	"errors"
	"fmt"
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
)

// wireRecord is what the HTTP+JSON client put on the wire for one call.
type wireRecord struct {
	Line        string // VERB escaped-path?query
	ContentType string
	Accept      string
	Version     string
	Body        string
}

// cannedREST records every request and answers each with the same status,
// content type and body.
type cannedREST struct {
	mu     sync.Mutex
	got    []wireRecord
	status int
	ct     string
	body   string
}

func (s *cannedREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	line := r.Method + " " + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		line += "?" + r.URL.RawQuery
	}
	s.mu.Lock()
	s.got = append(s.got, wireRecord{line, r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get(a2a.HeaderVersion), string(b)})
	status, ct, body := s.status, s.ct, s.body
	s.mu.Unlock()
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// restClient is an HTTP+JSON client of a canned server mounted under
// /agents/x, so every path is checked to extend the interface URL.
func restClient(t *testing.T, s *cannedREST, opts *a2aclient.Options) *a2aclient.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	if opts == nil {
		opts = &a2aclient.Options{}
	}
	opts.Transports = []string{a2a.BindingHTTPJSON}
	if opts.ResumeAttempts == 0 {
		opts.ResumeAttempts = -1
	}
	c, err := a2aclient.NewForURL(srv.URL+"/agents/x/", opts)
	must(t, err)
	return c
}

const (
	taskJSON    = `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}`
	configJSON  = `{"id":"c1","taskId":"t-1","url":"https://hooks.example.com/a"}`
	restJSON    = "application/a2a+json"
	restAccepts = "application/a2a+json, application/json"
	sseType     = "text/event-stream"
)

func TestRESTWire(t *testing.T) {
	completedSSE := "data: " + `{"task":` + taskJSON + "}\n\n"
	summary := func(v any, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		switch r := v.(type) {
		case *a2a.SendMessageResponse:
			if r.Task != nil {
				return "task " + r.Task.ID
			}
			return "message " + r.Message.MessageID
		case *a2a.Task:
			return "task " + r.ID + " " + r.Status.State.String()
		case *a2a.ListTasksResponse:
			return fmt.Sprintf("%d tasks, next %q", len(r.Tasks), r.NextPageToken)
		case *a2a.TaskPushNotificationConfig:
			return "config " + r.ID + " " + r.URL
		case *a2a.ListTaskPushNotificationConfigsResponse:
			return fmt.Sprintf("%d configs", len(r.Configs))
		case *a2a.AgentCard:
			return "card " + r.Name
		case []*a2a.StreamResponse:
			return "frames " + frameKinds(r)
		case nil:
			return "ok"
		}
		return fmt.Sprintf("%T", v)
	}
	stream := func(seq func(func(*a2a.StreamResponse, error) bool)) (any, error) {
		var fs []*a2a.StreamResponse
		for f, err := range seq {
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return fs, nil
	}
	i32 := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name    string
		opts    *a2aclient.Options
		status  int
		ct      string
		answer  string
		call    func(ctx context.Context, c *a2aclient.Client) (any, error)
		want    wireRecord
		summary string
	}{
		{"SendMessage", nil, 200, restJSON, `{"task":` + taskJSON + `}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.SendMessage(ctx, msgReq("m-1", "hi"))
			},
			wireRecord{"POST /agents/x/message:send", restJSON, restAccepts, "1.0", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`},
			"task t-1"},
		{"SendMessage with the request's tenant in the path, not the body", nil, 200, "application/json", `{"message":{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"yo"}]}}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				r := msgReq("m-1", "hi")
				r.Tenant = "acme"
				r.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
				return c.SendMessage(ctx, r)
			},
			wireRecord{"POST /agents/x/acme/message:send", restJSON, restAccepts, "1.0", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}`},
			"message r-1"},
		{"SendMessage with Options.Tenant", &a2aclient.Options{Tenant: "globex"}, 200, restJSON, `{"task":` + taskJSON + `}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.SendMessage(ctx, msgReq("m-1", "hi"))
			},
			wireRecord{"POST /agents/x/globex/message:send", restJSON, restAccepts, "1.0", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`},
			"task t-1"},
		{"GetTask with historyLength", nil, 200, restJSON, taskJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.GetTask(ctx, &a2a.GetTaskRequest{ID: "t-1", HistoryLength: i32(0)})
			},
			wireRecord{"GET /agents/x/tasks/t-1?historyLength=0", "", restAccepts, "1.0", ""},
			"task t-1 TASK_STATE_COMPLETED"},
		{"GetTask escapes the id and the tenant", nil, 200, restJSON, taskJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.GetTask(ctx, &a2a.GetTaskRequest{ID: "a/b c?", Tenant: "t/1"})
			},
			wireRecord{"GET /agents/x/t%2F1/tasks/a%2Fb%20c%3F", "", restAccepts, "1.0", ""},
			"task t-1 TASK_STATE_COMPLETED"},
		{"ListTasks with every filter", nil, 200, restJSON, `{"tasks":[` + taskJSON + `],"nextPageToken":"n2","pageSize":1,"totalSize":3}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: "c 1", Status: a2a.TaskStateWorking, PageSize: i32(10), PageToken: "p+&q",
					HistoryLength: i32(2), StatusTimestampAfter: "2026-11-30T09:00:00.000Z", IncludeArtifacts: true})
			},
			wireRecord{"GET /agents/x/tasks?contextId=c%201&status=TASK_STATE_WORKING&pageSize=10&pageToken=p%2B%26q&historyLength=2&statusTimestampAfter=2026-11-30T09%3A00%3A00.000Z&includeArtifacts=true", "", restAccepts, "1.0", ""},
			`1 tasks, next "n2"`},
		{"ListTasks without filters", nil, 200, restJSON, `{"tasks":[],"nextPageToken":""}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.ListTasks(ctx, &a2a.ListTasksRequest{})
			},
			wireRecord{"GET /agents/x/tasks", "", restAccepts, "1.0", ""},
			`0 tasks, next ""`},
		{"CancelTask", nil, 200, restJSON, taskJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "t-1"})
			},
			wireRecord{"POST /agents/x/tasks/t-1:cancel", restJSON, restAccepts, "1.0", `{}`},
			"task t-1 TASK_STATE_COMPLETED"},
		{"CancelTask with metadata", nil, 200, restJSON, taskJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "t-1", Metadata: map[string]any{"why": "test"}})
			},
			wireRecord{"POST /agents/x/tasks/t-1:cancel", restJSON, restAccepts, "1.0", `{"metadata":{"why":"test"}}`},
			"task t-1 TASK_STATE_COMPLETED"},
		{"CreateTaskPushNotificationConfig (201)", nil, 201, restJSON, configJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: "t-1", ID: "c1", URL: "https://hooks.example.com/a", Token: "tok"})
			},
			wireRecord{"POST /agents/x/tasks/t-1/pushNotificationConfigs", restJSON, restAccepts, "1.0", `{"id":"c1","url":"https://hooks.example.com/a","token":"tok"}`},
			"config c1 https://hooks.example.com/a"},
		{"GetTaskPushNotificationConfig", nil, 200, restJSON, configJSON,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: "t-1", ID: "c1"})
			},
			wireRecord{"GET /agents/x/tasks/t-1/pushNotificationConfigs/c1", "", restAccepts, "1.0", ""},
			"config c1 https://hooks.example.com/a"},
		{"ListTaskPushNotificationConfigs", nil, 200, restJSON, `{"configs":[` + configJSON + `],"nextPageToken":""}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: "t-1", PageSize: i32(5), PageToken: "n"})
			},
			wireRecord{"GET /agents/x/tasks/t-1/pushNotificationConfigs?pageSize=5&pageToken=n", "", restAccepts, "1.0", ""},
			"1 configs"},
		{"DeleteTaskPushNotificationConfig (204)", nil, 204, "", "",
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return nil, c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: "t-1", ID: "c1"})
			},
			wireRecord{"DELETE /agents/x/tasks/t-1/pushNotificationConfigs/c1", "", restAccepts, "1.0", ""},
			"ok"},
		{"DeleteTaskPushNotificationConfig (200 {})", nil, 200, restJSON, "{}",
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return nil, c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: "t-1", ID: "c1", Tenant: "acme"})
			},
			wireRecord{"DELETE /agents/x/acme/tasks/t-1/pushNotificationConfigs/c1", "", restAccepts, "1.0", ""},
			"ok"},
		{"GetExtendedAgentCard", &a2aclient.Options{Tenant: "acme"}, 200, restJSON, `{"name":"extended","supportedInterfaces":[{"url":"http://x","protocolBinding":"HTTP+JSON"}]}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) { return c.GetExtendedAgentCard(ctx) },
			wireRecord{"GET /agents/x/acme/extendedAgentCard", "", restAccepts, "1.0", ""},
			"card extended"},
		{"SendStreamingMessage", nil, 200, sseType, completedSSE,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return stream(c.SendStreamingMessage(ctx, msgReq("m-1", "hi")))
			},
			wireRecord{"POST /agents/x/message:stream", restJSON, sseType, "1.0", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`},
			"frames task "},
		{"SubscribeToTask (POST, as the spec's text says)", nil, 200, sseType, completedSSE,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return stream(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "t-1"}))
			},
			wireRecord{"POST /agents/x/tasks/t-1:subscribe", restJSON, sseType, "1.0", `{}`},
			"frames task "},
		{"a stream answered with one plain JSON frame", nil, 200, restJSON, `{"task":` + taskJSON + `}`,
			func(ctx context.Context, c *a2aclient.Client) (any, error) {
				return stream(c.SendStreamingMessage(ctx, msgReq("m-1", "hi")))
			},
			wireRecord{"POST /agents/x/message:stream", restJSON, sseType, "1.0", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`},
			"frames task "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &cannedREST{status: tc.status, ct: tc.ct, body: tc.answer}
			c := restClient(t, s, tc.opts)
			got := summary(tc.call(t.Context(), c))
			if got != tc.summary {
				t.Errorf("result %s, want %s", got, tc.summary)
			}
			if len(s.got) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(s.got), s.got)
			}
			if d := cmp.Diff(tc.want, s.got[0]); d != "" {
				t.Errorf("wire (-want +got):\n%s", d)
			}
		})
	}
}

func TestRESTRequestRefusals(t *testing.T) {
	s := &cannedREST{status: 200, ct: restJSON, body: taskJSON}
	c := restClient(t, s, nil)
	for name, err := range map[string]error{
		"GetTask":    func() error { _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{}); return err }(),
		"CancelTask": func() error { _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{}); return err }(),
		"GetConfig": func() error {
			_, err := c.GetTaskPushNotificationConfig(t.Context(), &a2a.GetTaskPushNotificationConfigRequest{TaskID: "t"})
			return err
		}(),
		"Subscribe": onlyError(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{})),
	} {
		if err == nil || !strings.Contains(err.Error(), "is required (the HTTP+JSON binding puts it in the path)") {
			t.Errorf("%s without an id: %v", name, err)
		}
	}
	if len(s.got) != 0 {
		t.Errorf("requests sent: %+v", s.got)
	}
	if _, err := a2aclient.NewForURL("http://x/a?b=c", &a2aclient.Options{Transports: []string{a2a.BindingHTTPJSON}}); err == nil {
		t.Error("an interface URL with a query was accepted")
	}
}

// statusJSON is a google.rpc.Status error body with an ErrorInfo reason
// ("" for no details).
func statusJSON(code int, status, reason, domain string) string {
	details := `[]`
	if reason != "" {
		details = `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"` + domain + `","metadata":{"taskId":"t-1"}}]`
	}
	return fmt.Sprintf(`{"error":{"code":%d,"status":%q,"message":"the agent says no","details":%s}}`, code, status, details)
}

func TestRESTErrors(t *testing.T) {
	const dom = a2a.ErrorDomain
	for _, tc := range []struct {
		name       string
		status     int
		ct, body   string
		want, not  []error
		code       int    // of the *a2a.Error, 0 for none
		detail     string // of the *HTTPError, "" for none
		errContain string
	}{
		{"404 TASK_NOT_FOUND", 404, restJSON, statusJSON(404, "NOT_FOUND", "TASK_NOT_FOUND", dom),
			[]error{a2a.ErrTaskNotFound, a2aclient.ErrClassA2A}, []error{a2aclient.ErrUnreachable}, -32001, "", "the agent says no"},
		{"400 TASK_NOT_CANCELABLE", 400, restJSON, statusJSON(400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", dom),
			[]error{a2a.ErrTaskNotCancelable}, []error{a2a.ErrInvalidParams}, -32002, "", ""},
		{"400 PUSH_NOTIFICATION_NOT_SUPPORTED", 400, "application/json", statusJSON(400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", dom),
			[]error{a2a.ErrPushNotificationNotSupported}, nil, -32003, "", ""},
		{"400 UNSUPPORTED_OPERATION", 400, restJSON, statusJSON(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", dom),
			[]error{a2a.ErrUnsupportedOperation}, nil, -32004, "", ""},
		{"400 CONTENT_TYPE_NOT_SUPPORTED", 400, restJSON, statusJSON(400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", dom),
			[]error{a2a.ErrContentTypeNotSupported}, nil, -32005, "", ""},
		{"500 INVALID_AGENT_RESPONSE", 500, restJSON, statusJSON(500, "INTERNAL", "INVALID_AGENT_RESPONSE", dom),
			[]error{a2a.ErrInvalidAgentResponse}, nil, -32006, "", ""},
		{"400 EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400, restJSON, statusJSON(400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", dom),
			[]error{a2a.ErrExtendedAgentCardNotConfigured}, nil, -32007, "", ""},
		{"400 EXTENSION_SUPPORT_REQUIRED", 400, restJSON, statusJSON(400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED", dom),
			[]error{a2a.ErrExtensionSupportRequired}, nil, -32008, "", ""},
		{"400 VERSION_NOT_SUPPORTED", 400, restJSON, statusJSON(400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", dom),
			[]error{a2a.ErrVersionNotSupported}, nil, -32009, "", ""},
		{"400 INVALID_PARAMS", 400, restJSON, statusJSON(400, "INVALID_ARGUMENT", "INVALID_PARAMS", dom),
			[]error{a2a.ErrInvalidParams, a2aclient.ErrClassJSONRPC}, nil, -32602, "", ""},
		{"401 UNAUTHENTICATED (a2a-go's reason)", 401, "application/json", statusJSON(401, "UNAUTHENTICATED", "UNAUTHENTICATED", dom),
			[]error{a2aclient.ErrUnauthenticated}, []error{a2aclient.ErrUnreachable}, -31401, "", ""},
		{"400 without details: invalid params", 400, restJSON, statusJSON(400, "INVALID_ARGUMENT", "", ""),
			[]error{a2a.ErrInvalidParams}, nil, -32602, "", ""},
		{"404 without details: task not found", 404, restJSON, statusJSON(404, "NOT_FOUND", "", ""),
			[]error{a2a.ErrTaskNotFound}, []error{a2aclient.ErrUnreachable}, -32001, "", ""},
		{"501 without details: method not found", 501, restJSON, statusJSON(501, "UNIMPLEMENTED", "", ""),
			[]error{a2a.ErrMethodNotFound}, nil, -32601, "", ""},
		{"500 without details: internal", 500, restJSON, statusJSON(500, "INTERNAL", "", ""),
			[]error{a2a.ErrInternal}, nil, -32603, "", ""},
		{"a reason of another domain is not an A2A reason", 400, restJSON, statusJSON(400, "INVALID_ARGUMENT", "TASK_NOT_FOUND", "example.com"),
			[]error{a2a.ErrInvalidParams}, []error{a2a.ErrTaskNotFound}, -32602, "", ""},
		{"an unknown reason falls back on the status", 404, restJSON, statusJSON(404, "NOT_FOUND", "SOMETHING_NEW", dom),
			[]error{a2a.ErrTaskNotFound}, nil, -32001, "", ""},
		{"403 status body without an A2A reason", 403, restJSON, statusJSON(403, "PERMISSION_DENIED", "", ""),
			[]error{a2aclient.ErrForbidden}, []error{a2aclient.ErrUnauthenticated}, 0, "the agent says no", ""},
		{"401 plain text", 401, "text/plain", "token expired\nsecond line",
			[]error{a2aclient.ErrUnauthenticated}, nil, 0, "token expired", ""},
		{"429 plain text", 429, "text/plain; charset=utf-8", "slow down",
			[]error{a2aclient.ErrRateLimited}, nil, 0, "slow down", ""},
		{"404 HTML: no REST endpoint there", 404, "text/html", "<html><body>Cannot GET</body></html>",
			[]error{a2aclient.ErrUnreachable}, []error{a2a.ErrTaskNotFound}, 0, "", ""},
		{"400 problem+json", 400, "application/problem+json", `{"type":"about:blank","title":"Bad Request","detail":"malformed JSON at offset 3","status":400}`,
			nil, []error{a2aclient.ErrUnreachable}, 0, "Bad Request: malformed JSON at offset 3", "malformed JSON at offset 3"},
		{"502 plain text with control characters", 502, "text/plain", "bad\x1b[31m gateway",
			nil, []error{a2aclient.ErrUnreachable}, 0, "bad [31m gateway", ""},
		{"500 malformed JSON", 500, restJSON, `{"error":`,
			nil, nil, 0, "", "HTTP 500"},
		{"200 malformed JSON", 200, restJSON, `{"task":`,
			[]error{a2aclient.ErrInvalidResponse}, nil, 0, "", ""},
		{"200 empty body", 200, restJSON, ``,
			[]error{a2aclient.ErrInvalidResponse}, nil, 0, "", "empty body"},
		{"200 both task and message", 200, restJSON, `{"task":` + taskJSON + `,"message":{"messageId":"m"}}`,
			[]error{a2aclient.ErrInvalidResponse}, nil, 0, "", ""},
		{"200 duplicate keys", 200, restJSON, `{"task":` + taskJSON + `,"task":` + taskJSON + `}`,
			[]error{a2aclient.ErrInvalidResponse}, nil, 0, "", ""},
		{"200 over the size limit", 200, restJSON, `{"task":{"id":"` + strings.Repeat("x", 2<<10) + `"}}`,
			[]error{a2aclient.ErrResponseTooLarge}, nil, 0, "", ""},
		{"error body over the size limit", 400, restJSON, statusJSON(400, "INVALID_ARGUMENT", strings.Repeat("X", 2<<10), dom),
			[]error{a2aclient.ErrResponseTooLarge}, nil, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := restClient(t, &cannedREST{status: tc.status, ct: tc.ct, body: tc.body}, &a2aclient.Options{MaxResponseBytes: 1 << 10})
			_, err := c.SendMessage(t.Context(), msgReq("m", "x"))
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
			var ae *a2a.Error
			if errors.As(err, &ae) != (tc.code != 0) || tc.code != 0 && ae.Code != tc.code {
				t.Errorf("a2a error %v, want code %d", ae, tc.code)
			}
			if tc.code != 0 && tc.errContain == "" && ae.Message != "the agent says no" {
				t.Errorf("message %q", ae.Message)
			}
			if ae != nil && strings.Contains(tc.body, `"metadata"`) && !strings.Contains(tc.body, "example.com") && ae.Metadata["taskId"] != "t-1" {
				t.Errorf("ErrorInfo metadata not kept: %+v", ae)
			}
			var he *a2aclient.HTTPError
			if errors.As(err, &he) && he.Detail != tc.detail || he == nil && tc.detail != "" {
				t.Errorf("HTTPError %+v, want detail %q", he, tc.detail)
			}
			if !strings.Contains(err.Error(), tc.errContain) {
				t.Errorf("error %q does not say %q", err, tc.errContain)
			}
		})
	}
}

func TestRESTStreams(t *testing.T) {
	working := "data: " + `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}` + "\n\n"
	done := "data: " + `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}` + "\n\n"
	for _, tc := range []struct {
		name      string
		status    int
		ct, body  string
		frames    string
		want, not []error
	}{
		{"task then completion, keep-alives ignored", 200, sseType, ": keep-alive\n\n" + working + ": keep-alive\n\n" + done, "task status:TASK_STATE_COMPLETED ", nil, nil},
		{"error event named error (a2a-js)", 200, sseType, working + "event: error\ndata: " + statusJSON(404, "NOT_FOUND", "TASK_NOT_FOUND", a2a.ErrorDomain) + "\n\n",
			"task ", []error{a2a.ErrTaskNotFound}, []error{a2aclient.ErrStreamIncomplete}},
		{"error event without a name (a2a-go)", 200, sseType, "data: " + statusJSON(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", a2a.ErrorDomain) + "\n\n",
			"", []error{a2a.ErrUnsupportedOperation}, nil},
		{"error event that is not a status body", 200, sseType, "event: error\ndata: oops\n\n", "", []error{a2aclient.ErrInvalidResponse}, nil},
		{"a JSON-RPC envelope is not a REST frame", 200, sseType, `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"}}}` + "\n\n", "", []error{a2aclient.ErrInvalidResponse}, nil},
		{"malformed frame", 200, sseType, "data: {\"task\":\n\n", "", []error{a2aclient.ErrInvalidResponse}, nil},
		{"frame with two members", 200, sseType, "data: {\"task\":{\"id\":\"t\"},\"message\":{\"messageId\":\"m\"}}\n\n", "", []error{a2aclient.ErrInvalidResponse}, nil},
		{"frame over the event limit", 200, sseType, "data: {\"task\":{\"id\":\"" + strings.Repeat("x", 2<<10) + "\"}}\n\n", "", []error{a2aclient.ErrResponseTooLarge}, nil},
		{"stream closed before the end", 200, sseType, working, "task ", []error{a2aclient.ErrStreamIncomplete}, nil},
		{"refused before the stream (plain JSON)", 404, restJSON, statusJSON(404, "NOT_FOUND", "TASK_NOT_FOUND", a2a.ErrorDomain), "", []error{a2a.ErrTaskNotFound}, []error{a2aclient.ErrStreamIncomplete}},
		{"refused with an SSE content type", 503, sseType, "", "", []error{a2aclient.ErrStreamIncomplete}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := restClient(t, &cannedREST{status: tc.status, ct: tc.ct, body: tc.body}, &a2aclient.Options{MaxEventBytes: 1 << 10})
			fs, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m", "x")))
			if got := frameKinds(fs); got != tc.frames {
				t.Errorf("frames %q, want %q", got, tc.frames)
			}
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("err = %v, want %v", err, tc.want)
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
}

// A server that follows the proto (GET :subscribe) answers the spec's POST
// with 405: the client subscribes with GET, and keeps doing so.
func TestRESTSubscribeFallsBackToGET(t *testing.T) {
	a := newAgent(t, nil)
	b := newRESTBridge(t, a, func(b *restBridge) { b.refusePOSTSubscribe = true })
	c, err := a2aclient.New(b.card(""), nil)
	must(t, err)
	if c.Binding() != a2a.BindingHTTPJSON {
		t.Fatalf("binding %s: the card's first interface was not chosen", c.Binding())
	}
	for i := range 2 {
		r, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msgReq(fmt.Sprint("m-", i), "hold 1").Message, Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		must(t, err)
		var kinds []*a2a.StreamResponse
		for f, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: r.Task.ID}) {
			must(t, err)
			if len(kinds) == 0 {
				a.release <- struct{}{}
			}
			kinds = append(kinds, f)
		}
		if k := frameKinds(kinds); !strings.HasPrefix(k, "task ") || !strings.HasSuffix(k, "status:TASK_STATE_COMPLETED ") {
			t.Errorf("subscription %d: frames %s", i, k)
		}
	}
	var subs []string
	for _, r := range b.requests() {
		if strings.Contains(r, ":subscribe") {
			subs = append(subs, strings.SplitN(r, " ", 2)[0])
		}
	}
	if d := cmp.Diff([]string{"POST", "GET", "GET"}, subs); d != "" {
		t.Errorf("subscribe verbs (-want +got):\n%s", d)
	}
}

// A REST stream cut mid-way resumes with SubscribeToTask over REST, and
// the agent's frame numbers (SSE ids) keep it from losing or repeating a
// frame: the frames are those of the same exchange over JSON-RPC.
func TestRESTStreamResumesAfterCut(t *testing.T) {
	ref := newAgent(t, nil)
	close(ref.release)
	rc, err := a2aclient.New(ref.card, nil)
	must(t, err)
	want, err := collect(t, rc.SendStreamingMessage(t.Context(), msgReq("m-1", "hold 5")))
	must(t, err)
	for _, cut := range []int{6, 3} {
		t.Run(fmt.Sprint("cut after ", cut), func(t *testing.T) {
			a := newAgent(t, nil)
			var once sync.Once
			b := newRESTBridge(t, a, func(b *restBridge) {
				b.cutAfter = cut
				b.onSubscribe = func() { <-a.chunked }
				b.afterSnapshot = func() { once.Do(func() { close(a.release) }) }
			})
			c, err := a2aclient.New(b.card(""), &a2aclient.Options{ResumeBackoff: time.Millisecond})
			must(t, err)
			got, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m-1", "hold 5")))
			must(t, err)
			if d := cmp.Diff(want[:cut], got[:cut]); d != "" {
				t.Fatalf("frames before the cut (-JSON-RPC +HTTP+JSON):\n%s", d)
			}
			rest := got[cut:]
			if cut < 6 {
				if len(rest) != 2 || rest[0].Task == nil {
					t.Fatalf("after the cut got %v, want a task snapshot then the completion", frameKinds(rest))
				}
				rest = rest[1:]
			}
			if d := cmp.Diff(want[6:], rest); d != "" {
				t.Errorf("frames after the cut (-want +got):\n%s", d)
			}
			reqs := b.requests()
			if len(reqs) != 2 || reqs[0] != "POST /message:stream" || !strings.HasSuffix(reqs[1], ":subscribe") {
				t.Errorf("requests %v, want the stream then one subscription", reqs)
			}
		})
	}
}
