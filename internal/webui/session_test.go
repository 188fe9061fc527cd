package webui_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/webui"
)

type who struct{ Name, Tenant string }

const (
	goodTok   = "tok-good-0123456789"
	brokenTok = "tok-broken"
	noTenant  = "tok-no-tenant"
)

func auth(_ context.Context, tok string) (who, error) {
	switch tok {
	case goodTok:
		return who{"alice", "acme"}, nil
	case noTenant:
		return who{"bob", ""}, nil
	case brokenTok:
		return who{}, fmt.Errorf("database down while checking %s", tok)
	}
	return who{}, fmt.Errorf("%w: unknown token %s", httpapi.ErrUnauthenticated, tok)
}

func newSite(logs *bytes.Buffer, key []byte) *webui.Site[who] {
	return webui.New(webui.Config[who]{Path: "/ui/x/", Cookie: "x", Domain: "test page", Name: "x", Key: key,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Authenticate: auth,
		Check: func(p who) string {
			if p.Tenant == "" {
				return "no tenant"
			}
			return ""
		},
		Describe: func(p who) []any { return []any{"who", p.Name} }})
}

// client keeps cookies across calls of one handler.
type client struct {
	h       http.Handler
	cookies map[string]*http.Cookie
}

func (c *client) do(method, path string, form url.Values) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, "http://a.test"+path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, k := range c.cookies {
		r.AddCookie(k)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	for _, k := range w.Result().Cookies() {
		if k.MaxAge < 0 {
			delete(c.cookies, k.Name)
		} else {
			c.cookies[k.Name] = k
		}
	}
	return w
}

// page is a minimal page on a Site: login, logout, a home that shows the
// CSRF token, a POST that needs it, a flash, and a stream endpoint.
func page(s *webui.Site[who]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !s.CheckPost(w, r) {
			return
		}
		switch r.URL.Path {
		case "/ui/x/login":
			s.Login(w, r, func(status int, msg string) { webui.Plain(w, status, "form: "+msg) })
		case "/ui/x/logout":
			s.Logout(w, r)
		case "/ui/x":
			s.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, sess *webui.Session[who]) {
				f, _ := s.TakeFlash(w, r)
				webui.Plain(w, 200, "csrf="+sess.CSRF+" who="+sess.Principal.Name+" flash="+f.Msg)
			})
		case "/ui/x/act":
			s.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, sess *webui.Session[who]) {
				s.SetFlash(w, r, webui.Flash{OK: true, Msg: "done " + r.PostForm.Get("v")})
				http.Redirect(w, r, "/ui/x", http.StatusSeeOther)
			})
		case "/ui/x/stream":
			sess, err := s.Authenticated(r)
			if err != nil {
				webui.Plain(w, 401, "no: "+err.Error())
				return
			}
			webui.Plain(w, 200, "stream for "+sess.Principal.Name)
		}
	})
}

func csrfOf(t *testing.T, c *client) string {
	t.Helper()
	w := c.do("GET", "/ui/x", nil)
	_, rest, ok := strings.Cut(w.Body.String(), "csrf=")
	if !ok {
		t.Fatalf("no csrf on the home page: %d %s", w.Code, w.Body)
	}
	return strings.Fields(rest)[0]
}

func TestSiteLogin(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		status      int
		body        string
		cookie      bool
	}{
		{"good", " " + goodTok + "\n", http.StatusSeeOther, "", true},
		{"empty", "  ", http.StatusBadRequest, "form: Paste a token.", false},
		{"too long", strings.Repeat("x", webui.MaxTokenBytes+1), http.StatusBadRequest, "too long to keep in a cookie", false},
		{"refused", "tok-unknown", http.StatusUnauthorized, "form: Refused:", false},
		{"checker fails", brokenTok, http.StatusServiceUnavailable, "could not be checked", false},
		{"principal the page cannot serve", noTenant, http.StatusForbidden, "form: no tenant", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := &client{h: page(newSite(&logs, nil)), cookies: map[string]*http.Cookie{}}
			w := c.do("POST", "/ui/x/login", url.Values{"token": {tc.token}})
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("login: %d %q, want %d %q", w.Code, w.Body, tc.status, tc.body)
			}
			k := c.cookies["x_session"]
			if (k != nil) != tc.cookie {
				t.Fatalf("session cookie %v, want one: %v", k, tc.cookie)
			}
			if k != nil {
				if got, want := [3]any{k.Path, k.HttpOnly, k.SameSite}, [3]any{"/ui/x", true, http.SameSiteStrictMode}; got != want {
					t.Errorf("cookie path, HttpOnly, SameSite = %v, want %v", got, want)
				}
				if loc := w.Header().Get("Location"); loc != "/ui/x" {
					t.Errorf("login redirects to %q", loc)
				}
			}
			if tok := strings.TrimSpace(tc.token); tok != "" && (strings.Contains(logs.String(), tok) || strings.Contains(w.Body.String(), tok)) {
				t.Errorf("the token shows in the log or the answer:\n%s\n%s", logs.String(), w.Body)
			}
		})
	}
}

