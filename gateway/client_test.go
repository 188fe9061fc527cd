package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// noWait is a retry policy that retries without sleeping.
func noWait(attempts int) *resilience.Policy {
	return &resilience.Policy{Attempts: attempts, Wait: func(context.Context, time.Duration) error { return nil }}
}

// startGateway serves h (the fake, or the real service in its place) and
// returns a client with token.
func startGateway(t *testing.T, h http.Handler, token string, o *ClientOptions) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if o == nil {
		o = &ClientOptions{}
	}
	if token != "" {
		o.Token = secret.New(token)
	}
	if o.Retry == nil {
		o.Retry = noWait(3)
	}
	c, err := NewClient(srv.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	aliceToken = "user-token-0001"
	bobToken   = "user-token-0002"
	svcToken   = "svc-token-0001"
)

func TestNewClient(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://h", "http://", "http://u:p@h", "http://h/?q=1", "http://h/#f", "::"} {
		if _, err := NewClient(u, nil); err == nil {
			t.Errorf("NewClient(%q) succeeded", u)
		}
	}
	if _, err := NewClient("http://h", &ClientOptions{Tenant: "a\nb"}); err == nil {
		t.Error("a tenant with a line break was accepted")
	}
	c, err := NewClient("https://gw.example/base/", nil)
	if err != nil || c.base != "https://gw.example/base" {
		t.Fatalf("NewClient = %v, %v; want base https://gw.example/base", c, err)
	}
}

func TestExecuteRequestValidate(t *testing.T) {
	ok := ExecuteRequest{InstanceID: "i1", Input: "hi"}
	with := func(f func(*ExecuteRequest)) ExecuteRequest { r := ok; f(&r); return r }
	att := func(a Attachment) ExecuteRequest {
		return with(func(r *ExecuteRequest) { r.Attachments = []Attachment{a} })
	}
	tests := []struct {
		name  string
		req   ExecuteRequest
		field string // "" for valid
	}{
		{"valid", ok, ""},
		{"input of exactly the limit in runes", with(func(r *ExecuteRequest) { r.Input = strings.Repeat("é", MaxInputChars) }), ""},
		{"no instance", with(func(r *ExecuteRequest) { r.InstanceID = "" }), "instance_id"},
		{"blank instance", with(func(r *ExecuteRequest) { r.InstanceID = "  " }), "instance_id"},
		{"no input", with(func(r *ExecuteRequest) { r.Input = "" }), "input"},
		{"input over the limit", with(func(r *ExecuteRequest) { r.Input = strings.Repeat("a", MaxInputChars+1) }), "input"},
		{"input not UTF-8", with(func(r *ExecuteRequest) { r.Input = "a\xff" }), "input"},
		{"too many attachments", with(func(r *ExecuteRequest) {
			r.Attachments = make([]Attachment, MaxAttachments+1)
		}), "attachments"},
		{"url attachment", att(Attachment{Type: "text/plain", URL: "https://files.example/a.txt", Name: "a.txt"}), ""},
		{"data attachment", att(Attachment{Type: "text/plain", Data: []byte("x"), Name: "notes v2.txt"}), ""},
		{"empty data is no data", att(Attachment{Type: "text/plain", Data: []byte{}}), "attachments[0].url"},
		{"blank input", with(func(r *ExecuteRequest) { r.Input = " \n\t" }), "input"},
		{"instance id with a space", with(func(r *ExecuteRequest) { r.InstanceID = "i 1" }), "instance_id"},
		{"instance id too long", with(func(r *ExecuteRequest) { r.InstanceID = strings.Repeat("i", 129) }), "instance_id"},
		{"thread id with a control character", with(func(r *ExecuteRequest) { r.ThreadID = "t\x01" }), "thread_id"},
		{"conversation id too long", with(func(r *ExecuteRequest) { r.ConversationID = strings.Repeat("c", 129) }), "conversation_id"},
		{"ids of the longest length", with(func(r *ExecuteRequest) {
			r.InstanceID, r.ThreadID, r.ConversationID = strings.Repeat("i", 128), strings.Repeat("t", 128), strings.Repeat("c", 128)
		}), ""},
		{"type too long", att(Attachment{Type: strings.Repeat("t", 256), URL: "https://f.example/a"}), "attachments[0].type"},
		{"type with a control character", att(Attachment{Type: "text/plain\n", URL: "https://f.example/a"}), "attachments[0].type"},
		{"url with credentials", att(Attachment{Type: "t", URL: "https://u:p@f.example/a"}), "attachments[0].url"},
		{"url too long", att(Attachment{Type: "t", URL: "https://f.example/" + strings.Repeat("a", 2048)}), "attachments[0].url"},
		{"name with a colon", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "C:evil"}), "attachments[0].name"},
		{"too many custom headers", with(func(r *ExecuteRequest) {
			r.CustomHeaders = map[string]string{}
			for i := range 33 {
				r.CustomHeaders["X-H"+strconv.Itoa(i)] = "v"
			}
		}), "custom_headers"},
		{"custom header name too long", with(func(r *ExecuteRequest) { r.CustomHeaders = map[string]string{strings.Repeat("h", 129): "v"} }), "custom_headers"},
		{"custom header value with a line break", with(func(r *ExecuteRequest) { r.CustomHeaders = map[string]string{"X-Key": "a\r\nX-Evil: 1"} }), "custom_headers"},
		{"custom header value too long", with(func(r *ExecuteRequest) { r.CustomHeaders = map[string]string{"X-Key": strings.Repeat("v", 8<<10+1)} }), "custom_headers"},
		{"custom headers at the limits", with(func(r *ExecuteRequest) {
			r.CustomHeaders = map[string]string{strings.Repeat("h", 128): strings.Repeat("v", 8<<10)}
		}), ""},
		{"no type", att(Attachment{URL: "https://files.example/a"}), "attachments[0].type"},
		{"neither url nor data", att(Attachment{Type: "text/plain"}), "attachments[0].url"},
		{"both url and data", att(Attachment{Type: "text/plain", URL: "https://f.example/a", Data: []byte("x")}), "attachments[0].url"},
		{"relative url", att(Attachment{Type: "text/plain", URL: "/a.txt"}), "attachments[0].url"},
		{"file url", att(Attachment{Type: "text/plain", URL: "file:///etc/passwd"}), "attachments[0].url"},
		{"name with slash", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a/b"}), "attachments[0].name"},
		{"name with backslash", att(Attachment{Type: "t", URL: "https://f.example/a", Name: `a\b`}), "attachments[0].name"},
		{"name with dot dot", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "..secret"}), "attachments[0].name"},
		{"name dot", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "."}), "attachments[0].name"},
		{"name with NUL", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a\x00b"}), "attachments[0].name"},
		{"name with newline", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a\nb"}), "attachments[0].name"},
		{"name with DEL", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a\x7fb"}), "attachments[0].name"},
		{"name with C1 control", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a\u0085b"}), "attachments[0].name"},
		{"name not UTF-8", att(Attachment{Type: "t", URL: "https://f.example/a", Name: "a\xffb"}), "attachments[0].name"},
		{"name of the longest length", att(Attachment{Type: "t", URL: "https://f.example/a", Name: strings.Repeat("n", MaxAttachmentNameLen)}), ""},
		{"name too long", att(Attachment{Type: "t", URL: "https://f.example/a", Name: strings.Repeat("n", MaxAttachmentNameLen+1)}), "attachments[0].name"},
		{"bad custom header name", with(func(r *ExecuteRequest) { r.CustomHeaders = map[string]string{"X Bad": "v"} }), "custom_headers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("Validate = %v, want an InvalidError on %s", err, tc.field)
			}
			for _, v := range tc.req.CustomHeaders {
				if len(v) > 3 && strings.Contains(err.Error(), v) {
					t.Errorf("the error quotes a custom header's value: %v", err)
				}
			}
		})
	}
}

