package upstream

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/tools"
)

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true, MaxServersPerTenant: 2, MaxBodyBytes: 4096})
	up := newUpServer(t, false)
	path := tools.ServersPath + "/up"
	ok := map[string]any{"transport": "http", "url": up.endpoint(), "headers": map[string]any{"X-Api-Key": "k"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name    string
		method  string
		path    string
		token   string
		body    any
		headers []string
		status  int
		want    string // in the body
	}{
		{"no token", http.MethodGet, tools.ServersPath, "", nil, nil, http.StatusUnauthorized, ""},
		{"a bad token", http.MethodGet, tools.ServersPath, "nope", nil, nil, http.StatusUnauthorized, ""},
		{"no scope", http.MethodGet, tools.ServersPath, "acme-user", nil, nil, http.StatusForbidden, "tools:admin"},
		{"another tenant's header", http.MethodGet, tools.ServersPath, "acme-admin", nil, []string{"X-Tenant-ID: globex"}, http.StatusForbidden, "does not match"},
		{"the operator without a tenant", http.MethodGet, tools.ServersPath, "admin", nil, nil, http.StatusBadRequest, "X-Tenant-ID"},
		{"a built-in name", http.MethodPut, tools.ServersPath + "/memory", "acme-admin", ok, nil, http.StatusBadRequest, "built-in"},
		{"a bad name", http.MethodPut, tools.ServersPath + "/Up", "acme-admin", ok, nil, http.StatusBadRequest, "name"},
		{"an unknown field", http.MethodPut, path, "acme-admin", with("secret", "x"), nil, http.StatusBadRequest, "malformed"},
		{"a duplicate key", http.MethodPut, path, "acme-admin", `{"transport":"http","transport":"stdio"}`, nil, http.StatusBadRequest, ""},
		{"too large", http.MethodPut, path, "acme-admin", with("args", []string{strings.Repeat("a", 5000)}), nil, http.StatusRequestEntityTooLarge, ""},
		{"no transport", http.MethodPut, path, "acme-admin", map[string]any{"url": up.endpoint()}, nil, http.StatusBadRequest, "transport"},
		{"a reserved header", http.MethodPut, path, "acme-admin", with("headers", map[string]string{"Mcp-Session-Id": "x"}), nil, http.StatusBadRequest, "sets itself"},
		{"a header value with a newline", http.MethodPut, path, "acme-admin", with("headers", map[string]string{"X-Key": "a\r\nX-Evil: 1"}), nil, http.StatusBadRequest, "control character"},
		{"a long timeout", http.MethodPut, path, "acme-admin", with("timeout_ms", 120001), nil, http.StatusBadRequest, "timeout_ms"},
		{"a bad If-Match", http.MethodPut, path, "acme-admin", ok, []string{"If-Match: soon"}, http.StatusBadRequest, "If-Match"},
		{"If-Match on nothing", http.MethodPut, path, "acme-admin", ok, []string{`If-Match: "1"`}, http.StatusPreconditionFailed, ""},
		{"absent", http.MethodGet, path, "acme-admin", nil, nil, http.StatusNotFound, tools.ProblemServerNotFound},
		{"delete absent", http.MethodDelete, path, "acme-admin", nil, nil, http.StatusNotFound, ""},
		{"a method not served", http.MethodPost, path, "acme-admin", ok, nil, http.StatusMethodNotAllowed, ""},
	} {
		r := e.do(c.method, c.path, c.token, c.body, c.headers...)
		if r.status != c.status || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, r.status, r.body, c.status, c.want)
		}
	}
	if list, _ := e.store.ListServers(context.Background(), "acme"); len(list) != 0 {
		t.Fatalf("refused requests stored %d servers", len(list))
	}

	r := e.do(http.MethodPut, path, "acme-admin", ok, "If-None-Match: *")
	if r.status != http.StatusCreated || r.header.Get("ETag") != `"1"` || r.header.Get("Location") != path {
		t.Fatalf("create: %d %v %s", r.status, r.header, r.body)
	}
	var info tools.ServerInfo
	r.decode(t, &info)
	if info.Name != "up" || info.Version != 1 || info.TimeoutMS != 30000 || len(info.Headers) != 1 {
		t.Errorf("created %+v", info)
	}
	if r := e.do(http.MethodPut, path, "acme-admin", ok, "If-None-Match: *"); r.status != http.StatusPreconditionFailed {
		t.Errorf("create-only on an existing server: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, path, "acme-admin", with("timeout_ms", 5000), `If-Match: "1"`); r.status != http.StatusOK || r.header.Get("ETag") != `"2"` {
		t.Errorf("replace at version 1: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, path, "acme-admin", ok, `If-Match: "1"`); r.status != http.StatusPreconditionFailed {
		t.Errorf("replace at a stale version: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, path, "acme-admin", with("disabled", true)); r.status != http.StatusOK || r.header.Get("ETag") != `"3"` {
		t.Errorf("an unconditional replace: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodGet, path, "admin", nil, "X-Tenant-ID: acme")
	r.decode(t, &info)
	if r.status != http.StatusOK || r.header.Get("ETag") != `"3"` || !info.Disabled || info.TimeoutMS != 30000 {
		t.Errorf("GET as the operator: %d %s", r.status, r.body)
	}
	var list tools.ServerList
	r = e.do(http.MethodGet, tools.ServersPath, "acme-admin", nil)
	r.decode(t, &list)
	if len(list.Servers) != 1 || list.Servers[0].Name != "up" {
		t.Errorf("list: %s", r.body)
	}
	r = e.do(http.MethodGet, tools.ServersPath, "globex-admin", nil)
	r.decode(t, &list)
	if len(list.Servers) != 0 {
		t.Errorf("another tenant's list: %s", r.body)
	}
	if r := e.do(http.MethodGet, path, "globex-admin", nil); r.status != http.StatusNotFound {
		t.Errorf("another tenant's GET: %d", r.status)
	}

	e.register("second", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	if r := e.do(http.MethodPut, tools.ServersPath+"/third", "acme-admin", ok); r.status != http.StatusConflict || r.problemType() != tools.ProblemServerLimit {
		t.Errorf("past the most servers: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodDelete, path, "acme-admin", nil); r.status != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, path, "acme-admin", nil); r.status != http.StatusNotFound {
		t.Errorf("GET after delete: %d", r.status)
	}
	if r := e.do(http.MethodPut, tools.ServersPath+"/third", "acme-admin", ok); r.status != http.StatusCreated {
		t.Errorf("a server in the room a delete made: %d %s", r.status, r.body)
	}
	if strings.Contains(e.logs.String(), `"k"`) {
		t.Error("a header value reached the logs")
	}
}

// Without a sealing key a registration carrying values is refused, one
// without is kept.
func TestAdminNoSealer(t *testing.T) {
	store := tools.NewMemoryServerStore()
	p, err := New(store, Deps{Auth: testAuth}, &Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := &env{t: t, store: store, p: p}
	mux := http.NewServeMux()
	for _, r := range p.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	e.api = newTestServer(t, mux)
	r := e.do(http.MethodPut, tools.ServersPath+"/up", "acme-admin", map[string]any{"transport": "http", "url": "http://127.0.0.1:1/mcp",
		"headers": map[string]string{"X-Api-Key": "k"}})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "no key to seal") {
		t.Errorf("values without a sealer: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, tools.ServersPath+"/up", "acme-admin", map[string]any{"transport": "http", "url": "http://127.0.0.1:1/mcp"}); r.status != http.StatusCreated {
		t.Errorf("no values without a sealer: %d %s", r.status, r.body)
	}
}

// Without an authenticator the API refuses everyone.
func TestAdminNoAuth(t *testing.T) {
	p, err := New(tools.NewMemoryServerStore(), Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := &env{t: t, p: p}
	mux := http.NewServeMux()
	for _, r := range p.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	e.api = newTestServer(t, mux)
	if r := e.do(http.MethodGet, tools.ServersPath, "admin", nil, "X-Tenant-ID: acme"); r.status != http.StatusForbidden {
		t.Errorf("no authenticator: %d %s", r.status, r.body)
	}
}
