package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/tools"
)

func ptr[T any](v T) *T { return &v }

// Both MCP eras: a stateful server negotiates 2025-11-25 with a session,
// a stateless one 2026-07-28; the tools come through namespaced, with
// their schemas and annotations, and calls work.
func TestListAndCall(t *testing.T) {
	for _, c := range []struct {
		name      string
		stateless bool
		version   string
	}{
		{"sessions", false, "2025-11-25"},
		{"stateless", true, "2026-07-28"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, &Options{AllowPrivate: true})
			up := newUpServer(t, c.stateless)
			e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})

			list, err := e.p.Tools(context.Background(), acme)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"novaos.up.block", "novaos.up.delete_all", "novaos.up.dotted.name", "novaos.up.echo", "novaos.up.get_status", "novaos.up.traceparent"}
			if d := cmp.Diff(want, names(list)); d != "" {
				t.Errorf("tools (-want +got):\n%s", d)
			}
			byName := map[string]toolgw.Tool{}
			for _, tl := range list {
				byName[tl.Name] = tl
				if tl.Timeout != tools.DefaultServerTimeout {
					t.Errorf("%s: timeout %v, want the default %v", tl.Name, tl.Timeout, tools.DefaultServerTimeout)
				}
			}
			echo := byName["novaos.up.echo"]
			if echo.Title != "Echo" || echo.Description != "says it back" {
				t.Errorf("echo: title %q, description %q", echo.Title, echo.Description)
			}
			var in struct {
				Type       string
				Properties map[string]struct{ Type string }
			}
			if err := json.Unmarshal(echo.InputSchema, &in); err != nil || in.Type != "object" || in.Properties["text"].Type != "string" {
				t.Errorf("echo input schema %s (%v); want an object with a string text", echo.InputSchema, err)
			}
			if len(echo.OutputSchema) == 0 {
				t.Error("echo: the output schema was dropped")
			}
			for _, a := range []struct {
				tool string
				want *tools.Annotations
				cls  tools.Class
			}{
				{"novaos.up.echo", &tools.Annotations{ReadOnly: ptr(true), Idempotent: ptr(false), OpenWorld: ptr(false)}, tools.ClassRead},
				{"novaos.up.delete_all", &tools.Annotations{ReadOnly: ptr(false), Destructive: ptr(true), Idempotent: ptr(false)}, tools.ClassWrite},
				{"novaos.up.get_status", nil, tools.ClassRead},
				{"novaos.up.block", nil, tools.ClassWrite},
			} {
				got := byName[a.tool]
				if d := cmp.Diff(a.want, got.Annotations); d != "" {
					t.Errorf("%s annotations (-want +got):\n%s", a.tool, d)
				}
				if cls := tools.ActionClass(a.tool, got.Annotations); cls != a.cls {
					t.Errorf("%s classifies %s, want %s", a.tool, cls, a.cls)
				}
			}
			if byName["novaos.up.delete_all"].Title != "Delete everything" {
				t.Errorf("a title given only in the annotations was dropped")
			}
			if !strings.Contains(e.logs.String(), "bad name!") {
				t.Error("the tool whose name is not a gateway name was not logged as left out")
			}

			res, err := e.call("novaos.up.echo", map[string]string{"text": "hello"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || string(mustJSON(t, res.StructuredContent)) != `{"text":"hello"}` {
				t.Errorf("echo = %+v, structured %s", res, mustJSON(t, res.StructuredContent))
			}
			if got := text(t, mustCall(t, e, "novaos.up.dotted.name", nil)); got != "dotted" {
				t.Errorf("dotted.name = %q", got)
			}
			ss := e.sessionsOf("up")
			if len(ss) != 1 {
				t.Fatalf("%d sessions, want the one reused", len(ss))
			}
			if v := ss[0].cs.InitializeResult().ProtocolVersion; v != c.version {
				t.Errorf("negotiated %s, want %s", v, c.version)
			}

			if _, ok, err := e.p.Find(context.Background(), acme, "novaos.up.absent"); ok || err != nil {
				t.Errorf("Find of a tool the server lacks = %v, %v", ok, err)
			}
			for _, name := range []string{"novaos.other.echo", "novaos.memory.query", "not-a-tool", "novaos.up"} {
				if _, ok, err := e.p.Find(context.Background(), acme, name); ok || err != nil {
					t.Errorf("Find(%s) = %v, %v; want none", name, ok, err)
				}
			}
			globex := &toolgw.Caller{Tenant: "globex"}
			if list, err := e.p.Tools(context.Background(), globex); err != nil || len(list) != 0 {
				t.Errorf("another tenant's tools = %v, %v; want none", names(list), err)
			}
			if _, ok, _ := e.p.Find(context.Background(), globex, "novaos.up.echo"); ok {
				t.Error("another tenant finds acme's tool")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCall(t *testing.T, e *env, name string, args any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := e.call(name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// An upstream's own refusal is a failed result, not a failed call.
func TestUpstreamRefusal(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	res, err := e.call("novaos.up.echo", map[string]any{"text": 5})
	if err != nil {
		t.Fatalf("a call the upstream refuses: %v; want a failed result", err)
	}
	if !res.IsError {
		t.Fatalf("result %+v; want IsError", res)
	}
	if e.upstreamOf("up").breaker.State().String() != "closed" {
		t.Error("a refusal counted against the upstream")
	}
}

// A call past its timeout fails with TIMEOUT, and the upstream is told
// to stop; the registration's timeout bounds the call.
func TestTimeout(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint(), TimeoutMS: 60000})
	ctx := context.Background()
	block, ok, err := e.p.Find(ctx, acme, "novaos.up.block")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if block.Timeout != time.Minute {
		t.Errorf("the tool's timeout is %v, want the registration's minute", block.Timeout)
	}
	// The session is open (Find listed the tools): a short ceiling now
	// bounds only the call, which blocks until the test releases it.
	short := *block
	short.Timeout = 100 * time.Millisecond
	_, err = e.p.Call(ctx, &toolgw.Request{Caller: acme, Tool: &short})
	if reason(err) != tools.ReasonTimeout {
		t.Fatalf("a call past its timeout: %v; want %s", err, tools.ReasonTimeout)
	}
	<-up.blocked
	<-up.cancelled // the upstream saw the call cancelled
	// The session survives a timeout: the next call reuses it.
	if got := text(t, mustCall(t, e, "novaos.up.get_status", nil)); got != "ok" {
		t.Errorf("after a timeout get_status = %q", got)
	}
	if n := len(e.sessionsOf("up")); n != 1 {
		t.Errorf("%d sessions after a timeout, want the one", n)
	}

	// A call released in time answers.
	done := make(chan error, 1)
	go func() {
		res, err := e.p.Call(ctx, &toolgw.Request{Caller: acme, Tool: block})
		if err == nil && (len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "released") {
			err = errString("block did not answer released")
		}
		done <- err
	}()
	<-up.blocked
	up.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A caller that gives up says nothing against the upstream.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-up.blocked
		cancel()
	}()
	if _, err := e.p.Call(cctx, &toolgw.Request{Caller: acme, Tool: block}); err == nil || reason(err) != "" {
		t.Errorf("a cancelled call: %v; want the context's error", err)
	}
	<-up.cancelled
	if s := e.upstreamOf("up").breaker.State().String(); s != "closed" {
		t.Errorf("after a timeout and a cancel the circuit is %s", s)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Failures open the circuit: calls then fail at once without reaching
// the upstream, until the reset passes and a probe succeeds.
func TestBreaker(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true, BreakerThreshold: 2, BreakerReset: time.Minute})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	echo, ok, err := e.p.Find(context.Background(), acme, "novaos.up.echo")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	call := func() error {
		_, err := e.p.Call(context.Background(), &toolgw.Request{Caller: acme, Tool: echo, Arguments: []byte(`{"text":"x"}`)})
		return err
	}
	up.down.Store(true)
	// The session the listing opened fails, and so does a fresh dial.
	for i := range 2 {
		if err := call(); reason(err) != tools.ReasonUnavailable {
			t.Fatalf("call %d to a failing upstream: %v; want %s", i, err, tools.ReasonUnavailable)
		}
	}
	before := up.requests.Load()
	err = call()
	if reason(err) != tools.ReasonUnavailable || !strings.Contains(err.Error(), "circuit is open") {
		t.Fatalf("with the circuit open: %v", err)
	}
	if _, err := e.p.Tools(context.Background(), acme); err != nil {
		t.Fatal(err)
	}
	if n := up.requests.Load(); n != before {
		t.Fatalf("the upstream got %d requests while the circuit was open", n-before)
	}

	up.down.Store(false)
	e.clock.advance(time.Minute)
	if err := call(); err != nil {
		t.Fatalf("the probe after the reset: %v", err)
	}
	if s := e.upstreamOf("up").breaker.State().String(); s != "closed" {
		t.Errorf("after a good probe the circuit is %s", s)
	}

	// A probe that fails opens it again.
	up.down.Store(true)
	for range 2 {
		_ = call()
	}
	e.clock.advance(time.Minute)
	if err := call(); reason(err) != tools.ReasonUnavailable || strings.Contains(err.Error(), "circuit is open") {
		t.Fatalf("a failing probe: %v; want the upstream's failure", err)
	}
	if err := call(); err == nil || !strings.Contains(err.Error(), "circuit is open") {
		t.Fatalf("after a failed probe: %v; want the circuit open", err)
	}
}

// The tool list is cached for ListTTL, and a registration change, a
// disable or a removal takes effect at once.
func TestRegistrationChanges(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true, ListTTL: time.Minute})
	one := newUpServer(t, false)
	two := newUpServer(t, true, "only_two")
	ctx := context.Background()
	tools_ := func() []string {
		t.Helper()
		list, err := e.p.Tools(ctx, acme)
		if err != nil {
			t.Fatal(err)
		}
		return names(list)
	}
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: one.endpoint()})
	if got := tools_(); !slices.Contains(got, "novaos.up.echo") {
		t.Fatalf("tools %v", got)
	}

	// A tool the upstream gains shows once the cached list expires.
	addNamed(one.mcp, "get_new")
	if got := tools_(); slices.Contains(got, "novaos.up.get_new") {
		t.Fatalf("the cached list changed before its time: %v", got)
	}
	e.clock.advance(time.Minute)
	if got := tools_(); !slices.Contains(got, "novaos.up.get_new") {
		t.Fatalf("after the list expired: %v; want get_new", got)
	}
	first := e.sessionsOf("up")

	// A new registration drops the old list and sessions at once.
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: two.endpoint()})
	if got := tools_(); !slices.Contains(got, "novaos.up.only_two") || slices.Contains(got, "novaos.up.get_new") {
		t.Fatalf("after re-registering: %v", got)
	}
	for _, s := range first {
		<-s.done // the old registration's sessions were closed
	}
	if got := text(t, mustCall(t, e, "novaos.up.only_two", nil)); got != "only_two" {
		t.Errorf("only_two = %q", got)
	}

	// Disabled: no tools, nothing found.
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: two.endpoint(), Disabled: true})
	if got := tools_(); len(got) != 0 {
		t.Fatalf("a disabled server's tools: %v", got)
	}
	if _, ok, _ := e.p.Find(ctx, acme, "novaos.up.echo"); ok {
		t.Error("a disabled server's tool was found")
	}

	// Removed behind the provider's back (another replica): nothing
	// cached hides it.
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: two.endpoint()})
	echo, ok, err := e.p.Find(ctx, acme, "novaos.up.echo")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := e.store.DeleteServer(ctx, "acme", "up"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.p.Find(ctx, acme, "novaos.up.echo"); ok {
		t.Error("a removed server's tool was found from the cache")
	}
	// A call made past LookupReuse after its lookup reads the
	// registration again.
	e.clock.advance(DefaultLookupReuse)
	_, err = e.p.Call(ctx, &toolgw.Request{Caller: acme, Tool: echo, Arguments: []byte(`{"text":"x"}`)})
	if reason(err) != tools.ReasonToolNotFound {
		t.Errorf("calling a removed server's tool: %v; want %s", err, tools.ReasonToolNotFound)
	}
	if e.upstreamOf("up") != nil {
		t.Error("the provider keeps the state of a removed server")
	}
}