func TestExecute(t *testing.T) {
	f := newFakeGateway()
	admin := startGateway(t, f, f.adminToken, &ClientOptions{Tenant: "t1", Headers: http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}})
	ctx := context.Background()
	in, err := admin.Install(ctx, InstallRequest{Name: "echo", Hosted: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	alice := startGateway(t, f, aliceToken, nil)
	res, err := alice.Execute(ctx, ExecuteRequest{
		InstanceID: in.ID, Input: "hello", ThreadID: "th1",
		Attachments: []Attachment{{Type: "text/plain", Data: []byte("file body"), Name: "a.txt"}, {Type: "image/png", URL: "https://files.example/p.png"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &ExecuteResult{RunID: res.RunID, Status: StatusQueued, ThreadID: "th1", EventsURL: EventsPath + res.RunID}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Execute (-want +got):\n%s", diff)
	}
	run, err := alice.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if string(run.Attachments[0].Data) != "file body" || run.Input != "hello" || run.Caller.UserID != "alice" {
		t.Errorf("stored run = %+v, want alice's input and the attachment's bytes", run)
	}
	var types []string
	for ev, err := range alice.Events(ctx, res.RunID, "") {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type+":"+ev.Content)
	}
	if diff := cmp.Diff([]string{"status:", "chunk:echo: hello", "status:the agent answered"}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// The wire: the admin names its tenant, every call carries the token,
	// extra headers and an Accept that takes a problem.
	for _, s := range f.requests() {
		switch s.Auth {
		case "Bearer " + f.adminToken:
			if s.Tenant != "t1" {
				t.Errorf("%s %s: X-Tenant-ID %q, want t1", s.Method, s.Path, s.Tenant)
			}
		case "Bearer " + aliceToken:
			if s.Tenant != "" {
				t.Errorf("%s %s: X-Tenant-ID %q sent without a tenant option", s.Method, s.Path, s.Tenant)
			}
		default:
			t.Errorf("%s %s: Authorization %q", s.Method, s.Path, s.Auth)
		}
		wantAccept := "application/json, application/problem+json"
		if strings.HasPrefix(s.Path, EventsPath) {
			wantAccept = "text/event-stream"
		}
		if s.Accept != wantAccept {
			t.Errorf("%s %s: Accept %q, want %q", s.Method, s.Path, s.Accept, wantAccept)
		}
		if (s.Method == http.MethodPost) != (s.ContentType == "application/json") {
			t.Errorf("%s %s: Content-Type %q", s.Method, s.Path, s.ContentType)
		}
	}
}

func TestExecuteErrors(t *testing.T) {
	f := newFakeGateway()
	admin := startGateway(t, f, f.adminToken, &ClientOptions{Tenant: "t1"})
	ctx := context.Background()
	in, err := admin.Install(ctx, InstallRequest{Name: "echo", Hosted: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		token  string
		req    ExecuteRequest
		status int
		is     error
	}{
		{"unknown instance", aliceToken, ExecuteRequest{InstanceID: "nope", Input: "x"}, 404, ErrNotFound},
		{"another tenant's instance", "other-tenant-tok", ExecuteRequest{InstanceID: in.ID, Input: "x"}, 404, ErrNotFound},
		{"custom headers from a user", aliceToken, ExecuteRequest{InstanceID: in.ID, Input: "x", CustomHeaders: map[string]string{"X-Api-Key": "v"}}, 403, ErrForbidden},
		{"an unknown token", "unknown-token-123", ExecuteRequest{InstanceID: in.ID, Input: "x"}, 401, ErrUnauthorized},
		{"no token", "", ExecuteRequest{InstanceID: in.ID, Input: "x"}, 401, ErrUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startGateway(t, f, tc.token, nil)
			_, err := c.Execute(ctx, tc.req)
			var ge *Error
			if !errors.As(err, &ge) || ge.Status != tc.status || !errors.Is(err, tc.is) {
				t.Fatalf("Execute = %v, want a %d matching %v", err, tc.status, tc.is)
			}
			if ge.Type == "" || ge.Title == "" {
				t.Errorf("problem members lost: %+v", ge)
			}
			if IsRetryable(err) {
				t.Errorf("IsRetryable(%v) = true", err)
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	t.Run("a custom header from a service account", func(t *testing.T) {
		c := startGateway(t, f, svcToken, nil)
		if _, err := c.Execute(ctx, ExecuteRequest{InstanceID: in.ID, Input: "x", CustomHeaders: map[string]string{"X-Api-Key": "v"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refused before sending", func(t *testing.T) {
		n := len(f.requests())
		c := startGateway(t, f, aliceToken, nil)
		if _, err := c.Execute(ctx, ExecuteRequest{InstanceID: in.ID}); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("Execute = %v, want ErrInvalidRequest", err)
		}
		if got := len(f.requests()); got != n {
			t.Errorf("%d requests were sent", got-n)
		}
	})
}

// countingHandler answers the first fail requests with status and then
// passes to h.
type countingHandler struct {
	h      http.Handler
	fail   int32
	status int
	calls  atomic.Int32
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.calls.Add(1) <= c.fail {
		w.Header().Set("Retry-After", "0")
		writeProblem(w, c.status, "about:blank", http.StatusText(c.status), "try later")
		return
	}
	c.h.ServeHTTP(w, r)
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	t.Run("reads are retried", func(t *testing.T) {
		f := newFakeGateway()
		f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}, Status: StatusRunning}, nil)
		h := &countingHandler{h: f, fail: 2, status: http.StatusServiceUnavailable}
		c := startGateway(t, h, aliceToken, &ClientOptions{Retry: noWait(3)})
		if _, err := c.GetRun(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if got := h.calls.Load(); got != 3 {
			t.Errorf("%d calls, want 3", got)
		}
	})
	t.Run("reads give up", func(t *testing.T) {
		h := &countingHandler{h: newFakeGateway(), fail: 10, status: http.StatusBadGateway}
		c := startGateway(t, h, aliceToken, &ClientOptions{Retry: noWait(3)})
		_, err := c.GetRun(ctx, "r1")
		var ge *Error
		if !errors.As(err, &ge) || ge.Status != 502 || !IsRetryable(err) || h.calls.Load() != 3 {
			t.Fatalf("GetRun = %v after %d calls, want a retryable 502 after 3", err, h.calls.Load())
		}
	})
	t.Run("execute is not retried", func(t *testing.T) {
		h := &countingHandler{h: newFakeGateway(), fail: 10, status: http.StatusServiceUnavailable}
		c := startGateway(t, h, aliceToken, &ClientOptions{Retry: noWait(3)})
		if _, err := c.Execute(ctx, ExecuteRequest{InstanceID: "i", Input: "x"}); !IsRetryable(err) {
			t.Fatalf("Execute = %v, want the 503", err)
		}
		if got := h.calls.Load(); got != 1 {
			t.Errorf("%d calls, want 1", got)
		}
	})
	t.Run("a write is retried when the connection was refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens: every dial is refused
		var waits atomic.Int32
		p := &resilience.Policy{Attempts: 3, Wait: func(context.Context, time.Duration) error { waits.Add(1); return nil }}
		c, err := NewClient("http://"+addr, &ClientOptions{Token: secret.New(aliceToken), Retry: p})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Execute(ctx, ExecuteRequest{InstanceID: "i", Input: "x"})
		if err == nil || !IsRetryable(err) {
			t.Fatalf("Execute = %v, want a connection error", err)
		}
		if got := waits.Load(); got != 2 {
			t.Errorf("%d waits, want 2 (3 attempts)", got)
		}
	})
}

func TestTokenNeverInErrors(t *testing.T) {
	const tok = "sk-very-secret-token-value"
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusUnauthorized, "about:blank", "refused "+r.Header.Get("Authorization"), "you sent "+r.Header.Get("Authorization"))
	})
	c := startGateway(t, echo, tok, nil)
	_, err := c.GetRun(context.Background(), "r1")
	if err == nil || strings.Contains(err.Error(), tok) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), tok) {
		t.Fatalf("err = %v: shows the token", err)
	}
	if !strings.Contains(err.Error(), secret.Redacted) {
		t.Errorf("err = %v, want the token replaced by %s", err, secret.Redacted)
	}
	for ev, err := range c.Events(context.Background(), "r1", "") {
		if err == nil || strings.Contains(err.Error(), tok) {
			t.Fatalf("Events = %+v, %v: want an error without the token", ev, err)
		}
	}
}

func TestTokenFunc(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}, Status: StatusRunning}, nil)
	var calls atomic.Int32
	c := startGateway(t, f, "", &ClientOptions{TokenFunc: func(context.Context) (secret.Value, error) {
		calls.Add(1)
		return secret.New(aliceToken), nil
	}})
	if _, err := c.GetRun(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("TokenFunc called %d times, want 1", calls.Load())
	}
	boom := errors.New("refresh failed")
	c = startGateway(t, f, "", &ClientOptions{TokenFunc: func(context.Context) (secret.Value, error) { return secret.Value{}, boom }})
	if _, err := c.GetRun(context.Background(), "r1"); !errors.Is(err, boom) {
		t.Fatalf("GetRun = %v, want the TokenFunc's error", err)
	}
}

