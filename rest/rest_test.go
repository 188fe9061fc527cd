package rest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
	"novaos.dev/novaos/secret"
)

const testToken = "tok-0123456789abcdef"

// roundTripper answers every request with its func and counts them.
type roundTripper struct {
	n  int
	fn func(*http.Request) (*http.Response, error)
}

func (rt *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.n++
	return rt.fn(r)
}

func answer(status int, contentType, body string) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
}

func noWait(context.Context, time.Duration) error { return nil }

// A dial that failed sent nothing; a read that failed did.
var (
	errDial = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	errRead = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
)

func fail(err error) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}

// Each Retry makes the attempts its doc names for each kind of failure.
func TestDoRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry rest.Retry
		fn    func(*http.Request) (*http.Response, error)
		want  int
	}{
		{"unsent: a dial failure", rest.RetryUnsent, fail(errDial), 3},
		{"unsent: a failure after sending", rest.RetryUnsent, fail(errRead), 1},
		{"unsent: 503", rest.RetryUnsent, answer(503, "", ""), 1},
		{"transient: a dial failure", rest.RetryTransient, fail(errDial), 3},
		{"transient: a failure after sending", rest.RetryTransient, fail(errRead), 3},
		{"transient: 503", rest.RetryTransient, answer(503, "", ""), 3},
		{"transient: 400", rest.RetryTransient, answer(400, "", ""), 1},
		{"once: a dial failure", rest.RetryOnce, fail(errDial), 1},
		{"once: 503", rest.RetryOnce, answer(503, "", ""), 1},
		{"probe: 503", rest.RetryProbe, answer(503, "", ""), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &roundTripper{fn: tc.fn}
			c := &rest.Client{Base: "http://api.test", HTTP: &http.Client{Transport: rt},
				Retry: &resilience.Policy{Attempts: 3, Wait: noWait}}
			if err := c.Do(t.Context(), rest.Call{Method: http.MethodPost, Path: "/x", Retry: tc.retry}, nil); err == nil {
				t.Fatal("Do succeeded")
			}
			if rt.n != tc.want {
				t.Errorf("%d attempts, want %d", rt.n, tc.want)
			}
		})
	}
}

// A write that failed after it was sent comes back as the transport's
// error, not a wrapper of it.
func TestDoUnsentKeepsTheError(t *testing.T) {
	c := &rest.Client{Base: "http://api.test", HTTP: &http.Client{Transport: &roundTripper{fn: fail(errRead)}}}
	err := c.Do(t.Context(), rest.Call{Method: http.MethodPost}, nil)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Do = %v, want ECONNRESET", err)
	}
}

// RetryOnce waits on the policy's open breaker; RetryProbe goes past it.
func TestDoBreaker(t *testing.T) {
	br := resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 1})
	br.Failure()
	rt := &roundTripper{fn: answer(200, "application/json", `{}`)}
	c := &rest.Client{Base: "http://api.test", HTTP: &http.Client{Transport: rt}, Retry: &resilience.Policy{Breaker: br}}
	if err := c.Do(t.Context(), rest.Call{Method: http.MethodPost, Retry: rest.RetryOnce}, nil); !errors.Is(err, resilience.ErrOpen) || rt.n != 0 {
		t.Fatalf("once behind an open breaker = %v after %d requests", err, rt.n)
	}
	if err := c.Do(t.Context(), rest.Call{Method: http.MethodGet, Retry: rest.RetryProbe}, nil); err != nil || rt.n != 1 {
		t.Fatalf("probe behind an open breaker = %v after %d requests", err, rt.n)
	}
}

// A write the service refused is its answer, not its failure: it does
// not count against the breaker; a write that failed after it was sent
// does.
func TestDoUnsentBreaker(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*http.Request) (*http.Response, error)
		open bool
	}{
		{"409", answer(409, "", ""), false},
		{"400", answer(400, "", ""), false},
		{"503", answer(503, "", ""), true},
		{"a failure after sending", fail(errRead), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 1})
			c := &rest.Client{HTTP: &http.Client{Transport: &roundTripper{fn: tc.fn}}, Retry: &resilience.Policy{Attempts: 3, Wait: noWait, Breaker: br}}
			if err := c.Do(t.Context(), rest.Call{Method: http.MethodPost}, nil); err == nil {
				t.Fatal("Do succeeded")
			}
			if open := br.State() == resilience.Open; open != tc.open {
				t.Errorf("breaker open %v, want %v", open, tc.open)
			}
		})
	}
}

var errOurs = errors.New("ours: malformed answer")