// Header values reach their own upstream only; the caller's token never
// leaves; nothing answered, stored in clear or logged carries a value.
func TestCredentials(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	other := newUpServer(t, false)
	const key, bearer = "key-5f1e3a", "Bearer upstream-cred-9d2c"
	info := e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint(),
		Headers: map[string]*string{"x-api-key": ptr(key), "Authorization": ptr(bearer)}})
	if d := cmp.Diff([]string{"Authorization", "X-Api-Key"}, info.Headers); d != "" {
		t.Errorf("header names (-want +got):\n%s", d)
	}
	e.register("other", tools.ServerRequest{Transport: tools.TransportHTTP, URL: other.endpoint()})
	mustCall(t, e, "novaos.up.get_status", nil)
	mustCall(t, e, "novaos.other.get_status", nil)

	for _, h := range up.seen() {
		if h.Get("X-Api-Key") != key || h.Get("Authorization") != bearer {
			t.Fatalf("a request to the upstream lacked its credentials: %v", redact(h))
		}
	}
	for _, srv := range []*upServer{up, other} {
		for _, h := range srv.seen() {
			for name, vs := range h {
				for _, v := range vs {
					if strings.Contains(v, acme.Token.Reveal()) {
						t.Fatalf("the caller's token reached an upstream in %s", name)
					}
				}
			}
		}
	}
	for _, h := range other.seen() {
		if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
			t.Fatal("one upstream's credentials reached another")
		}
	}

	stored, err := e.store.GetServer(context.Background(), "acme", "up")
	if err != nil {
		t.Fatal(err)
	}
	get := e.do(http.MethodGet, tools.ServersPath+"/up", "acme-admin", nil)
	list := e.do(http.MethodGet, tools.ServersPath, "acme-admin", nil)
	for what, b := range map[string]string{"the stored registration": string(stored.SealedCredentials) + string(mustJSON(t, stored)),
		"GET": string(get.body), "the list": string(list.body), "the logs": e.logs.String()} {
		for _, v := range []string{key, "upstream-cred-9d2c"} {
			if strings.Contains(b, v) {
				t.Errorf("%s carries a credential value", what)
			}
		}
	}

	// null keeps a value, a name left out goes.
	before := e.sessionsOf("up")
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint(),
		Headers: map[string]*string{"X-Api-Key": nil}})
	for _, s := range before {
		<-s.done // its closing request carries the old registration's headers
	}
	n := len(up.seen())
	mustCall(t, e, "novaos.up.get_status", nil)
	for _, h := range up.seen()[n:] {
		if h.Get("X-Api-Key") != key || h.Get("Authorization") != "" {
			t.Fatalf("after keeping one value and dropping the other: %v", redact(h))
		}
	}
	r := e.do(http.MethodPut, tools.ServersPath+"/fresh", "acme-admin", map[string]any{"transport": "http", "url": up.endpoint(),
		"headers": map[string]any{"X-Api-Key": nil}})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "none is stored") {
		t.Errorf("null with nothing stored: %d %s", r.status, r.body)
	}
}