func TestStreamingHealth(t *testing.T) {
	f := newFakeGateway()
	c := startGateway(t, f, "", nil) // no token needed
	ok, err := c.StreamingHealth(context.Background())
	if err != nil || !ok {
		t.Fatalf("StreamingHealth = %v, %v; want true", ok, err)
	}
	f.mu.Lock()
	f.healthy = false
	f.mu.Unlock()
	ok, err = c.StreamingHealth(context.Background())
	if err != nil || ok {
		t.Fatalf("StreamingHealth = %v, %v; want false, nil", ok, err)
	}
	broken := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	c = startGateway(t, broken, "", nil)
	if _, err := c.StreamingHealth(context.Background()); !errors.Is(err, ErrProtocol) {
		t.Fatalf("StreamingHealth = %v, want ErrProtocol for an answer without healthy", err)
	}
}

func TestRuns(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", InstanceID: "i1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, "")})
	f.addRun(Run{ID: "r2", InstanceID: "i2", Caller: Caller{UserID: "bob"}}, []Event{statusEvent(StatusRunning, "")})
	f.addRun(Run{ID: "r3", InstanceID: "i1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusCompleted, "done"), endEvent(StatusCompleted, "")})
	f.addRun(Run{ID: "r4", InstanceID: "i1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, ""), Event{Type: EventHITL, Payload: json.RawMessage(`{"hitl":{"question":"city?"}}`)}, statusEvent(StatusWaitingUser, "input required")})
	ctx := context.Background()
	alice := startGateway(t, f, aliceToken, nil)
	svc := startGateway(t, f, svcToken, nil)

	ids := func(p *RunPage) []string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.ID)
		}
		return out
	}
	t.Run("list", func(t *testing.T) {
		tests := []struct {
			name string
			c    *Client
			o    RunListOptions
			want []string
			next string
		}{
			{"a user sees their own", alice, RunListOptions{}, []string{"r4", "r3", "r1"}, ""},
			{"a service account sees the tenant's", svc, RunListOptions{}, []string{"r4", "r3", "r2", "r1"}, ""},
			{"by status", alice, RunListOptions{Status: StatusRunning}, []string{"r1"}, ""},
			{"by instance", svc, RunListOptions{InstanceID: "i2"}, []string{"r2"}, ""},
			{"a page", svc, RunListOptions{Limit: 2}, []string{"r4", "r3"}, "r3"},
			{"the next page", svc, RunListOptions{Limit: 2, After: "r3"}, []string{"r2", "r1"}, ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				p, err := tc.c.ListRuns(ctx, tc.o)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, ids(p)); diff != "" || p.NextCursor != tc.next {
					t.Errorf("runs (-want +got):\n%s next %q, want %q", diff, p.NextCursor, tc.next)
				}
			})
		}
		if _, err := alice.ListRuns(ctx, RunListOptions{Limit: -1}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("a negative limit: %v", err)
		}
	})
	t.Run("get", func(t *testing.T) {
		r, err := alice.GetRun(ctx, "r4")
		if err != nil || r.Status != StatusWaitingUser || r.Reason != "input required" {
			t.Fatalf("GetRun = %+v, %v", r, err)
		}
		if _, err := alice.GetRun(ctx, "r2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another user's run: %v, want ErrNotFound", err)
		}
		if _, err := alice.GetRun(ctx, ""); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("an empty id: %v", err)
		}
		if _, err := alice.GetServiceRun(ctx, "r1"); !errors.Is(err, ErrForbidden) {
			t.Errorf("the service route with a user token: %v, want ErrForbidden", err)
		}
		if r, err := svc.GetServiceRun(ctx, "r2"); err != nil || r.ID != "r2" {
			t.Errorf("GetServiceRun = %+v, %v", r, err)
		}
		// An id with path characters stays one segment.
		if _, err := alice.GetRun(ctx, "../instances"); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetRun(../instances) = %v, want ErrNotFound", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		r, err := alice.CancelRun(ctx, "r1")
		if err != nil || r.Status != StatusCancelled {
			t.Fatalf("CancelRun = %+v, %v; want CANCELLED", r, err)
		}
		if _, err := alice.CancelRun(ctx, "r3"); !errors.Is(err, ErrConflict) {
			t.Errorf("cancelling an ended run: %v, want ErrConflict", err)
		}
	})
	t.Run("reply", func(t *testing.T) {
		if _, err := alice.Reply(ctx, "r3", Reply{Input: "x"}); !errors.Is(err, ErrConflict) {
			t.Errorf("a reply to a run that waits for none: %v, want ErrConflict", err)
		}
		if _, err := alice.Reply(ctx, "r4", Reply{}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("an empty reply: %v, want ErrInvalidRequest", err)
		}
		yes := true
		res, err := alice.Reply(ctx, "r4", Reply{Input: "Paris", CallID: "c1", Approved: &yes})
		if err != nil || res.RunID != "r4" || res.Status != StatusQueued {
			t.Fatalf("Reply = %+v, %v", res, err)
		}
	})
}