func TestSiteSession(t *testing.T) {
	var logs bytes.Buffer
	s := newSite(&logs, []byte("0123456789abcdef0123456789abcdef"))
	c := &client{h: page(s), cookies: map[string]*http.Cookie{}}
	if w := c.do("GET", "/ui/x", nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/x/login" {
		t.Fatalf("signed out: %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := c.do("GET", "/ui/x/stream", nil); w.Code != 401 || !strings.Contains(w.Body.String(), webui.ErrNoSession.Error()) {
		t.Fatalf("stream signed out: %d %s", w.Code, w.Body)
	}
	c.do("POST", "/ui/x/login", url.Values{"token": {goodTok}})
	csrf := csrfOf(t, c)

	other := &client{h: c.h, cookies: map[string]*http.Cookie{}}
	other.do("POST", "/ui/x/login", url.Values{"token": {goodTok}})
	if csrfOf(t, other) == csrf {
		t.Fatal("two logins share a CSRF token")
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
	}{
		{"missing", url.Values{"v": {"1"}}, http.StatusForbidden},
		{"forged", url.Values{"v": {"1"}, "csrf": {"AAAA"}}, http.StatusForbidden},
		{"another login's", url.Values{"v": {"1"}, "csrf": {csrfOf(t, other)}}, http.StatusForbidden},
		{"good", url.Values{"v": {"1"}, "csrf": {csrf}}, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := c.do("POST", "/ui/x/act", tc.form)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
		})
	}
	if w := c.do("GET", "/ui/x", nil); !strings.Contains(w.Body.String(), "flash=done 1") {
		t.Errorf("the flash is not shown once: %s", w.Body)
	}
	if w := c.do("GET", "/ui/x", nil); strings.Contains(w.Body.String(), "flash=done") {
		t.Errorf("the flash is shown twice: %s", w.Body)
	}
	if w := c.do("GET", "/ui/x/stream", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "stream for alice") {
		t.Errorf("stream: %d %s", w.Code, w.Body)
	}

	// A flash cookie written by anyone but the site is ignored.
	c.cookies["x_flash"] = &http.Cookie{Name: "x_flash", Value: "b293bmVk.AAAA"}
	if w := c.do("GET", "/ui/x", nil); !strings.HasSuffix(strings.TrimSpace(w.Body.String()), "flash=") {
		t.Errorf("a forged flash is shown: %s", w.Body)
	}

	if w := c.do("POST", "/ui/x/logout", url.Values{}); w.Code != http.StatusForbidden {
		t.Fatalf("logout without CSRF: %d", w.Code)
	}
	if w := c.do("POST", "/ui/x/logout", url.Values{"csrf": {csrf}}); w.Code != http.StatusSeeOther || c.cookies["x_session"] != nil {
		t.Fatalf("logout: %d, cookie %v", w.Code, c.cookies["x_session"])
	}
	if strings.Contains(logs.String(), goodTok) {
		t.Errorf("the log shows the token:\n%s", logs.String())
	}
}

func TestAuthenticatedRedactsErrors(t *testing.T) {
	s := newSite(&bytes.Buffer{}, nil)
	c := &client{h: page(s), cookies: map[string]*http.Cookie{}}
	c.do("POST", "/ui/x/login", url.Values{"token": {goodTok}})
	k := c.cookies["x_session"]
	nonce, _, _ := strings.Cut(k.Value, ".")
	for _, tc := range []struct {
		tok      string
		refusal  bool
		wantText string
	}{
		{brokenTok, false, "database down while checking [token]"},
		{"tok-unknown", true, "unknown token [token]"},
		{noTenant, false, webui.ErrNoSession.Error()},
	} {
		r := httptest.NewRequest("GET", "http://a.test/ui/x/stream", nil)
		r.AddCookie(&http.Cookie{Name: "x_session", Value: nonce + "." + b64(tc.tok)})
		_, err := s.Authenticated(r)
		if err == nil {
			t.Fatalf("%s: no error", tc.tok)
		}
		if got := webui.Refused(err); got != tc.refusal {
			t.Errorf("%s: Refused = %v, want %v", tc.tok, got, tc.refusal)
		}
		if diff := cmp.Diff(tc.wantText, err.Error()); diff != "" && !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s: (-want +got):\n%s", tc.tok, diff)
		}
		if strings.Contains(err.Error(), tc.tok) && tc.tok != noTenant {
			t.Errorf("the error shows the token: %v", err)
		}
		if errors.Is(err, webui.ErrNoSession) != (tc.tok == noTenant) {
			t.Errorf("%s: ErrNoSession = %v", tc.tok, errors.Is(err, webui.ErrNoSession))
		}
	}
}