func redact(h http.Header) []string {
	var out []string
	for name := range h {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// The SSRF guard refuses loopback and private upstreams unless allowed,
// at registration and again at dial time; metadata endpoints always.
func TestSSRF(t *testing.T) {
	e := newEnv(t, nil)
	up := newUpServer(t, false)
	for _, url := range []string{up.endpoint(), "http://10.0.0.8/mcp", "http://169.254.169.254/latest", "http://localhost:9/mcp"} {
		r := e.do(http.MethodPut, tools.ServersPath+"/up", "acme-admin", tools.ServerRequest{Transport: tools.TransportHTTP, URL: url})
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "public addresses only") {
			t.Errorf("registering %s: %d %s", url, r.status, r.body)
		}
	}
	// A registration written by another means is refused when dialled.
	if _, err := e.store.PutServer(context.Background(), tools.UpstreamServer{TenantID: "acme", Name: "up",
		Transport: tools.TransportHTTP, URL: up.endpoint()}, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.p.Find(context.Background(), acme, "novaos.up.echo")
	if reason(err) != tools.ReasonUnavailable || !strings.Contains(err.Error(), "not one this server may call") {
		t.Errorf("Find on a loopback upstream: %v", err)
	}
	_, err = e.p.Call(context.Background(), &toolgw.Request{Caller: acme, Tool: &toolgw.Tool{Tool: tools.Tool{Name: "novaos.up.echo"}}})
	if reason(err) != tools.ReasonUnavailable {
		t.Errorf("Call on a loopback upstream: %v", err)
	}
	if n := up.requests.Load(); n != 0 {
		t.Errorf("the loopback upstream got %d requests", n)
	}

	allowed := newEnv(t, &Options{AllowPrivate: true})
	r := allowed.do(http.MethodPut, tools.ServersPath+"/meta", "acme-admin", tools.ServerRequest{Transport: tools.TransportHTTP,
		URL: "http://169.254.169.254/latest"})
	if r.status != http.StatusBadRequest {
		t.Errorf("a metadata address with AllowPrivate: %d %s", r.status, r.body)
	}
}

// stdio servers: the allowed command runs with the sealed environment
// and nothing of the server's; one that dies is started again.
func TestStdio(t *testing.T) {
	o := stdioOptions(t)
	e := newEnv(t, &o)
	exe := o.AllowedCommands[0]
	t.Setenv("NOVAOS_UPSTREAM_TEST_LEAK", "the server's own environment")
	e.register("disk", tools.ServerRequest{Transport: tools.TransportStdio, Command: exe,
		Env: map[string]*string{"SECRET_TOKEN": ptr("s3cret-env")}})
	list, err := e.p.Tools(context.Background(), acme)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"novaos.disk.crash", "novaos.disk.echo", "novaos.disk.get_env", "novaos.disk.get_pid"}, names(list)); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if got := text(t, mustCall(t, e, "novaos.disk.echo", map[string]string{"text": "hi"})); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	if got := text(t, mustCall(t, e, "novaos.disk.get_env", map[string]string{"name": "SECRET_TOKEN"})); got != "s3cret-env" {
		t.Errorf("the registration's variable reached the server as %q", got)
	}
	if got := text(t, mustCall(t, e, "novaos.disk.get_env", map[string]string{"name": "NOVAOS_UPSTREAM_TEST_LEAK"})); got != "" {
		t.Errorf("the server's own environment leaked: %q", got)
	}
	pid := text(t, mustCall(t, e, "novaos.disk.get_pid", nil))
	if pid == "" {
		t.Fatalf("pid %q", pid)
	}
	ss := e.sessionsOf("disk")
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	if _, err := e.call("novaos.disk.crash", nil); reason(err) != tools.ReasonUnavailable {
		t.Errorf("a server dying mid-call: %v; want %s", err, tools.ReasonUnavailable)
	}
	<-ss[0].done
	again := text(t, mustCall(t, e, "novaos.disk.get_pid", nil))
	if again == pid {
		t.Errorf("after the process died the call went to pid %s again", again)
	}
	if strings.Contains(e.logs.String(), "s3cret-env") {
		t.Error("the logs carry an environment value")
	}
}