func TestRunEvents(t *testing.T) {
	f := newFakeGateway()
	f.userPage = 3
	var evs []Event
	for i := range 5 {
		evs = append(evs, deltaEvent(strconv.Itoa(i)))
	}
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}, Status: StatusRunning}, evs)
	ctx := context.Background()

	seqs := func(p *RunEventsPage) []int64 {
		var out []int64
		for _, e := range p.Events {
			out = append(out, e.Sequence)
		}
		return out
	}
	t.Run("service route", func(t *testing.T) {
		svc := startGateway(t, f, svcToken, nil)
		p, err := svc.RunEvents(ctx, "r1", RunEventsOptions{Route: RouteService, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{1, 2}, seqs(p)); diff != "" || p.NextCursor != "2" || p.RequestID == "" {
			t.Fatalf("page (-want +got):\n%s cursor %q request %q", diff, p.NextCursor, p.RequestID)
		}
		if p.Events[0].EventID == "" || p.Events[0].Type != EventMessageDelta || string(p.Events[0].Data) != `{"content":"0"}` {
			t.Errorf("event = %+v", p.Events[0])
		}
		if _, err := time.Parse(time.RFC3339, p.Events[0].Timestamp); err != nil {
			t.Errorf("timestamp: %v", err)
		}
		var all []int64
		for o := (RunEventsOptions{Route: RouteService, Limit: 2}); ; {
			p, err := svc.RunEvents(ctx, "r1", o)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, seqs(p)...)
			if p.NextCursor == "" {
				break
			}
			o.After = p.NextCursor
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, all); diff != "" {
			t.Errorf("all pages (-want +got):\n%s", diff)
		}
	})
	t.Run("user route", func(t *testing.T) {
		alice := startGateway(t, f, aliceToken, nil)
		var all []int64
		pages := 0
		for o := (RunEventsOptions{Route: RouteUser, Limit: 2}); ; {
			p, err := alice.RunEvents(ctx, "r1", o)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			all = append(all, seqs(p)...)
			if p.NextCursor == "" {
				break
			}
			o.After = p.NextCursor
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, all); diff != "" || pages != 3 {
			t.Errorf("all pages (-want +got):\n%s in %d pages, want 3 (the last empty)", diff, pages)
		}
	})
	t.Run("auto falls back to the user route and remembers", func(t *testing.T) {
		alice := startGateway(t, f, aliceToken, nil)
		before := len(f.requests())
		for range 2 {
			p, err := alice.RunEvents(ctx, "r1", RunEventsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 2, 3}, seqs(p)); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		}
		var paths []string
		for _, s := range f.requests()[before:] {
			paths = append(paths, s.Path)
		}
		want := []string{ServiceRunsPath + "r1/events", RunsPath + "/r1/events", RunsPath + "/r1/events"}
		if diff := cmp.Diff(want, paths); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
	t.Run("auto remembers no route that did not answer", func(t *testing.T) {
		bob := startGateway(t, f, bobToken, nil)
		if _, err := bob.RunEvents(ctx, "r1", RunEventsOptions{}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another user's run: %v, want ErrNotFound", err)
		}
		if bob.userRoute.Load() {
			t.Error("the user route was remembered though it did not answer")
		}
	})
	t.Run("auto keeps the service route that works", func(t *testing.T) {
		svc := startGateway(t, f, svcToken, nil)
		for range 2 {
			if _, err := svc.RunEvents(ctx, "r1", RunEventsOptions{Route: RouteAuto}); err != nil {
				t.Fatal(err)
			}
		}
		if svc.userRoute.Load() {
			t.Error("a service account switched to the user route")
		}
	})
	t.Run("bad options", func(t *testing.T) {
		c := startGateway(t, f, aliceToken, nil)
		for _, o := range []RunEventsOptions{{Route: "both"}, {Limit: -1}} {
			if _, err := c.RunEvents(ctx, "r1", o); !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("RunEvents(%+v) = %v, want ErrInvalidRequest", o, err)
			}
		}
		if _, err := c.RunEvents(ctx, "r1", RunEventsOptions{Route: RouteUser, After: "99"}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("a cursor past the end: %v, want a 400", err)
		}
	})
}

