package execgw_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/secret"
)

// pageClient is a browser-like client of the runs page: it keeps the
// session cookie and sends the page's Origin on POSTs.
type pageClient struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	csrf   string
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (c *pageClient) do(method, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", c.base)
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, k := range resp.Cookies() {
		if k.Name == "novaos_runs_session" {
			c.cookie = k
		}
	}
	if m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(b)); m != nil {
		c.csrf = m[1]
	}
	return resp, string(b)
}

// login signs in with token and returns the login's status.
func (c *pageClient) login(token string) int {
	c.t.Helper()
	resp, _ := c.do("POST", execgw.RunsPagePath+"/login", url.Values{"token": {token}})
	return resp.StatusCode
}

func TestRunsPageAuthenticate(t *testing.T) {
	e := newEnv(t, nil, nil)
	for _, tc := range []struct {
		name, token string
		status      int
		shows       string
	}{
		{"the admin token", adminTok, http.StatusSeeOther, "admin · every tenant"},
		{"a user token", userTok, http.StatusSeeOther, "tenant acme"},
		{"a service account", serviceTok, http.StatusSeeOther, "service account"},
		{"neither a user nor a service account", "t|acme||runs:read", http.StatusForbidden, "names no user and is no service account"},
		{"without runs:read", "t|acme|alice|instances:read", http.StatusUnauthorized, "Refused"},
		{"without a tenant", "t||alice|runs:read", http.StatusUnauthorized, "Refused"},
		{"not a token", "nope", http.StatusUnauthorized, "Refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &pageClient{t: t, base: e.srv.URL}
			resp, body := c.do("POST", execgw.RunsPagePath+"/login", url.Values{"token": {tc.token}})
			if resp.StatusCode != tc.status {
				t.Fatalf("login: %d, want %d\n%s", resp.StatusCode, tc.status, body)
			}
			if tc.status == http.StatusSeeOther {
				_, body = c.do("GET", execgw.RunsPagePath, nil)
			}
			if !strings.Contains(body, tc.shows) {
				t.Errorf("page lacks %q:\n%s", tc.shows, body)
			}
			if strings.Contains(body, tc.token) && tc.token != "nope" {
				t.Error("the page shows the token")
			}
		})
	}
}

// The page applies the gateway's rules: a user sees and acts on their own
// runs only, a service account and the operator on every run of the
// tenant.
func TestRunsPageVisibility(t *testing.T) {
	started := make(chan struct{}, 4)
	e := newEnv(t, hostedAgents{"slow": blockingAgent(started)}, nil)
	inst := e.install("slow", "slow", nil)
	alices := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "alice's question"})
	bobs := e.execute(bobTok, gateway.ExecuteRequest{InstanceID: inst, Input: "bob's question"})
	e.waitStatus(alices, gateway.StatusRunning)
	e.waitStatus(bobs, gateway.StatusRunning)

	for _, tc := range []struct {
		token       string
		sees, hides []string
	}{
		{userTok, []string{alices}, []string{bobs}},
		{bobTok, []string{bobs}, []string{alices}},
		{serviceTok, []string{alices, bobs}, nil},
		{adminTok, []string{alices, bobs}, nil},
		{otherTok, nil, []string{alices, bobs}},
	} {
		c := &pageClient{t: t, base: e.srv.URL}
		if st := c.login(tc.token); st != http.StatusSeeOther {
			t.Fatalf("%s: login %d", tc.token, st)
		}
		_, list := c.do("GET", execgw.RunsPagePath, nil)
		for _, id := range tc.sees {
			if !strings.Contains(list, `data-run-id="`+id+`"`) {
				t.Errorf("%s: the list lacks %s", tc.token, id)
			}
			if resp, _ := c.do("GET", execgw.RunsPagePath+"/"+id, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("%s: run page of %s: %d", tc.token, id, resp.StatusCode)
			}
		}
		for _, id := range tc.hides {
			if strings.Contains(list, id) {
				t.Errorf("%s: the list shows %s", tc.token, id)
			}
			for _, path := range []string{"/" + id, "/" + id + "/events"} {
				if resp, _ := c.do("GET", execgw.RunsPagePath+path, nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("%s: GET %s: %d, want 404", tc.token, path, resp.StatusCode)
				}
			}
			resp, _ := c.do("POST", execgw.RunsPagePath+"/"+id+"/cancel", url.Values{"csrf": {c.csrf}})
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != execgw.RunsPagePath {
				t.Errorf("%s: cancel %s: %d to %q, want 303 to the list", tc.token, id, resp.StatusCode, loc)
			}
		}
	}
	for _, id := range []string{alices, bobs} {
		if r, _ := e.store.GetRun(t.Context(), "", id); r.Status != gateway.StatusRunning {
			t.Fatalf("run %s is %s: a refused cancel changed it", id, r.Status)
		}
	}
	// The operator cancels any tenant's run.
	c := &pageClient{t: t, base: e.srv.URL}
	c.login(adminTok)
	c.do("GET", execgw.RunsPagePath, nil)
	if resp, _ := c.do("POST", execgw.RunsPagePath+"/"+bobs+"/cancel", url.Values{"csrf": {c.csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("operator's cancel: %d", resp.StatusCode)
	}
	if r := e.waitStatus(bobs, gateway.StatusCancelled); r.Reason != "cancelled by admin" {
		t.Errorf("reason %q", r.Reason)
	}
}

// Cookies are Secure when the server's public URL is https.
func TestRunsPageSecureCookies(t *testing.T) {
	for _, tc := range []struct {
		base   string
		secure bool
	}{{"https://novaos.example", true}, {"http://127.0.0.1:8080", false}} {
		svc := execgw.New(gateway.NewMemoryStore(), execgw.Deps{AdminToken: secret.New(adminTok), Tokens: &fakeTokens{}, BaseURL: tc.base}, nil)
		mux := http.NewServeMux()
		for _, r := range svc.Routes() {
			mux.Handle(r.Pattern, r.Handler)
		}
		srv := httptest.NewServer(mux)
		c := &pageClient{t: t, base: srv.URL}
		if st := c.login(userTok); st != http.StatusSeeOther || c.cookie == nil {
			t.Fatalf("%s: login %d", tc.base, st)
		}
		if c.cookie.Secure != tc.secure || c.cookie.Path != execgw.RunsPagePath {
			t.Errorf("%s: cookie Secure=%v Path=%q, want Secure=%v", tc.base, c.cookie.Secure, c.cookie.Path, tc.secure)
		}
		srv.Close()
		_ = svc.Shutdown(t.Context())
	}
}

// blockingAgent works on every run until the gateway hangs up.
func blockingAgent(started chan<- struct{}) *script {
	step := func(_ *a2a.SendMessageRequest, w *frameWriter) {
		w.status(a2a.TaskStateWorking, nil)
		started <- struct{}{}
		<-w.ctx.Done()
	}
	return &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){step, step, step, step}}
}