// Only allowed commands run, refused at registration with a clear error
// and again at dial time.
func TestStdioAllowList(t *testing.T) {
	o := stdioOptions(t)
	e := newEnv(t, &o)
	for _, c := range []struct {
		name string
		req  tools.ServerRequest
		want string
	}{
		{"another command", tools.ServerRequest{Transport: tools.TransportStdio, Command: "/bin/sh"}, "not a command the operator allowed"},
		{"no command", tools.ServerRequest{Transport: tools.TransportStdio}, "required for a stdio server"},
		{"a loader variable", tools.ServerRequest{Transport: tools.TransportStdio, Command: o.AllowedCommands[0],
			Env: map[string]*string{"LD_PRELOAD": ptr("/tmp/x.so")}}, "dynamic loader"},
		{"a url", tools.ServerRequest{Transport: tools.TransportStdio, Command: o.AllowedCommands[0], URL: "https://x.example/mcp"}, "not a url"},
	} {
		r := e.do(http.MethodPut, tools.ServersPath+"/disk", "acme-admin", c.req)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.name, r.status, r.body, c.want)
		}
	}
	off := newEnv(t, nil)
	r := off.do(http.MethodPut, tools.ServersPath+"/disk", "acme-admin", tools.ServerRequest{Transport: tools.TransportStdio,
		Command: o.AllowedCommands[0]})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "allowed no commands") {
		t.Errorf("stdio with no command allowed: %d %s", r.status, r.body)
	}
	// A registration written by another means runs nothing.
	if _, err := off.store.PutServer(context.Background(), tools.UpstreamServer{TenantID: "acme", Name: "disk",
		Transport: tools.TransportStdio, Command: o.AllowedCommands[0]}, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := off.p.Find(context.Background(), acme, "novaos.disk.echo"); reason(err) != tools.ReasonUnavailable {
		t.Errorf("a stdio registration on a server allowing none: %v", err)
	}
	if n := len(off.p.slots); n != 0 {
		t.Errorf("%d processes run", n)
	}
}