func TestInstances(t *testing.T) {
	f := newFakeGateway()
	c := startGateway(t, f, f.adminToken, &ClientOptions{Tenant: "t1"})
	ctx := context.Background()
	a, err := c.Install(ctx, InstallRequest{
		Name: "alpha", URL: "https://agents.example/alpha", Config: map[string]any{"k": "v"},
		Secrets: map[string]secret.Value{"API_KEY": secret.New("s3cret"), "OTHER": secret.New("o")},
		Memory:  true, MemoryBudget: &MemoryBudget{TokenBudget: 2000, LatencyBudgetMS: 150},
		Scopes: []string{"memory:read:*"}, CustomHeaders: []string{"X-Api-Key"}, Published: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Instance{
		ID: a.ID, TenantID: "t1", Name: "alpha", URL: "https://agents.example/alpha", Config: map[string]any{"k": "v"},
		SecretNames: []string{"API_KEY", "OTHER"}, Memory: true, MemoryBudget: &MemoryBudget{TokenBudget: 2000, LatencyBudgetMS: 150},
		Scopes: []string{"memory:read:*"}, CustomHeaders: []string{"X-Api-Key"}, Published: true, Version: 1,
	}
	if diff := cmp.Diff(want, *a, cmpopts.IgnoreFields(Instance{}, "CreatedAt", "UpdatedAt")); diff != "" {
		t.Errorf("Install (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	gotSecret := f.instances[a.ID].secrets["API_KEY"]
	f.mu.Unlock()
	if gotSecret != "s3cret" {
		t.Errorf("the gateway got secret %q", gotSecret)
	}
	for _, name := range []string{"beta", "gamma"} {
		if _, err := c.Install(ctx, InstallRequest{Name: name, Hosted: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Install(ctx, InstallRequest{Name: "beta", Hosted: "echo"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a taken name: %v, want ErrConflict", err)
	}
	if reg, err := c.Install(ctx, InstallRequest{Name: "from-registry", AgentID: "weather"}); err != nil || reg.AgentID != "weather" {
		t.Fatalf("Install by agent id = %+v, %v", reg, err)
	}
	// A pull agent names no target; its grants go as they are.
	pull, err := c.Install(ctx, InstallRequest{Name: "laptop", Delivery: DeliveryPull, BillingMode: "agent", ToolClass: "scoped"})
	if err != nil || !pull.Pulls() || pull.BillingMode != "agent" || pull.ToolClass != "scoped" {
		t.Fatalf("Install of a pull agent = %+v, %v", pull, err)
	}
	if err := c.RemoveInstance(ctx, pull.ID); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []InstallRequest{
		{Name: "x", Delivery: DeliveryPull, Hosted: "echo"},
		{Hosted: "echo"}, {Name: "x"}, {Name: "x", Hosted: "echo", URL: "https://a.example"}, {Name: "x", URL: "https://a.example", AgentID: "a"},
		{Name: "x", Delivery: DeliveryPull, URL: "https://a.example"}, {Name: "Upper", Hosted: "echo"}, {Name: "-dash", Hosted: "echo"}, {Name: "sp ace", Hosted: "echo"}, {Name: strings.Repeat("n", 65), Hosted: "echo"},
	} {
		if _, err := c.Install(ctx, bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Install(%+v) = %v, want ErrInvalidRequest", bad, err)
		}
	}

	p, err := c.ListInstances(ctx, InstanceListOptions{Limit: 2})
	if err != nil || len(p.Instances) != 2 || p.Instances[0].Name != "alpha" || p.NextCursor != "beta" {
		t.Fatalf("ListInstances = %+v, %v", p, err)
	}
	p, err = c.ListInstances(ctx, InstanceListOptions{After: p.NextCursor})
	if err != nil || len(p.Instances) != 2 || p.Instances[0].Name != "from-registry" || p.Instances[1].Name != "gamma" || p.NextCursor != "" {
		t.Fatalf("ListInstances page 2 = %+v, %v", p, err)
	}

	off, name := false, "alpha2"
	u, err := c.UpdateInstance(ctx, a.ID, InstanceUpdate{
		Name: &name, Published: &off, Scopes: []string{},
		SetSecrets: map[string]secret.Value{"NEW": secret.New("n")}, RemoveSecrets: []string{"OTHER"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "alpha2" || u.Published || len(u.Scopes) != 0 || !cmp.Equal([]string{"API_KEY", "NEW"}, u.SecretNames) || u.Version != 2 || !u.Memory {
		t.Errorf("UpdateInstance = %+v", u)
	}
	hosted, url, bad := "echo", "https://a.example", "Bad Name"
	for name, upd := range map[string]InstanceUpdate{
		"a secret set and removed": {SetSecrets: map[string]secret.Value{"A": secret.New("x")}, RemoveSecrets: []string{"A"}},
		"two targets":              {Hosted: &hosted, URL: &url},
		"a bad name":               {Name: &bad},
	} {
		if _, err := c.UpdateInstance(ctx, a.ID, upd); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	g, err := c.GetInstance(ctx, a.ID)
	if err != nil || g.Name != "alpha2" {
		t.Fatalf("GetInstance = %+v, %v", g, err)
	}
	if err := c.RemoveInstance(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInstance(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a removed instance: %v, want ErrNotFound", err)
	}
	if err := c.RemoveInstance(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing twice: %v, want ErrNotFound", err)
	}
}

// The secrets of a request never show when it is printed or logged as
// JSON; only the body sent has them.
func TestInstallRequestPrintsNoSecret(t *testing.T) {
	r := InstallRequest{Name: "a", Hosted: "echo", Secrets: map[string]secret.Value{"K": secret.New("s3cret-value")}}
	u := InstanceUpdate{SetSecrets: map[string]secret.Value{"K": secret.New("s3cret-value")}}
	rj, _ := json.Marshal(r)
	uj, _ := json.Marshal(u)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", r, r, r), fmt.Sprintf("%v %+v %#v", u, u, u), string(rj), string(uj)} {
		if strings.Contains(s, "s3cret-value") {
			t.Errorf("printed: %s", s)
		}
	}
}

func TestInstanceUpdateJSON(t *testing.T) {
	yes, agent := true, "weather"
	tests := []struct {
		name string
		u    InstanceUpdate
		want string
	}{
		{"nothing", InstanceUpdate{}, `{}`},
		{"a new target", InstanceUpdate{AgentID: &agent}, `{"agent_id":"weather"}`},
		{"clear scopes", InstanceUpdate{Scopes: []string{}}, `{"scopes":[]}`},
		{"flags", InstanceUpdate{Memory: &yes, Published: &yes}, `{"memory":true,"published":true}`},
		{"secrets", InstanceUpdate{SetSecrets: map[string]secret.Value{"A": secret.New("a")}, RemoveSecrets: []string{"B"}}, `{"secrets":{"A":"a","B":null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.u.wire()
			if err != nil || string(b) != tc.want {
				t.Errorf("Marshal = %s, %v; want %s", b, err, tc.want)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	sentinels := []error{ErrInvalidRequest, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrConflict}
	tests := []struct {
		status    int
		want      error
		retryable bool
	}{
		{400, ErrInvalidRequest, false},
		{413, ErrInvalidRequest, false},
		{401, ErrUnauthorized, false},
		{403, ErrForbidden, false},
		{404, ErrNotFound, false},
		{409, ErrConflict, false},
		{429, nil, true},
		{500, nil, false},
		{502, nil, true},
		{503, nil, true},
		{504, nil, true},
	}
	for _, tc := range tests {
		err := fmt.Errorf("wrapped: %w", &Error{Status: tc.status})
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != (s == tc.want) {
				t.Errorf("%d: errors.Is(%v) = %v", tc.status, s, got)
			}
		}
		if IsRetryable(err) != tc.retryable {
			t.Errorf("%d: IsRetryable = %v, want %v", tc.status, !tc.retryable, tc.retryable)
		}
	}
	for _, err := range []error{nil, context.Canceled, ErrMalformedEvent, ErrProtocol, &InvalidError{Field: "x"}} {
		if IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = true", err)
		}
	}
	for _, err := range []error{ErrStreamEnded, context.DeadlineExceeded, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}} {
		if !IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = false", err)
		}
	}
}

// collect runs an event iteration to its end.
func collect(seq func(func(StreamEvent, error) bool)) ([]StreamEvent, error) {
	var evs []StreamEvent
	var last error
	for ev, err := range seq {
		if err != nil {
			last = err
			continue
		}
		if last != nil {
			return evs, fmt.Errorf("an event after the error %v", last)
		}
		evs = append(evs, ev)
	}
	return evs, last
}

// TestEventsKB15 checks that every way a run ends is recognised for what
// it is, by Events and by EventsWithReconnect alike.
func TestEventsKB15(t *testing.T) {
	tests := []struct {
		name     string
		events   []Event
		wantLast string // type:status of the last event yielded
		failure  bool
		n        int
	}{
		{
			name:     "completed",
			events:   []Event{statusEvent(StatusRunning, ""), deltaEvent("a"), statusEvent(StatusCompleted, "answered"), endEvent(StatusCompleted, "")},
			wantLast: "status:COMPLETED", n: 3,
		},
		{
			name:     "a failure after the agent returned, with no error event",
			events:   []Event{statusEvent(StatusRunning, ""), deltaEvent("a"), {Type: EventMessageFinal, Payload: json.RawMessage(`{"content":"a"}`)}, statusEvent(StatusFailed, "output failed its schema")},
			wantLast: "status:FAILED", failure: true, n: 4,
		},
		{
			name:     "a cancelled run",
			events:   []Event{statusEvent(StatusRunning, ""), statusEvent(StatusCancelled, "cancelled by the user"), endEvent(StatusCancelled, "cancelled by the user")},
			wantLast: "status:CANCELLED", failure: true, n: 2,
		},
		{
			name:     "an error event alone",
			events:   []Event{statusEvent(StatusRunning, ""), endEvent(StatusFailed, "agent unreachable")},
			wantLast: "error:", failure: true, n: 2,
		},
		{
			name:     "an agent's progress saying completed ends nothing",
			events:   []Event{statusEvent(StatusRunning, ""), {Type: EventStatus, Payload: json.RawMessage(`{"message":"completed step 1","status":"completed"}`)}, statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, "")},
			wantLast: "status:COMPLETED", n: 3,
		},
		{
			name:     "a pause, an answer, and the end",
			events:   []Event{statusEvent(StatusRunning, ""), {Type: EventHITL, Payload: json.RawMessage(`{"hitl":{"question":"city?"}}`)}, statusEvent(StatusWaitingUser, "input required"), statusEvent(StatusRunning, ""), statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, "")},
			wantLast: "status:COMPLETED", n: 5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGateway()
			f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, tc.events)
			c := startGateway(t, f, aliceToken, nil)
			check := func(t *testing.T, evs []StreamEvent, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("iteration failed: %v", err)
				}
				if len(evs) != tc.n {
					t.Fatalf("%d events, want %d", len(evs), tc.n)
				}
				last := evs[len(evs)-1]
				if got := last.Type + ":" + string(last.Status); got != tc.wantLast {
					t.Errorf("last event %s, want %s", got, tc.wantLast)
				}
				if !last.IsTerminal() || last.IsFailure() != tc.failure {
					t.Errorf("last event: IsTerminal %v IsFailure %v, want true %v", last.IsTerminal(), last.IsFailure(), tc.failure)
				}
				for i, ev := range evs {
					if want := strconv.Itoa(i + 1); ev.ID != want || ev.Sequence != int64(i+1) || ev.RunID != "r1" {
						t.Errorf("event %d: id %q sequence %d run %q", i, ev.ID, ev.Sequence, ev.RunID)
					}
					if i < len(evs)-1 && ev.IsTerminal() {
						t.Errorf("event %d (%s) is terminal", i, ev.Type)
					}
				}
			}
			t.Run("Events", func(t *testing.T) {
				evs, err := collect(c.Events(context.Background(), "r1", ""))
				check(t, evs, err)
			})
			t.Run("EventsWithReconnect", func(t *testing.T) {
				evs, err := collect(c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{Sleep: failSleep(t)}))
				check(t, evs, err)
			})
		})
	}
}

func failSleep(t *testing.T) func(context.Context, time.Duration) error {
	return func(context.Context, time.Duration) error {
		t.Error("a reconnect where none was due")
		return errors.New("no reconnect expected")
	}
}

func TestEventsResume(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, ""), deltaEvent("a"), deltaEvent("b"), statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, "")})
	c := startGateway(t, f, aliceToken, nil)
	ctx := context.Background()
	evs, err := collect(c.Events(ctx, "r1", "2"))
	if err != nil || len(evs) != 2 || evs[0].Content != "b" || evs[0].ID != "3" {
		t.Fatalf("Events after 2 = %+v, %v; want b and the status", evs, err)
	}
	reqs := f.requests()
	if got := reqs[len(reqs)-1].LastEventID; got != "2" {
		t.Errorf("Last-Event-ID %q, want 2", got)
	}
	evs, err = collect(c.EventsWithReconnect(ctx, "r1", &ReconnectOptions{LastEventID: "3", Sleep: failSleep(t)}))
	if err != nil || len(evs) != 1 || evs[0].Status != StatusCompleted {
		t.Fatalf("EventsWithReconnect after 3 = %+v, %v", evs, err)
	}
	for _, bad := range []string{"99", "-1", "abc", "01"} {
		_, err := collect(c.Events(ctx, "r1", bad))
		if !errors.Is(err, ErrInvalidRequest) || IsRetryable(err) {
			t.Errorf("Last-Event-ID %q: %v, want a final 400", bad, err)
		}
		_, err = collect(c.EventsWithReconnect(ctx, "r1", &ReconnectOptions{LastEventID: bad, Sleep: failSleep(t)}))
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("EventsWithReconnect from %q: %v, want a 400 at once", bad, err)
		}
	}
	if _, err := collect(c.Events(ctx, "r1", "1\r\nX-Evil: 1")); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("a Last-Event-ID with a line break: %v", err)
	}
	if _, err := collect(c.Events(ctx, "nope", "")); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run: %v, want ErrNotFound", err)
	}
	bob := startGateway(t, f, bobToken, nil)
	if _, err := collect(bob.EventsWithReconnect(ctx, "r1", &ReconnectOptions{Sleep: failSleep(t)})); !errors.Is(err, ErrNotFound) {
		t.Errorf("another user's run: %v, want ErrNotFound at once", err)
	}
}

func TestEventsStopEarly(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, ""), deltaEvent("a"), deltaEvent("b")})
	c := startGateway(t, f, aliceToken, nil)
	for _, seq := range []func(func(StreamEvent, error) bool){
		c.Events(context.Background(), "r1", ""),
		c.EventsWithReconnect(context.Background(), "r1", nil),
	} {
		n := 0
		for range seq {
			n++
			break
		}
		if n != 1 {
			t.Errorf("%d events after break", n)
		}
	}
}

func TestEventsWithReconnectAuthFailure(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, "")})
	c := startGateway(t, f, "wrong-token-000", nil)
	_, err := collect(c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{Sleep: failSleep(t)}))
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "wrong-token-000") {
		t.Fatalf("err = %v, want ErrUnauthorized at once, without the token", err)
	}
}

func TestEventsWithReconnectGivesUp(t *testing.T) {
	h := &countingHandler{h: newFakeGateway(), fail: 100, status: http.StatusServiceUnavailable}
	c := startGateway(t, h, aliceToken, nil)
	var waits []time.Duration
	o := &ReconnectOptions{
		MaxRetries: 4, InitialBackoff: time.Second, MaxBackoff: 5 * time.Second,
		Rand:  func() float64 { return 0.5 }, // no jitter
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	}
	_, err := collect(c.EventsWithReconnect(context.Background(), "r1", o))
	var ge *Error
	if !errors.As(err, &ge) || ge.Status != 503 {
		t.Fatalf("err = %v, want the last 503", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if got := h.calls.Load(); got != 5 {
		t.Errorf("%d connections, want 5 (1 + 4 reconnects)", got)
	}

	// No reconnect at all.
	h.calls.Store(0)
	waits = nil
	o.MaxRetries = -1
	if _, err := collect(c.EventsWithReconnect(context.Background(), "r1", o)); err == nil || len(waits) != 0 || h.calls.Load() != 1 {
		t.Errorf("MaxRetries -1: %v after %d connections, %d waits", err, h.calls.Load(), len(waits))
	}
}

func TestEventsWithReconnectCancelled(t *testing.T) {
	h := &countingHandler{h: newFakeGateway(), fail: 100, status: http.StatusServiceUnavailable}
	c := startGateway(t, h, aliceToken, nil)
	ctx, cancel := context.WithCancel(context.Background())
	o := &ReconnectOptions{Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }}
	_, err := collect(c.EventsWithReconnect(ctx, "r1", o))
	if !errors.Is(err, context.Canceled) || h.calls.Load() != 1 {
		t.Fatalf("err = %v after %d connections, want context.Canceled after 1", err, h.calls.Load())
	}
}

func TestBackoff(t *testing.T) {
	o := &ReconnectOptions{InitialBackoff: time.Second, MaxBackoff: 30 * time.Second}
	tests := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0.5, time.Second},
		{1, 0, 500 * time.Millisecond},
		{1, 0.999, 1499 * time.Millisecond},
		{2, 0.5, 2 * time.Second},
		{3, 0.5, 4 * time.Second},
		{5, 0.5, 16 * time.Second},
		{5, 0.99, 23840 * time.Millisecond},
		{6, 0.99, 30 * time.Second}, // 44.7s held to the cap
		{6, 0.5, 30 * time.Second},
		{6, 0, 15 * time.Second},
		{100, 0.5, 30 * time.Second},
	}
	for _, tc := range tests {
		if got := o.backoff(tc.n, tc.r); got.Round(time.Millisecond) != tc.want {
			t.Errorf("backoff(%d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
	var zero ReconnectOptions
	if got := zero.backoff(1, 0.5); got != DefaultInitialBackoff {
		t.Errorf("default backoff(1) = %v", got)
	}
	if got := zero.backoff(30, 0.5); got != DefaultMaxBackoff {
		t.Errorf("default backoff(30) = %v", got)
	}
}

// A live run that pauses: the stream stays open through WAITING_USER,
// the reply continues the same run id, and the stream ends with it.
func TestEventsLivePauseAndReply(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, "")})
	c := startGateway(t, f, aliceToken, nil)
	ctx := context.Background()
	paused := make(chan struct{})
	done := make(chan error, 1)
	var got []StreamEvent
	go func() {
		o := &ReconnectOptions{Sleep: func(context.Context, time.Duration) error { return errors.New("unexpected reconnect") }}
		for ev, err := range c.EventsWithReconnect(ctx, "r1", o) {
			if err != nil {
				done <- err
				return
			}
			got = append(got, ev)
			if ev.Status == StatusWaitingUser {
				close(paused)
			}
		}
		done <- nil
	}()
	f.appendEvents("r1", Event{Type: EventHITL, Payload: json.RawMessage(`{"hitl":{"question":"Which city?"}}`)}, statusEvent(StatusWaitingUser, "input required"))
	// The client has seen the pause, and its stream stays open for what
	// follows the answer.
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the iteration ended at the pause: %v", err)
	}
	if _, err := c.Reply(ctx, "r1", Reply{Input: "Paris"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range got {
		types = append(types, ev.Type+":"+string(ev.Status)+":"+ev.Content)
	}
	want := []string{"status:RUNNING:", "hitl::", "status:WAITING_USER:input required", "status:RUNNING:", "chunk::you said: Paris", "status:COMPLETED:the agent answered"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestEventsLiveCancel(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, ""), deltaEvent("working")})
	c := startGateway(t, f, aliceToken, nil)
	ctx := context.Background()
	seenDelta := make(chan struct{})
	done := make(chan []StreamEvent, 1)
	go func() {
		var evs []StreamEvent
		for ev, err := range c.Events(ctx, "r1", "") {
			if err != nil {
				t.Error(err)
				break
			}
			evs = append(evs, ev)
			if ev.Type == EventChunk {
				close(seenDelta)
			}
		}
		done <- evs
	}()
	<-seenDelta
	if _, err := c.CancelRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	evs := <-done
	last := evs[len(evs)-1]
	if len(evs) != 3 || last.Status != StatusCancelled || !last.IsTerminal() || !last.IsFailure() {
		t.Fatalf("events %+v, want the cancellation last", evs)
	}
}

// A stream that drops mid-run resumes after the last id it saw.
func TestEventsWithReconnectAfterADrop(t *testing.T) {
	f := newFakeGateway()
	evs := []Event{statusEvent(StatusRunning, "")}
	for i := range 6 {
		evs = append(evs, deltaEvent(strconv.Itoa(i)))
	}
	evs = append(evs, statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, ""))
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, evs)
	first := len(": keepalive\n\n") + len(frame(Event{RunID: "r1", Sequence: 1, Type: EventStatus, Payload: evs[0].Payload, At: f.now().Add(time.Millisecond)}))
	cut := &cutter{h: f, limit: 1, budget: func() int { return first + 20 }} // one frame and part of the next
	c := startGateway(t, cut, aliceToken, nil)
	var waits int
	got, err := collect(c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{Sleep: func(context.Context, time.Duration) error { waits++; return nil }}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || waits != 1 {
		t.Fatalf("%d events after %d waits, want 8 after 1", len(got), waits)
	}
	var lastIDs []string
	for _, s := range f.requests() {
		if s.Path == EventsPath+"r1" {
			lastIDs = append(lastIDs, s.LastEventID)
		}
	}
	if diff := cmp.Diff([]string{"", "1"}, lastIDs); diff != "" {
		t.Errorf("Last-Event-IDs sent (-want +got):\n%s", diff)
	}
}

// Events resumed across 1,000 random connection cuts: every event exactly
// once, in order.
func TestEventsWithReconnectThousandCuts(t *testing.T) {
	checkResumeAcrossCuts(t, func(t *testing.T, n int) (http.Handler, string) {
		f := newFakeGateway()
		evs := []Event{statusEvent(StatusRunning, "")}
		for i := range n - 3 {
			evs = append(evs, deltaEvent(strconv.Itoa(i)))
		}
		evs = append(evs, statusEvent(StatusCompleted, "answered"), endEvent(StatusCompleted, ""))
		f.addRun(Run{ID: "run-cuts", Caller: Caller{UserID: "alice"}}, evs)
		return f, "run-cuts"
	}, aliceToken)
}

// checkResumeAcrossCuts starts a run of n events behind newRun's handler
// (the fake, or the real service), cuts its event stream 1,000 times at
// random byte offsets (and before the answer's headers), and checks that
// EventsWithReconnect yields events 1..n exactly once, in order.
func checkResumeAcrossCuts(t *testing.T, newRun func(t *testing.T, n int) (http.Handler, string), token string) {
	const (
		events = 4000
		cuts   = 1000
	)
	h, runID := newRun(t, events)
	rng := rand.New(rand.NewPCG(21, 1000))
	cut := &cutter{h: h, limit: cuts, budget: func() int {
		if rng.IntN(10) == 0 {
			return -1 // before any byte of the answer
		}
		return rng.IntN(600)
	}}
	c := startGateway(t, cut, token, nil)
	var waits []time.Duration
	o := &ReconnectOptions{
		MaxRetries: 50,
		Rand:       rand.New(rand.NewPCG(21, 2000)).Float64, // the client's own: the server draws from rng
		Sleep:      func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	}
	var next int64 = 1
	for ev, err := range c.EventsWithReconnect(context.Background(), runID, o) {
		if err != nil {
			t.Fatalf("after event %d: %v", next-1, err)
		}
		if ev.Sequence != next || ev.ID != strconv.FormatInt(next, 10) {
			t.Fatalf("event id %s sequence %d, want %d", ev.ID, ev.Sequence, next)
		}
		next++
	}
	if next-1 != events-1 { // the done after the terminal status is not read
		t.Fatalf("%d events, want %d", next-1, events-1)
	}
	made, conns := cut.stats()
	if made != cuts {
		t.Fatalf("%d cuts, want %d", made, cuts)
	}
	if len(waits) != cuts {
		t.Errorf("%d reconnect waits for %d cuts", len(waits), cuts)
	}
	for _, d := range waits {
		if d < DefaultInitialBackoff/2 || d > DefaultMaxBackoff {
			t.Errorf("wait %v outside [%v, %v]", d, DefaultInitialBackoff/2, DefaultMaxBackoff)
		}
	}
	t.Logf("%d events over %d connections, %d cuts", events-1, conns, made)
}

// A 204 tells an SSE client not to reconnect: the iteration ends quietly.
func TestEventsNoContent(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	c := startGateway(t, h, aliceToken, nil)
	for name, seq := range map[string]func(func(StreamEvent, error) bool){
		"Events":              c.Events(context.Background(), "r1", "9"),
		"EventsWithReconnect": c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{LastEventID: "9", Sleep: failSleep(t)}),
	} {
		evs, err := collect(seq)
		if err != nil || len(evs) != 0 {
			t.Errorf("%s = %d events, %v; want none and no error", name, len(evs), err)
		}
	}
}

func TestEventsNotAStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]string{"a": "b"}) })
	c := startGateway(t, h, aliceToken, nil)
	_, err := collect(c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{Sleep: failSleep(t)}))
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol at once", err)
	}
}

// Without a token option, an Authorization the caller put in Headers is
// sent as it is; with one, the token replaces it.
func TestHeadersAuthorization(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}, Status: StatusRunning}, nil)
	c := startGateway(t, f, "", &ClientOptions{Headers: http.Header{"Authorization": {"Bearer " + aliceToken}}})
	if _, err := c.GetRun(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	c = startGateway(t, f, bobToken, &ClientOptions{Headers: http.Header{"Authorization": {"Bearer " + aliceToken}}})
	if _, err := c.GetRun(context.Background(), "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRun as bob = %v, want ErrNotFound", err)
	}
}

// oneFrame lets each event stream write its keepalive and one frame, and
// then drops the connection.
type oneFrame struct{ h http.Handler }

func (o oneFrame) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.h.ServeHTTP(&framesWriter{ResponseWriter: w, left: 2}, r)
}

type framesWriter struct {
	http.ResponseWriter
	left int
}

func (w *framesWriter) Write(p []byte) (int, error) {
	if w.left == 0 {
		panic(http.ErrAbortHandler)
	}
	w.left--
	return w.ResponseWriter.Write(p)
}

func (w *framesWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// Every event received resets the count of reconnects in a row: a stream
// cut after each event reaches its end with MaxRetries 1.
func TestEventsWithReconnectResetsTheCount(t *testing.T) {
	f := newFakeGateway()
	evs := []Event{statusEvent(StatusRunning, "")}
	for i := range 20 {
		evs = append(evs, deltaEvent(strconv.Itoa(i)))
	}
	evs = append(evs, statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, ""))
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, evs)
	c := startGateway(t, oneFrame{f}, aliceToken, nil)
	var waits []time.Duration
	o := &ReconnectOptions{
		MaxRetries: 1, Rand: func() float64 { return 0.5 },
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	}
	got, err := collect(c.EventsWithReconnect(context.Background(), "r1", o))
	if err != nil || len(got) != 22 {
		t.Fatalf("%d events, %v; want 22", len(got), err)
	}
	for i, d := range waits {
		if d != DefaultInitialBackoff {
			t.Fatalf("wait %d = %v, want the first backoff every time", i, d)
		}
	}
	if len(waits) != 21 {
		t.Errorf("%d waits, want 21", len(waits))
	}
}

// A 429's Retry-After is honoured when it is longer than the backoff.
func TestEventsWithReconnectRetryAfter(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, "")})
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "3")
			writeProblem(w, http.StatusTooManyRequests, "about:blank", "Too Many Requests", "slow down")
			return
		}
		f.ServeHTTP(w, r)
	})
	c := startGateway(t, h, aliceToken, nil)
	var waits []time.Duration
	o := &ReconnectOptions{
		Rand:  func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	}
	got, err := collect(c.EventsWithReconnect(context.Background(), "r1", o))
	if err != nil || len(got) != 1 {
		t.Fatalf("%d events, %v", len(got), err)
	}
	if diff := cmp.Diff([]time.Duration{3 * time.Second, 3 * time.Second}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// Held to MaxBackoff.
	calls.Store(0)
	waits = nil
	o.MaxBackoff = 2 * time.Second
	if _, err := collect(c.EventsWithReconnect(context.Background(), "r1", o)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second, 2 * time.Second}, waits); diff != "" {
		t.Errorf("waits under MaxBackoff 2s (-want +got):\n%s", diff)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is two bytes: cut before it, not inside
		{"日本", 4, "日…"},
		{"日本", 2, "…"},
	}
	for _, tc := range tests {
		if got := clip(tc.s, tc.n); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// Every call checks its ids and options before it sends anything.
func TestRefusedBeforeSending(t *testing.T) {
	f := newFakeGateway()
	c := startGateway(t, f, aliceToken, nil)
	ctx := context.Background()
	long := strings.Repeat("x", 257)
	calls := map[string]func() error{
		"GetRun control":   func() error { _, err := c.GetRun(ctx, "r\x00"); return err },
		"GetRun long":      func() error { _, err := c.GetRun(ctx, long); return err },
		"GetRun not UTF-8": func() error { _, err := c.GetRun(ctx, "r\xff"); return err },
		"GetServiceRun":    func() error { _, err := c.GetServiceRun(ctx, ""); return err },
		"CancelRun":        func() error { _, err := c.CancelRun(ctx, ""); return err },
		"Reply no id":      func() error { _, err := c.Reply(ctx, "", Reply{Input: "x"}); return err },
		"Reply too long": func() error {
			_, err := c.Reply(ctx, "r1", Reply{Input: strings.Repeat("a", MaxInputChars+1)})
			return err
		},
		"RunEvents":              func() error { _, err := c.RunEvents(ctx, "", RunEventsOptions{}); return err },
		"GetInstance":            func() error { _, err := c.GetInstance(ctx, ""); return err },
		"UpdateInstance":         func() error { _, err := c.UpdateInstance(ctx, "", InstanceUpdate{}); return err },
		"RemoveInstance":         func() error { return c.RemoveInstance(ctx, "") },
		"ListInstances negative": func() error { _, err := c.ListInstances(ctx, InstanceListOptions{Limit: -1}); return err },
		"Events no id": func() error {
			_, err := collect(c.Events(ctx, "", ""))
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

func TestMalformedAnswers(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
		call func(c *Client) error
	}{
		{
			name: "not JSON",
			h:    func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) },
			call: func(c *Client) error { _, err := c.GetRun(context.Background(), "r1"); return err },
		},
		{
			name: "an unexpected success status",
			h:    func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusAccepted, map[string]string{}) },
			call: func(c *Client) error { _, err := c.GetRun(context.Background(), "r1"); return err },
		},
		{
			name: "execute without a run id",
			h: func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusAccepted, map[string]string{"status": "QUEUED"})
			},
			call: func(c *Client) error {
				_, err := c.Execute(context.Background(), ExecuteRequest{InstanceID: "i", Input: "x"})
				return err
			},
		},
		{
			name: "a field of the wrong type",
			h:    func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"run_id": 5}`)) },
			call: func(c *Client) error { _, err := c.GetRun(context.Background(), "r1"); return err },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startGateway(t, tc.h, aliceToken, nil)
			if err := tc.call(c); !errors.Is(err, ErrProtocol) || IsRetryable(err) {
				t.Fatalf("err = %v, want a final ErrProtocol", err)
			}
		})
	}
	t.Run("an error answer that is not a problem", func(t *testing.T) {
		c := startGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "teapot "+aliceToken, http.StatusTeapot)
		}), aliceToken, nil)
		_, err := c.GetRun(context.Background(), "r1")
		var ge *Error
		if !errors.As(err, &ge) || ge.Status != http.StatusTeapot || ge.Type != "about:blank" || ge.Title != "I'm a teapot" || ge.Detail != "" {
			t.Fatalf("err = %#v", err)
		}
	})
}

// stallOnce lets the first event stream write its keepalive and one
// frame, and then go silent until the client leaves: a connection that
// died without a word. Later streams pass.
type stallOnce struct {
	h     http.Handler
	once  atomic.Bool
	ended chan struct{}
}

func (s *stallOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, EventsPath) || s.once.Swap(true) {
		s.h.ServeHTTP(w, r)
		return
	}
	s.h.ServeHTTP(&stallWriter{ResponseWriter: w, left: 2, done: r.Context().Done(), ended: s.ended}, r)
}

type stallWriter struct {
	http.ResponseWriter
	left  int
	done  <-chan struct{}
	ended chan struct{}
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if w.left == 0 {
		<-w.done // silent until the client gives up on the connection
		close(w.ended)
		panic(http.ErrAbortHandler)
	}
	w.left--
	return w.ResponseWriter.Write(p)
}

func (w *stallWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func TestEventsIdle(t *testing.T) {
	f := newFakeGateway()
	f.addRun(Run{ID: "r1", Caller: Caller{UserID: "alice"}}, []Event{statusEvent(StatusRunning, ""), deltaEvent("a"), statusEvent(StatusCompleted, ""), endEvent(StatusCompleted, "")})
	t.Run("Events", func(t *testing.T) {
		h := &stallOnce{h: f, ended: make(chan struct{})}
		c := startGateway(t, h, aliceToken, &ClientOptions{StreamIdleTimeout: 20 * time.Millisecond})
		evs, err := collect(c.Events(context.Background(), "r1", ""))
		if !errors.Is(err, ErrStreamIdle) || !IsRetryable(err) || len(evs) != 1 {
			t.Fatalf("%d events, %v; want 1 and a retryable ErrStreamIdle", len(evs), err)
		}
		<-h.ended // the client closed the silent connection
	})
	t.Run("EventsWithReconnect", func(t *testing.T) {
		h := &stallOnce{h: f, ended: make(chan struct{})}
		c := startGateway(t, h, aliceToken, &ClientOptions{StreamIdleTimeout: 20 * time.Millisecond})
		waits := 0
		evs, err := collect(c.EventsWithReconnect(context.Background(), "r1", &ReconnectOptions{Sleep: func(context.Context, time.Duration) error { waits++; return nil }}))
		if err != nil || len(evs) != 3 || waits != 1 {
			t.Fatalf("%d events after %d waits, %v; want 3 after 1", len(evs), waits, err)
		}
		if evs[1].ID != "2" || evs[1].Content != "a" {
			t.Errorf("second event %+v", evs[1])
		}
	})
}
