package webui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/webui"
)

// A page signs a person in with a pasted token and serves them behind
// the session; a POST without the session's CSRF token is refused.
func Example() {
	site := webui.New(webui.Config[string]{Path: "/ui/hello", Cookie: "hello", Domain: "hello page",
		Authenticate: func(_ context.Context, tok string) (string, error) {
			if tok != "s3cret-token" {
				return "", httpapi.ErrUnauthenticated
			}
			return "ada", nil
		}})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		webui.SetSafetyHeaders(w.Header(), webui.CSPNoScript)
		if r.Method == http.MethodPost && !site.CheckPost(w, r) {
			return
		}
		switch r.URL.Path {
		case "/ui/hello/login":
			site.Login(w, r, func(status int, msg string) { webui.Plain(w, status, msg) })
		default:
			site.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, s *webui.Session[string]) {
				webui.Plain(w, http.StatusOK, "hello, "+s.Principal)
			})
		}
	})

	send := func(method, path string, form url.Values, cookies []*http.Cookie) *http.Response {
		r := httptest.NewRequest(method, "http://a.test"+path, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://a.test")
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		page.ServeHTTP(w, r)
		return w.Result()
	}
	login := send("POST", "/ui/hello/login", url.Values{"token": {"s3cret-token"}}, nil)
	fmt.Println("login:", login.StatusCode, login.Header.Get("Location"))
	home := send("GET", "/ui/hello", nil, login.Cookies())
	fmt.Println("home:", home.StatusCode)
	forged := send("POST", "/ui/hello", url.Values{"csrf": {"forged"}}, login.Cookies())
	fmt.Println("forged form:", forged.StatusCode)
	// Output:
	// login: 303 /ui/hello
	// home: 200
	// forged form: 403
}