// At most MaxStdioProcesses run: an idle one is stopped to make room, and
// a call finding every one busy fails.
func TestStdioProcessBound(t *testing.T) {
	o := stdioOptions(t)
	o.MaxStdioProcesses = 1
	e := newEnv(t, &o)
	exe := o.AllowedCommands[0]
	e.register("aa", tools.ServerRequest{Transport: tools.TransportStdio, Command: exe})
	e.register("bb", tools.ServerRequest{Transport: tools.TransportStdio, Command: exe})
	mustCall(t, e, "novaos.aa.echo", map[string]string{"text": "a"})
	aSessions := e.sessionsOf("aa")
	mustCall(t, e, "novaos.bb.echo", map[string]string{"text": "b"})
	<-aSessions[0].done // aa's idle process was stopped for bb's
	if n := len(e.p.slots); n != 1 {
		t.Errorf("%d processes counted, want 1", n)
	}

	// bb busy: aa cannot start.
	reg, err := e.store.GetServer(context.Background(), "acme", "bb")
	if err != nil {
		t.Fatal(err)
	}
	bb := e.p.upstream(&reg)
	held, err := bb.acquire(context.Background(), &reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.call("novaos.aa.echo", map[string]string{"text": "a"})
	if reason(err) != tools.ReasonUnavailable || !strings.Contains(err.Error(), "busy") {
		t.Errorf("with every process busy: %v", err)
	}
	bb.release(held)
	mustCall(t, e, "novaos.aa.echo", map[string]string{"text": "a"})
	<-held.done
}

// Idle sessions are closed, and their processes stopped.
func TestIdle(t *testing.T) {
	o := stdioOptions(t)
	o.IdleTimeout = time.Minute
	o.AllowPrivate = true
	e := newEnv(t, &o)
	up := newUpServer(t, false)
	e.register("disk", tools.ServerRequest{Transport: tools.TransportStdio, Command: o.AllowedCommands[0]})
	e.register("web", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	mustCall(t, e, "novaos.disk.echo", map[string]string{"text": "x"})
	mustCall(t, e, "novaos.web.get_status", nil)
	ss := append(e.sessionsOf("disk"), e.sessionsOf("web")...)
	if len(ss) != 2 {
		t.Fatalf("%d sessions", len(ss))
	}
	e.clock.advance(time.Minute - time.Second)
	e.p.reap()
	if len(e.sessionsOf("disk")) != 1 || len(e.sessionsOf("web")) != 1 {
		t.Fatal("sessions were closed before their idle timeout")
	}
	e.clock.advance(time.Second)
	e.p.reap()
	for _, s := range ss {
		<-s.done
	}
	if n := len(e.p.slots); n != 0 {
		t.Errorf("%d stdio processes counted after the idle close", n)
	}
	if e.upstreamOf("disk") != nil || e.upstreamOf("web") != nil {
		t.Error("idle servers' states were kept")
	}
	mustCall(t, e, "novaos.web.get_status", nil)
}

// A session the upstream forgot (it restarted) is replaced and the call
// sent again: the upstream refused it without running it.
func TestSessionMissing(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	mustCall(t, e, "novaos.up.get_status", nil)
	old := e.sessionsOf("up")
	// The upstream forgets its sessions: each is answered 404 from now on.
	for ss := range up.mcp.Sessions() {
		ss.Close()
	}
	if got := text(t, mustCall(t, e, "novaos.up.get_status", nil)); got != "ok" {
		t.Fatalf("after the upstream forgot the session: %q", got)
	}
	<-old[0].done
}

// Concurrent calls share sessions up to the pool's bound, and all answer.
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true, MaxSessionsPerServer: 2})
	up := newUpServer(t, true)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	tool, ok, err := e.p.Find(context.Background(), acme, "novaos.up.echo")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			res, err := e.p.Call(context.Background(), &toolgw.Request{Caller: acme, Tool: tool,
				Arguments: mustJSON(t, map[string]string{"text": strings.Repeat("x", i)})})
			if err == nil && res.IsError {
				err = errString("an error result")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(e.sessionsOf("up")); n > 2 {
		t.Errorf("%d sessions, more than the bound", n)
	}
}