// Do decodes an answer of a status the call named, and wraps Malformed
// for anything that does not fit, without quoting the answer.
func TestDoAnswer(t *testing.T) {
	type out struct {
		N int `json:"n"`
	}
	for _, tc := range []struct {
		name    string
		ok      []int
		fn      func(*http.Request) (*http.Response, error)
		want    out
		wantErr string // "" for success
	}{
		{"200", nil, answer(200, "application/json", `{"n":1}`), out{N: 1}, ""},
		{"201 named", []int{201, 200}, answer(201, "application/json", `{"n":2}`), out{N: 2}, ""},
		{"201 not named", nil, answer(201, "application/json", `{"n":2}`), out{}, "ours: malformed answer: unexpected status 201"},
		{"a redirect", nil, answer(302, "", ""), out{}, "ours: malformed answer: unexpected status 302"},
		{"over the limit", nil, answer(200, "application/json", `{"n":1}`+strings.Repeat(" ", 64)), out{}, "ours: malformed answer: answer over 64 bytes"},
		{"not JSON", nil, answer(200, "application/json", `secret-ish`), out{}, "ours: malformed answer: not JSON (offset 1)"},
		{"a wrong type", nil, answer(200, "application/json", `{"n":"secret"}`), out{}, `ours: malformed answer: member "n" has the wrong JSON type (string)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &rest.Client{Base: "http://api.test", HTTP: &http.Client{Transport: &roundTripper{fn: tc.fn}},
				MaxAnswer: 64, Malformed: errOurs}
			var got out
			err := c.Do(t.Context(), rest.Call{Method: http.MethodGet, OK: tc.ok, Retry: rest.RetryTransient}, &got)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr || !errors.Is(err, errOurs) {
				t.Errorf("Do = %v, want %q wrapping Malformed", err, tc.wantErr)
			}
		})
	}
}

// Do sends the path, query, JSON body and Accept it was given.
func TestDoRequest(t *testing.T) {
	var got *http.Request
	var body string
	rt := &roundTripper{fn: func(r *http.Request) (*http.Response, error) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return answer(204, "", "")(r)
	}}
	c := &rest.Client{Base: "http://api.test/base", HTTP: &http.Client{Transport: rt}}
	call := rest.Call{Method: http.MethodPut, Path: "/things/a%2Fb", Query: map[string][]string{"after": {"x y"}},
		Body: map[string]int{"n": 1}, OK: []int{http.StatusNoContent}}
	if err := c.Do(t.Context(), call, nil); err != nil {
		t.Fatal(err)
	}
	if u := got.URL.String(); u != "http://api.test/base/things/a%2Fb?after=x+y" {
		t.Errorf("URL %s", u)
	}
	if body != `{"n":1}` || got.Header.Get("Content-Type") != "application/json" ||
		got.Header.Get("Accept") != "application/json, application/problem+json" {
		t.Errorf("body %s, headers %v", body, got.Header)
	}
}

// NewRequest puts the client's headers, tenant, token and trace context
// on a request; the client's own win over Header.
func TestNewRequest(t *testing.T) {
	span := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	spanCtx := trace.ContextWithSpanContext(context.Background(), span)
	const fallback = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	base := http.Header{"Authorization": {"Bearer other"}, "X-Tenant-Id": {"other"}, "X-Custom": {"a", "b"}}
	for _, tc := range []struct {
		name string
		c    rest.Client
		ctx  context.Context
		body []byte
		want http.Header
	}{
		{"nothing", rest.Client{}, context.Background(), nil, http.Header{}},
		{"headers, tenant and token", rest.Client{Header: base, Tenant: "acme", Token: secret.New(testToken)}, context.Background(), []byte(`{}`),
			http.Header{"Authorization": {"Bearer " + testToken}, "X-Tenant-Id": {"acme"}, "X-Custom": {"a", "b"}, "Content-Type": {"application/json"}}},
		{"no token keeps none", rest.Client{Header: http.Header{"X-Custom": {"a"}}}, context.Background(), nil, http.Header{"X-Custom": {"a"}}},
		{"a token func wins", rest.Client{Token: secret.New("static-token"), TokenFunc: func(context.Context) (secret.Value, error) { return secret.New(testToken), nil }},
			context.Background(), nil, http.Header{"Authorization": {"Bearer " + testToken}}},
		{"the span's trace context", rest.Client{Traceparent: fallback}, spanCtx, nil,
			http.Header{"Traceparent": {"00-01000000000000000000000000000000-0200000000000000-01"}}},
		{"the fallback without a span", rest.Client{Traceparent: fallback}, context.Background(), nil, http.Header{"Traceparent": {fallback}}},
		{"a header's traceparent over the fallback", rest.Client{Traceparent: fallback, Header: http.Header{"Traceparent": {"mine"}}}, context.Background(), nil,
			http.Header{"Traceparent": {"mine"}}},
		{"the user agent", rest.Client{UserAgent: "novaos-test"}, context.Background(), nil, http.Header{"User-Agent": {"novaos-test"}}},
		{"a header's user agent", rest.Client{UserAgent: "novaos-test", Header: http.Header{"User-Agent": {"mine"}}}, context.Background(), nil,
			http.Header{"User-Agent": {"mine"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, tok, err := tc.c.NewRequest(tc.ctx, http.MethodPost, "http://api.test/x", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, req.Header); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if want := strings.TrimPrefix(tc.want.Get("Authorization"), "Bearer "); tok.Reveal() != want {
				t.Errorf("the token returned is not the one sent")
			}
		})
	}
	// The request's header values are its own: changing them leaves the
	// client's alone.
	c := rest.Client{Header: http.Header{"X-Custom": {"a"}}}
	req, _, _ := c.NewRequest(context.Background(), http.MethodGet, "http://api.test/x", nil)
	req.Header["X-Custom"][0] = "changed"
	if c.Header.Get("X-Custom") != "a" {
		t.Error("a request shares the client's header values")
	}
}

func TestNewRequestRefuses(t *testing.T) {
	errNoToken := errors.New("no token today")
	for _, tc := range []struct {
		name string
		c    rest.Client
		want error
	}{
		{"a token of two lines", rest.Client{Token: secret.New("tok\r\nX-Evil: 1")}, nil},
		{"a failing token func", rest.Client{TokenFunc: func(context.Context) (secret.Value, error) { return secret.Value{}, errNoToken }}, errNoToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.c.NewRequest(context.Background(), http.MethodGet, "http://api.test/x", nil)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("NewRequest = %v, want an error matching %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "Evil") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// A refusal's problem is read, defaulted, cut short and has the token
// taken out; its Retry-After is kept on the statuses that are retried.
func TestErrorOf(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		retryAfter  string
		want        rest.Refusal
	}{
		{"a problem", 409, problem.ContentType,
			`{"type":"https://novaos.dev/problems/x","title":"Conflict","status":409,"detail":"taken","errors":[{"field":"name","message":"in use"}]}`, "",
			rest.Refusal{Problem: problem.Problem{Type: "https://novaos.dev/problems/x", Title: "Conflict", Status: 409, Detail: "taken",
				Errors: []problem.FieldError{{Field: "name", Message: "in use"}}}}},
		{"a plain JSON problem", 400, "application/json; charset=utf-8", `{"title":"Bad"}`, "",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: "Bad", Status: 400}}},
		{"not a problem", 502, "text/html", `<h1>Bad Gateway</h1>`, "7",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: "Bad Gateway", Status: 502}, After: 7 * time.Second}},
		{"a problem that is not JSON", 500, problem.ContentType, `{"title":`, "",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: "Internal Server Error", Status: 500}}},
		{"Retry-After only where retried", 400, "", "", "7",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: "Bad Request", Status: 400}}},
		{"the token echoed", 401, problem.ContentType,
			`{"title":"` + testToken + `","detail":"Bearer ` + testToken + `","errors":[{"field":"f","message":"` + testToken + `"}]}`, "",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: secret.Redacted, Status: 401, Detail: "Bearer " + secret.Redacted,
				Errors: []problem.FieldError{{Field: "f", Message: secret.Redacted}}}}},
		{"long words", 400, problem.ContentType,
			`{"title":"` + long + `","detail":"` + long + `","errors":[{"field":"f","message":"` + long + `"}]}`, "",
			rest.Refusal{Problem: problem.Problem{Type: "about:blank", Title: strings.Repeat("é", 100) + "…", Status: 400, Detail: strings.Repeat("é", 500) + "…",
				Errors: []problem.FieldError{{Field: "f", Message: strings.Repeat("é", 100) + "…"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := answer(tc.status, tc.contentType, tc.body)(nil)
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			c := &rest.Client{}
			err := c.ErrorOf(resp, secret.New(testToken))
			var got *rest.Refusal
			if !errors.As(err, &got) {
				t.Fatalf("ErrorOf = %v, want a *Refusal", err)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
}

// Refused makes the client's own error; a status below 400 is no
// refusal.
func TestErrorOfHooks(t *testing.T) {
	c := &rest.Client{Malformed: errOurs, Refused: func(r *rest.Refusal) error { return fmt.Errorf("ours %d", r.Status) }}
	resp, _ := answer(404, "", "")(nil)
	if err := c.ErrorOf(resp, secret.Value{}); err == nil || err.Error() != "ours 404" {
		t.Errorf("ErrorOf(404) = %v", err)
	}
	resp, _ = answer(304, "", "")(nil)
	if err := c.ErrorOf(resp, secret.Value{}); !errors.Is(err, errOurs) {
		t.Errorf("ErrorOf(304) = %v, want Malformed", err)
	}
	if err := (&rest.Client{}).ErrorOf(resp, secret.Value{}); !errors.Is(err, rest.ErrMalformed) {
		t.Errorf("ErrorOf(304) without Malformed = %v, want ErrMalformed", err)
	}
}

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		raw, want string // want "" for an error
	}{
		{"http://h", "http://h"},
		{"https://gw.example/base/", "https://gw.example/base"},
		{"http://127.0.0.1:8080/api/v1/agent-ops", "http://127.0.0.1:8080/api/v1/agent-ops"},
		{"", ""},
		{"localhost:8080", ""},
		{"ftp://h", ""},
		{"http://", ""},
		{"http://u:secret-pw@h", ""},
		{"http://h/?q=1", ""},
		{"http://h/#f", ""},
		{"::", ""},
	} {
		got, err := rest.BaseURL(tc.raw)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("BaseURL(%q) = %q, want an error", tc.raw, got)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("BaseURL(%q) = %q, %v, want %q", tc.raw, got, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret-pw"):
			t.Errorf("BaseURL's error shows the password: %v", err)
		}
	}
}

// Against a real server: the answer is decoded and the refusal read.
func TestDoServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.Header().Set("Content-Type", problem.ContentType)
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"type":"https://novaos.dev/problems/not-found","title":"Not Found","status":404}`)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	c := &rest.Client{Base: srv.URL}
	var got struct{ OK bool }
	if err := c.Do(t.Context(), rest.Call{Method: http.MethodGet, Path: "/here", Retry: rest.RetryTransient}, &got); err != nil || !got.OK {
		t.Fatalf("Do(/here) = %+v, %v", got, err)
	}
	err := c.Do(t.Context(), rest.Call{Method: http.MethodGet, Path: "/missing", Retry: rest.RetryTransient}, nil)
	var r *rest.Refusal
	if !errors.As(err, &r) || r.Type != problem.TypeNotFound || r.HTTPStatus() != http.StatusNotFound {
		t.Fatalf("Do(/missing) = %v", err)
	}
}

// Timeout bounds each attempt, not the call: every attempt gets a fresh
// deadline, and none without a Timeout.
func TestDoTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		var deadlines []time.Time
		rt := &roundTripper{fn: func(r *http.Request) (*http.Response, error) {
			d, ok := r.Context().Deadline()
			if ok != (timeout > 0) {
				t.Errorf("timeout %v: the attempt has a deadline: %v", timeout, ok)
			}
			deadlines = append(deadlines, d)
			return answer(503, "", "")(r)
		}}
		c := &rest.Client{HTTP: &http.Client{Transport: rt}, Timeout: timeout, Retry: &resilience.Policy{Attempts: 2, Wait: noWait}}
		before := time.Now()
		_ = c.Do(t.Context(), rest.Call{Method: http.MethodGet, Retry: rest.RetryTransient}, nil)
		if len(deadlines) != 2 {
			t.Fatalf("%d attempts", len(deadlines))
		}
		if timeout > 0 && (deadlines[0].Before(before.Add(timeout)) || deadlines[1].Before(deadlines[0])) {
			t.Errorf("deadlines %v, want each a Timeout after its attempt", deadlines)
		}
	}
}

