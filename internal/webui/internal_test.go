package webui

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct{ in, host, port string }{
		{"a.test", "a.test", ""},
		{"a.test:8080", "a.test", "8080"},
		{"a.test:", "a.test", ""},
		{"[::1]:8080", "[::1]", "8080"},
		{"[::1]", "[::1]", ""},
		{"[::1", "", ""},
		{"a:b:c", "a:b", "c"},
	} {
		if h, p := splitHostPort(tc.in); h != tc.host || p != tc.port {
			t.Errorf("splitHostPort(%q) = %q, %q, want %q, %q", tc.in, h, p, tc.host, tc.port)
		}
	}
}

func minimal(key []byte, secure bool) *Site[string] {
	return New(Config[string]{Path: "/p/", Cookie: "c", Domain: "d", Key: key, Secure: secure,
		Authenticate: func(_ context.Context, tok string) (string, error) { return tok, nil }})
}

func TestNewDefaults(t *testing.T) {
	a, b := minimal(nil, false), minimal(nil, false)
	if len(a.c.Key) != 32 || string(a.c.Key) == string(b.c.Key) {
		t.Errorf("default keys %x and %x: want 32 random bytes each", a.c.Key, b.c.Key)
	}
	if a.csrfToken("n", "t") == b.csrfToken("n", "t") {
		t.Error("two sites' default keys make one CSRF token")
	}
	if a.Path() != "/p" || a.c.Name != "webui" || a.log == nil || a.c.Describe("x") != nil || a.c.Texts.Empty != "Paste a token." {
		t.Errorf("defaults: path %q, name %q, texts %+v", a.Path(), a.c.Name, a.c.Texts)
	}
	if k := []byte("k"); string(minimal(k, false).c.Key) != "k" {
		t.Error("a given key is not kept")
	}
	for _, c := range []Config[string]{{Cookie: "c", Domain: "d"}, {Path: "/p", Domain: "d"}, {Path: "/p", Cookie: "c"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", c)
				}
			}()
			c.Authenticate = func(context.Context, string) (string, error) { return "", nil }
			New(c)
		}()
	}
}

func TestCookieAttributes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		secure, tls bool
		wantSecure  bool
	}{
		{"plain", false, false, false},
		{"option", true, false, true},
		{"tls", false, true, true},
	} {
		s := minimal([]byte("key"), tc.secure)
		r := httptest.NewRequest("GET", "http://a.test/p", nil)
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		w := httptest.NewRecorder()
		s.setCookie(w, r, "c_session", "v", SessionTTL)
		s.clearCookie(w, r, "c_flash")
		cs := w.Result().Cookies()
		if len(cs) != 2 {
			t.Fatalf("%s: %d cookies", tc.name, len(cs))
		}
		for _, c := range cs {
			if c.Secure != tc.wantSecure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/p" {
				t.Errorf("%s: cookie %+v", tc.name, c)
			}
		}
		if cs[0].MaxAge != int(SessionTTL.Seconds()) || cs[1].MaxAge != -1 {
			t.Errorf("%s: MaxAge %d, %d", tc.name, cs[0].MaxAge, cs[1].MaxAge)
		}
	}
}

// Without a Check every principal is served, and a flash may be empty.
func TestNoCheckAndEmptyFlash(t *testing.T) {
	s := minimal([]byte("key"), false)
	r := httptest.NewRequest("GET", "http://a.test/p", nil)
	r.AddCookie(&http.Cookie{Name: "c_session", Value: "bm9uY2U.dG9r"})
	var got *Session[string]
	s.WithSession(httptest.NewRecorder(), r, func(_ http.ResponseWriter, _ *http.Request, sess *Session[string]) { got = sess })
	if got == nil || got.Principal != "tok" {
		t.Fatalf("session %+v", got)
	}
	if sess, err := s.Authenticated(r); err != nil || sess.Principal != "tok" || sess.CSRF != got.CSRF {
		t.Fatalf("Authenticated: %+v, %v", sess, err)
	}
	w := httptest.NewRecorder()
	s.SetFlash(w, r, Flash{OK: true})
	r2 := httptest.NewRequest("GET", "http://a.test/p", nil)
	for _, c := range w.Result().Cookies() {
		r2.AddCookie(c)
	}
	if f, ok := s.TakeFlash(httptest.NewRecorder(), r2); !ok || !f.OK || f.Msg != "" {
		t.Errorf("empty flash: %+v %v", f, ok)
	}
}