// Close stops every process and refuses later calls.
func TestClose(t *testing.T) {
	o := stdioOptions(t)
	e := newEnv(t, &o)
	e.register("disk", tools.ServerRequest{Transport: tools.TransportStdio, Command: o.AllowedCommands[0]})
	mustCall(t, e, "novaos.disk.echo", map[string]string{"text": "x"})
	ss := e.sessionsOf("disk")
	if err := e.p.Close(); err != nil {
		t.Fatal(err)
	}
	<-ss[0].done
	if n := len(e.p.slots); n != 0 {
		t.Errorf("%d processes after Close", n)
	}
	if _, _, err := e.p.Find(context.Background(), acme, "novaos.disk.echo"); reason(err) != tools.ReasonUnavailable ||
		!strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Find after Close: %v", err)
	}
}

// A session dialled by a call made inside an MCP server's handler, as
// the gateway's calls are, initializes as the provider's client would
// anywhere: the calling server's protocol revision is its caller's, not
// the provider's, and a session-era upstream refuses it.
func TestDialFromInsideAServer(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, false)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	tool, ok, err := e.p.Find(context.Background(), acme, "novaos.up.echo")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Find dialled a session outside any server; drop it, so that the
	// call dials its own.
	e.p.forget(key{"acme", "up"})
	front := mcp.NewServer(&mcp.Implementation{Name: "front", Version: "1"}, nil)
	mcp.AddTool(front, &mcp.Tool{Name: "relay"}, func(ctx context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		res, err := e.p.Call(ctx, &toolgw.Request{Caller: acme, Tool: tool, Arguments: mustJSON(t, in)})
		if err != nil {
			return nil, nil, err
		}
		return res, nil, nil
	})
	srv := newTestServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return front },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "relay", Arguments: map[string]string{"text": "through"}})
	if err != nil {
		t.Fatalf("relayed call: %v", err)
	}
	if res.IsError {
		t.Fatalf("relayed call failed: %s", text(t, res))
	}
	if len(e.sessionsOf("up")) != 1 {
		t.Fatalf("sessions %v, want the one the call dialled", e.sessionsOf("up"))
	}
}

