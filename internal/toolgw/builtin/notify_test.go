package builtin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// hook is a webhook receiver that records what it got.
type hook struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
	status int
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs = append(h.reqs, r)
	h.bodies = append(h.bodies, string(b))
	st := h.status
	h.mu.Unlock()
	if st == 0 {
		st = http.StatusNoContent
	}
	if st >= 300 && st < 400 {
		w.Header().Set("Location", "/elsewhere")
	}
	w.WriteHeader(st)
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reqs)
}

func newHook(t *testing.T, status int) (*hook, *httptest.Server) {
	h := &hook{status: status}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func TestNotifyWebhook(t *testing.T) {
	payload := json.RawMessage(`{"event":"done","n":[1,2,3]}`)
	tests := []struct {
		name    string
		opts    builtin.NotifyOptions
		status  int // the receiver's answer
		url     func(srv string) string
		args    func(url string) any
		code    string // an error result's code; "" for delivered
		want    []string
		reached bool
	}{
		{name: "delivered", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, reached: true},
		{name: "delivered with headers", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, reached: true,
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"X-Signature": "abc", "Authorization": "Bearer hook-key"}}
			}},
		{name: "any JSON payload", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, reached: true,
			args: func(u string) any { return map[string]any{"url": u, "payload": "just text"} }},
		{name: "receiver answers 500", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, status: 500, reached: true,
			code: tools.ReasonUnavailable, want: []string{"HTTP 500"}},
		{name: "receiver answers 404", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, status: 404, reached: true,
			code: tools.ReasonUnavailable, want: []string{"HTTP 404"}},
		{name: "a redirect is not followed", opts: builtin.NotifyOptions{Policy: loopback, AllowHTTP: true}, status: 302, reached: true,
			code: tools.ReasonUnavailable, want: []string{"HTTP 302"}},
		{name: "http without AllowHTTP", opts: builtin.NotifyOptions{Policy: loopback},
			code: tools.ReasonInvalidArguments, want: []string{"https"}},
		{name: "loopback by default", opts: builtin.NotifyOptions{AllowHTTP: true},
			code: tools.ReasonPolicyDenied, want: []string{"127.0.0.1 is a loopback destination"}},
		{name: "private address", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			url:  func(string) string { return "http://10.1.2.3:9/hook" },
			code: tools.ReasonPolicyDenied, want: []string{"10.1.2.3 is a private destination"}},
		{name: "metadata address even with private allowed", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: &netguard.Policy{AllowPrivate: true, AllowLoopback: true}},
			url:  func(string) string { return "http://169.254.169.254/latest/meta-data/" },
			code: tools.ReasonPolicyDenied, want: []string{"metadata"}},
		{name: "IPv4-mapped loopback", opts: builtin.NotifyOptions{AllowHTTP: true},
			url:  func(string) string { return "http://[::ffff:127.0.0.1]:9/" },
			code: tools.ReasonPolicyDenied, want: []string{"loopback"}},
		{name: "a name resolving to loopback is refused when dialled", opts: builtin.NotifyOptions{AllowHTTP: true, Resolver: resolver{"hooks.test": "127.0.0.1"}},
			url:  func(srv string) string { return strings.Replace(srv, "127.0.0.1", "hooks.test", 1) },
			code: tools.ReasonPolicyDenied, want: []string{"hooks.test resolves to", "loopback"}},
		{name: "a name is reached when the policy allows it", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback, Resolver: resolver{"hooks.test": "127.0.0.1"}},
			url: func(srv string) string { return strings.Replace(srv, "127.0.0.1", "hooks.test", 1) }, reached: true},
		{name: "octal host", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			url:  func(string) string { return "http://0177.0.0.1/" },
			code: tools.ReasonInvalidArguments, want: []string{"not usable"}},
		{name: "user information", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			url:  func(srv string) string { return strings.Replace(srv, "http://", "http://user:pw@", 1) },
			code: tools.ReasonInvalidArguments, want: []string{"user information"}},
		{name: "URL too long", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			url:  func(srv string) string { return srv + "/" + strings.Repeat("a", 2100) },
			code: tools.ReasonInvalidArguments, want: []string{"longer than 2048"}},
		{name: "Host header refused", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"Host": "internal"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"header Host"}},
		{name: "Cookie header refused", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"cookie": "a=b"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"header cookie"}},
		{name: "platform header refused", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"X-NovaOS-Run-Id": "r"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"X-NovaOS-Run-Id"}},
		{name: "header value with a newline", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"X-A": "a\r\nHost: b"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"control character"}},
		{name: "a header given twice", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"X-A": "a", "x-a": "b"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"given twice"}},
		{name: "header name not a token", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return map[string]any{"url": u, "payload": payload, "headers": map[string]string{"X A": "a"}}
			}, code: tools.ReasonInvalidArguments, want: []string{"not an HTTP token"}},
		{name: "payload over the limit", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback, MaxPayloadBytes: 16},
			code: tools.ReasonInvalidArguments, want: []string{"larger than 16 bytes"}},
		{name: "payload missing", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any { return map[string]any{"url": u} },
			code: tools.ReasonInvalidArguments, want: []string{"payload is required"}},
		{name: "unknown argument", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any { return map[string]any{"url": u, "payload": 1, "method": "PUT"} },
			code: tools.ReasonInvalidArguments, want: []string{`"method"`}},
		{name: "arguments naming a member twice", opts: builtin.NotifyOptions{AllowHTTP: true, Policy: loopback},
			args: func(u string) any {
				return json.RawMessage(`{"url":"https://a.example/","url":"` + u + `","payload":1}`)
			}, code: tools.ReasonInvalidArguments, want: []string{"duplicate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, srv := newHook(t, tc.status)
			p, err := builtin.Notify(&tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			u := srv.URL + "/hook?k=secret-in-query"
			if tc.url != nil {
				u = tc.url(srv.URL)
			}
			var args any = map[string]any{"url": u, "payload": payload}
			if tc.args != nil {
				args = tc.args(u)
			}
			res, err := call(t, p, testCaller(), builtin.NotifyWebhook, args)
			if tc.code == "" {
				got := answer(t, res, err)
				if got["delivered"] != true || got["status"] != float64(http.StatusNoContent) {
					t.Errorf("answer %v", got)
				}
			} else {
				m := failedWith(t, res, err, tc.code, tc.want...)
				if tc.status != 0 && m["status"] != float64(tc.status) {
					t.Errorf("status %v, want %d", m["status"], tc.status)
				}
				if strings.Contains(text(t, res), "secret-in-query") {
					t.Errorf("the error repeats the URL: %s", text(t, res))
				}
			}
			if got := h.count() > 0; got != tc.reached {
				t.Fatalf("receiver reached: %v, want %v", got, tc.reached)
			}
			if !tc.reached {
				return
			}
			h.mu.Lock()
			r, body := h.reqs[0], h.bodies[0]
			h.mu.Unlock()
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
			}
			var sent, wantBody any
			_ = json.Unmarshal([]byte(body), &sent)
			a := args.(map[string]any)
			b, _ := json.Marshal(a["payload"])
			_ = json.Unmarshal(b, &wantBody)
			if sent == nil || !jsonEqual(sent, wantBody) {
				t.Errorf("body %s, want %s", body, b)
			}
			if hs, ok := a["headers"].(map[string]string); ok {
				for k, v := range hs {
					if r.Header.Get(k) != v {
						t.Errorf("header %s = %q, want %q", k, r.Header.Get(k), v)
					}
				}
			} else if r.Header.Get("Authorization") != "" {
				t.Error("an Authorization header was sent")
			}
			for k, vs := range r.Header {
				if strings.Contains(strings.Join(vs, " "), callerToken) {
					t.Errorf("header %s carries the caller's token", k)
				}
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The receiver's answer is read up to the limit and no further: one that
// never ends does not keep the call.
func TestNotifyReadsBoundedAnswer(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	p, err := builtin.Notify(&builtin.NotifyOptions{Policy: loopback, AllowHTTP: true, MaxResponseBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.NotifyWebhook, map[string]any{"url": srv.URL, "payload": 1})
	got := answer(t, res, err)
	if got["status"] != float64(200) {
		t.Errorf("answer %v", got)
	}
	<-done // the handler's writes failed once the client hung up
}

func TestNotifyTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := builtin.Notify(&builtin.NotifyOptions{Policy: loopback, AllowHTTP: true, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.NotifyWebhook, map[string]any{"url": srv.URL, "payload": 1})
	errorOf(t, res, err, tools.ReasonTimeout, "no answer within 50ms")
}

func TestNotifyUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	p, err := builtin.Notify(&builtin.NotifyOptions{Policy: loopback, AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.NotifyWebhook, map[string]any{"url": u + "/?token=xyz", "payload": 1})
	errorOf(t, res, err, tools.ReasonUnavailable, "could not be reached")
	if strings.Contains(err.Error(), "xyz") {
		t.Errorf("the error repeats the URL: %v", err)
	}
}

func TestNotifyHTTPS(t *testing.T) {
	h := &hook{}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	p, err := builtin.Notify(&builtin.NotifyOptions{Policy: loopback, TLSConfig: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.NotifyWebhook, map[string]any{"url": srv.URL + "/hook", "payload": map[string]any{"a": 1}})
	got := answer(t, res, err)
	if got["delivered"] != true || h.count() != 1 {
		t.Errorf("answer %v, %d deliveries", got, h.count())
	}
}
