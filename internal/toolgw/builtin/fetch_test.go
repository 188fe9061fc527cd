package builtin_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/tools"
)

// site is a test web server reached under several names, all resolving
// to it: routes by path, and a record of every request it got.
type site struct {
	srv  *httptest.Server
	port string
	mu   sync.Mutex
	seen []*http.Request
}

func newSite(t *testing.T, routes map[string]http.HandlerFunc) *site {
	s := &site{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r)
		s.mu.Unlock()
		h, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	return s
}

// url is the site's URL under host.
func (s *site) url(host, path string) string { return "http://" + host + ":" + s.port + path }

func (s *site) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// names resolves every test name to the site.
var names = resolver{
	"api.test": "127.0.0.1", "a.example.test": "127.0.0.1", "b.a.example.test": "127.0.0.1",
	"example.test": "127.0.0.1", "evil.test": "127.0.0.1",
}

func TestHTTPFetch(t *testing.T) {
	var s *site
	redirect := func(to func() string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to(), http.StatusFound) }
	}
	s = newSite(t, map[string]http.HandlerFunc{
		"/page": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Set-Cookie", "session=abc")
			w.Header().Set("X-Internal-Secret", "s3")
			w.Header().Set("WWW-Authenticate", "Basic")
			fmt.Fprint(w, "hello from "+r.Host)
		},
		"/big":         func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("0123456789", 10)) },
		"/utf8":        func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "aaaaaaaaé") }, // é is 2 bytes at 9-10
		"/binary":      func(w http.ResponseWriter, r *http.Request) { w.Write([]byte{'a', 0xff, 0xfe, 'b'}) },
		"/missing":     http.NotFound,
		"/to-page":     redirect(func() string { return s.url("a.example.test", "/page") }),
		"/to-evil":     redirect(func() string { return s.url("evil.test", "/page") }),
		"/to-private":  redirect(func() string { return "http://10.0.0.1/page" }),
		"/to-metadata": redirect(func() string { return "http://169.254.169.254/latest" }),
		"/loop":        redirect(func() string { return "/loop" }),
		"/cookie": func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "1", Path: "/"})
			http.Redirect(w, r, "/page", http.StatusFound)
		},
		"/head": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":1}`)
		},
	})
	allowed := []string{"api.test", "*.example.test"}
	opts := builtin.HTTPOptions{AllowedDomains: allowed, Policy: loopback, Resolver: names, AllowHTTP: true}
	tests := []struct {
		name string
		opts *builtin.HTTPOptions
		args map[string]any
		// check a successful answer
		check func(t *testing.T, got map[string]any)
		code  string // an error result's code
		want  []string
		// visited are the paths the site saw, in order
		visited []string
	}{
		{name: "exact host", args: map[string]any{"url": s.url("api.test", "/page")}, visited: []string{"/page"},
			check: func(t *testing.T, got map[string]any) {
				if got["status"] != float64(200) || got["body"] != "hello from api.test:"+s.port || got["truncated"] != false ||
					got["content_type"] != "text/plain; charset=utf-8" || got["url"] != s.url("api.test", "/page") {
					t.Errorf("answer %v", got)
				}
				h := got["headers"].(map[string]any)
				if h["Etag"] != `"v1"` && h["ETag"] != `"v1"` {
					t.Errorf("headers %v: no ETag", h)
				}
				for _, k := range []string{"Set-Cookie", "X-Internal-Secret", "Www-Authenticate", "WWW-Authenticate"} {
					if _, ok := h[k]; ok {
						t.Errorf("header %s answered", k)
					}
				}
			}},
		{name: "suffix pattern", args: map[string]any{"url": s.url("b.a.example.test", "/page")}, visited: []string{"/page"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "hello from b.a.example.test:"+s.port {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "a pattern does not cover its own domain", args: map[string]any{"url": s.url("example.test", "/page")},
			code: tools.ReasonPolicyDenied, want: []string{"example.test is not on the allowed domains"}},
		{name: "a host off the list", args: map[string]any{"url": s.url("evil.test", "/page")},
			code: tools.ReasonPolicyDenied, want: []string{"evil.test is not on the allowed domains"}},
		{name: "an address off the list", args: map[string]any{"url": s.url("127.0.0.1", "/page")},
			code: tools.ReasonPolicyDenied, want: []string{"not on the allowed domains"}},
		{name: "an allowed name resolving to loopback, under the default policy",
			opts: &builtin.HTTPOptions{AllowedDomains: allowed, Resolver: names, AllowHTTP: true},
			args: map[string]any{"url": s.url("api.test", "/page")},
			code: tools.ReasonPolicyDenied, want: []string{"api.test resolves to 127.0.0.1, a loopback destination"}},
		{name: "an allowed address literal that is private",
			opts: &builtin.HTTPOptions{AllowedDomains: []string{"10.0.0.1"}, AllowHTTP: true},
			args: map[string]any{"url": "http://10.0.0.1/"},
			code: tools.ReasonPolicyDenied, want: []string{"10.0.0.1 is a private destination"}},
		{name: "a redirect within the list", args: map[string]any{"url": s.url("api.test", "/to-page")}, visited: []string{"/to-page", "/page"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "hello from a.example.test:"+s.port || got["url"] != s.url("a.example.test", "/page") {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "a redirect off the list", args: map[string]any{"url": s.url("api.test", "/to-evil")}, visited: []string{"/to-evil"},
			code: tools.ReasonPolicyDenied, want: []string{"a redirect goes to evil.test, which is not on the allowed domains"}},
		{name: "a redirect to a private address", args: map[string]any{"url": s.url("api.test", "/to-private")}, visited: []string{"/to-private"},
			code: tools.ReasonPolicyDenied, want: []string{"10.0.0.1, a private destination"}},
		{name: "a redirect to the metadata service", args: map[string]any{"url": s.url("api.test", "/to-metadata")}, visited: []string{"/to-metadata"},
			code: tools.ReasonPolicyDenied, want: []string{"metadata"}},
		{name: "too many redirects", args: map[string]any{"url": s.url("api.test", "/loop")},
			visited: []string{"/loop", "/loop", "/loop", "/loop", "/loop", "/loop"},
			code:    tools.ReasonPolicyDenied, want: []string{"more than 5 redirects"}},
		{name: "a body over the limit is cut", opts: &builtin.HTTPOptions{AllowedDomains: allowed, Policy: loopback, Resolver: names, AllowHTTP: true, MaxFetchBytes: 25},
			args: map[string]any{"url": s.url("api.test", "/big")}, visited: []string{"/big"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "0123456789012345678901234" || got["truncated"] != true {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "a cut never splits a character", opts: &builtin.HTTPOptions{AllowedDomains: allowed, Policy: loopback, Resolver: names, AllowHTTP: true, MaxFetchBytes: 9},
			args: map[string]any{"url": s.url("api.test", "/utf8")}, visited: []string{"/utf8"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "aaaaaaaa" || got["truncated"] != true {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "a body of exactly the limit is whole", opts: &builtin.HTTPOptions{AllowedDomains: allowed, Policy: loopback, Resolver: names, AllowHTTP: true, MaxFetchBytes: 100},
			args: map[string]any{"url": s.url("api.test", "/big")}, visited: []string{"/big"},
			check: func(t *testing.T, got map[string]any) {
				if len(got["body"].(string)) != 100 || got["truncated"] != false {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "invalid UTF-8 is replaced", args: map[string]any{"url": s.url("api.test", "/binary")}, visited: []string{"/binary"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "a\uFFFDb" {
					t.Errorf("body %q", got["body"])
				}
			}},
		{name: "a 404 is an answer", args: map[string]any{"url": s.url("api.test", "/missing")}, visited: []string{"/missing"},
			check: func(t *testing.T, got map[string]any) {
				if got["status"] != float64(404) {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "HEAD", args: map[string]any{"url": s.url("api.test", "/head"), "method": "HEAD"}, visited: []string{"/head"},
			check: func(t *testing.T, got map[string]any) {
				if got["body"] != "" || got["content_type"] != "application/json" || got["status"] != float64(200) {
					t.Errorf("answer %v", got)
				}
			}},
		{name: "no cookie is kept between redirects", args: map[string]any{"url": s.url("api.test", "/cookie")}, visited: []string{"/cookie", "/page"},
			check: func(t *testing.T, got map[string]any) {
				for _, r := range s.requests() {
					if r.Header.Get("Cookie") != "" {
						t.Errorf("%s carried a cookie", r.URL.Path)
					}
				}
			}},
		{name: "caller headers are sent", args: map[string]any{"url": s.url("api.test", "/page"), "headers": map[string]string{"Accept": "text/plain", "X-Api-Key": "k"}},
			visited: []string{"/page"},
			check: func(t *testing.T, got map[string]any) {
				r := s.requests()[0]
				if r.Header.Get("Accept") != "text/plain" || r.Header.Get("X-Api-Key") != "k" {
					t.Errorf("headers %v", r.Header)
				}
			}},
		{name: "POST is refused", args: map[string]any{"url": s.url("api.test", "/page"), "method": "POST"},
			code: tools.ReasonInvalidArguments, want: []string{"GET or HEAD"}},
		{name: "a Cookie header is refused", args: map[string]any{"url": s.url("api.test", "/page"), "headers": map[string]string{"Cookie": "a=b"}},
			code: tools.ReasonInvalidArguments, want: []string{"header Cookie"}},
		{name: "http without AllowHTTP", opts: &builtin.HTTPOptions{AllowedDomains: allowed, Policy: loopback, Resolver: names},
			args: map[string]any{"url": s.url("api.test", "/page")},
			code: tools.ReasonInvalidArguments, want: []string{"must be https"}},
		{name: "no URL", args: map[string]any{},
			code: tools.ReasonInvalidArguments, want: []string{"not usable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.mu.Lock()
			s.seen = nil
			s.mu.Unlock()
			o := &opts
			if tc.opts != nil {
				o = tc.opts
			}
			p, err := builtin.HTTP(o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := call(t, p, testCaller(), builtin.HTTPFetch, tc.args)
			switch {
			case tc.check != nil:
				tc.check(t, answer(t, res, err))
			default:
				failedWith(t, res, err, tc.code, tc.want...)
			}
			var paths []string
			for _, r := range s.requests() {
				paths = append(paths, r.URL.Path)
				if r.Header.Get("Authorization") != "" {
					t.Errorf("%s carried an Authorization header", r.URL.Path)
				}
				for k, vs := range r.Header {
					if strings.Contains(strings.Join(vs, " "), callerToken) {
						t.Errorf("header %s carries the caller's token", k)
					}
				}
			}
			if fmt.Sprint(paths) != fmt.Sprint(tc.visited) {
				t.Errorf("the site saw %v, want %v", paths, tc.visited)
			}
		})
	}
}

func TestHTTPFetchDisabled(t *testing.T) {
	for _, o := range []*builtin.HTTPOptions{nil, {}, {AllowedDomains: []string{}}} {
		p, err := builtin.HTTP(o)
		if err != nil {
			t.Fatal(err)
		}
		list, err := p.Tools(t.Context(), testCaller())
		if err != nil || len(list) != 1 || list[0].Name != builtin.HTTPFetch {
			t.Fatalf("Tools = %v, %v: the tool is listed even when disabled", list, err)
		}
		res, err := call(t, p, testCaller(), builtin.HTTPFetch, map[string]any{"url": "https://example.com/"})
		errorOf(t, res, err, tools.ReasonServiceDisabled, "no domains are allowed")
	}
}

func TestHTTPFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/slow-head": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		},
		"/slow-body": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("first part"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		},
	})
	defer close(release)
	p, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{"api.test"}, Policy: loopback, Resolver: names,
		AllowHTTP: true, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/slow-head", "/slow-body"} {
		t.Run(path, func(t *testing.T) {
			res, err := call(t, p, testCaller(), builtin.HTTPFetch, map[string]any{"url": s.url("api.test", path)})
			errorOf(t, res, err, tools.ReasonTimeout, "no answer within 50ms")
		})
	}
}

func TestHTTPAllowedDomains(t *testing.T) {
	for _, bad := range []string{"", "*.", "*.10.0.0.1", "exa mple.com", "http://example.com", "example.com/path", "0177.0.0.1", "*"} {
		if _, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{bad}}); err == nil {
			t.Errorf("allowed domain %q taken", bad)
		}
	}
	for _, good := range []string{"example.com", "Example.COM.", "*.example.com", "10.0.0.1", "[::1]", "::1"} {
		if _, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{good}}); err != nil {
			t.Errorf("allowed domain %q: %v", good, err)
		}
	}
}

func TestHTTPFetchStaysOnHTTPS(t *testing.T) {
	plain := newSite(t, map[string]http.HandlerFunc{"/page": func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain") }})
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, plain.url("api.test", "/page"), http.StatusFound)
		default:
			fmt.Fprint(w, "secure")
		}
	}))
	defer tlsSrv.Close()
	tlsConf := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	p, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{"api.test", "127.0.0.1"}, Policy: loopback, Resolver: names, TLSConfig: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, p, testCaller(), builtin.HTTPFetch, map[string]any{"url": tlsSrv.URL + "/page"})
	if got := answer(t, res, err); got["body"] != "secure" {
		t.Errorf("answer %v", got)
	}
	res, err = call(t, p, testCaller(), builtin.HTTPFetch, map[string]any{"url": tlsSrv.URL + "/to-http"})
	failedWith(t, res, err, tools.ReasonPolicyDenied, "a redirect leaves https")
	if n := len(plain.requests()); n != 0 {
		t.Errorf("the plain site was reached %d times", n)
	}
}