// countingStore counts the registration reads of a store.
type countingStore struct {
	tools.ServerStore
	gets atomic.Int64
}

func (s *countingStore) GetServer(ctx context.Context, tenant, name string) (tools.UpstreamServer, error) {
	s.gets.Add(1)
	return s.ServerStore.GetServer(ctx, tenant, name)
}

// A call reads its registration once, when its tool is looked up; a
// lookup that is not the caller's, not the tool's, or too old is read
// again.
func TestLookupServesItsCall(t *testing.T) {
	e := newEnv(t, &Options{AllowPrivate: true})
	up := newUpServer(t, true)
	e.register("up", tools.ServerRequest{Transport: tools.TransportHTTP, URL: up.endpoint()})
	st := &countingStore{ServerStore: e.store}
	p, err := New(st, Deps{}, &Options{AllowPrivate: true, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	echo, ok, err := p.Find(ctx, acme, "novaos.up.echo")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	args := []byte(`{"text":"x"}`)
	for _, tc := range []struct {
		name  string
		c     *toolgw.Caller
		tool  func() *toolgw.Tool
		reads int64
	}{
		{"the lookup's call", acme, func() *toolgw.Tool { return echo }, 0},
		{"another tenant's call", &toolgw.Caller{Tenant: "globex", Agent: "a"}, func() *toolgw.Tool { return echo }, 1},
		{"another tool's name", acme, func() *toolgw.Tool {
			other := *echo
			other.Name = "novaos.other.echo"
			return &other
		}, 1},
		{"no lookup", acme, func() *toolgw.Tool {
			bare := *echo
			bare.Source = nil
			return &bare
		}, 1},
		{"a lookup too old", acme, func() *toolgw.Tool {
			e.clock.advance(DefaultLookupReuse)
			return echo
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := st.gets.Load()
			_, _ = p.Call(ctx, &toolgw.Request{Caller: tc.c, Tool: tc.tool(), Arguments: args})
			if got := st.gets.Load() - before; got != tc.reads {
				t.Errorf("%d registration reads, want %d", got, tc.reads)
			}
		})
	}
}