// FuzzErrorOf reads arbitrary refusals: it never panics, never keeps the
// token, and keeps every text within its bound and valid UTF-8 when the
// body was.
func FuzzErrorOf(f *testing.F) {
	f.Add(400, problem.ContentType, `{"type":"t","title":"x","detail":"y","errors":[{"field":"f","message":"m"}]}`)
	f.Add(503, "application/json", `{"title":"`+testToken+`"}`)
	f.Add(500, "text/plain", "oops")
	f.Add(404, problem.ContentType, `{"errors":null}`)
	f.Fuzz(func(t *testing.T, status int, contentType, body string) {
		status = 400 + (status%200+200)%200
		resp, _ := answer(status, contentType, body)(nil)
		var r *rest.Refusal
		if !errors.As((&rest.Client{}).ErrorOf(resp, secret.New(testToken)), &r) {
			t.Fatal("no *Refusal")
		}
		texts := []string{r.Title, r.Detail}
		for _, e := range r.Errors {
			texts = append(texts, e.Message)
		}
		for _, s := range texts {
			if strings.Contains(s, testToken) {
				t.Error("the token shows in the refusal")
			}
			if utf8.ValidString(body) && !utf8.ValidString(s) {
				t.Errorf("%q is not valid UTF-8", s)
			}
		}
		if len(r.Title) > 200+len("…") || len(r.Detail) > 1000+len("…") {
			t.Errorf("title of %d or detail of %d bytes", len(r.Title), len(r.Detail))
		}
		if r.Status != status || r.Type == "" || (r.Title == "" && http.StatusText(status) != "") {
			t.Errorf("refusal %+v of status %d", r, status)
		}
	})
}
