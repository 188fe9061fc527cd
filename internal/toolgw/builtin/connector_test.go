package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

const connectorToken = "gateway-to-connector-host-token"

// connectorHost is a fake connector host: a catalog, and per operation
// an answer (status and body); it records the calls it gets.
type connectorHost struct {
	srv      *httptest.Server
	catalog  atomic.Value // string
	catalogs atomic.Int32 // catalog reads
	// catalogStatus, when set, is the catalog's status instead of 200.
	catalogStatus atomic.Int32
	// block, when set, holds every catalog read and call until closed.
	block atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	answers map[string]hostAnswer // "id/op"
	calls   []hostCall
}

type hostAnswer struct {
	status int
	body   string
}

type hostCall struct {
	path   string
	header http.Header
	body   string
}

const testCatalog = `[
  {"id":"slack","tier":"standard","operations":[
    {"name":"send_message","description":"Posts a message to a channel","input_schema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}},"required":["channel","text"]},"read_only":false},
    {"name":"list_channels","description":"Lists channels.","read_only":true}
  ]},
  {"id":"clickup","operations":[{"name":"create-task","input_schema":{"properties":{"name":{"type":"string"}}}}]},
  {"id":"bloomberg","tier":"licensed","operations":[{"name":"quote","description":"A quote","read_only":true}]},
  {"id":"partner_x","tier":"ext","operations":[{"name":"sync","read_only":false}]},
  {"id":"bad id","operations":[{"name":"x"}]},
  {"id":"weird","tier":"premium","operations":[{"name":"x"}]},
  {"id":"schemas","operations":[{"name":"array_schema","input_schema":{"type":"array"}},{"name":"not_object","input_schema":"yes"},{"name":"bad.op"}]},
  {"id":"slack","operations":[{"name":"send_message"}]},
  {"id":"future","tier":"standard","added_later":true,"operations":[{"name":"ping","unknown_field":1}]}
]`

// the tool names testCatalog gives, sorted.
var catalogTools = []string{
	"novaos.connector.clickup.create-task",
	"novaos.connector.ext.partner_x.sync",
	"novaos.connector.future.ping",
	"novaos.connector.licensed.bloomberg.quote",
	"novaos.connector.slack.list_channels",
	"novaos.connector.slack.send_message",
}

func newConnectorHost(t *testing.T) *connectorHost {
	h := &connectorHost{answers: map[string]hostAnswer{}}
	h.catalog.Store(testCatalog)
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *connectorHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b := h.block.Load(); b != nil {
		select {
		case <-*b:
		case <-r.Context().Done():
			return
		}
	}
	if r.Header.Get("Authorization") != "Bearer "+connectorToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.URL.Path == builtin.ConnectorCatalogPath && r.Method == http.MethodGet {
		h.catalogs.Add(1)
		if st := h.catalogStatus.Load(); st != 0 {
			w.WriteHeader(int(st))
			if st == http.StatusServiceUnavailable {
				fmt.Fprint(w, `{"error":{"code":"SERVICE_DISABLED","message":"CONNECTOR_HOST_ENABLED=false"}}`)
			} else {
				fmt.Fprint(w, `{"error":"boom"}`)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, h.catalog.Load().(string))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, builtin.ConnectorCatalogPath+"/")
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.calls = append(h.calls, hostCall{path: r.URL.Path, header: r.Header.Clone(), body: string(body)})
	a, ok := h.answers[rest]
	h.mu.Unlock()
	if !ok {
		a = hostAnswer{200, `{"data":{"ok":true},"provenance":{"source":"` + rest + `"},"meta":{"took_ms":3}}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

func (h *connectorHost) answer(idOp string, status int, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers[idOp] = hostAnswer{status, body}
}

func (h *connectorHost) lastCall(t *testing.T) hostCall {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		t.Fatal("the connector host got no call")
	}
	return h.calls[len(h.calls)-1]
}

func (h *connectorHost) callCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

func connectorsFor(t *testing.T, h *connectorHost, o *builtin.ConnectorOptions) toolgw.Provider {
	t.Helper()
	var opts builtin.ConnectorOptions
	if o != nil {
		opts = *o
	}
	opts.ConnectorHostURL = h.srv.URL + "/"
	if opts.ConnectorToken.IsZero() {
		opts.ConnectorToken = secret.New(connectorToken)
	}
	p, err := builtin.Connectors(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConnectorsDisabled(t *testing.T) {
	p, err := builtin.Connectors(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := p.Tools(ctx, testCaller())
	if err != nil || len(list) != 0 {
		t.Errorf("Tools = %v, %v; want none", list, err)
	}
	for _, name := range []string{"novaos.connector.slack.send_message", "novaos.connector.licensed.bloomberg.quote", "novaos.connector.ext.x.y"} {
		_, ok, err := p.Find(ctx, testCaller(), name)
		if ok {
			t.Errorf("Find(%s) found a tool", name)
		}
		errorOf(t, nil, err, tools.ReasonServiceDisabled, "not enabled")
		tool := &toolgw.Tool{Tool: tools.Tool{Name: name}}
		res, err := p.Call(ctx, &toolgw.Request{Caller: testCaller(), Tool: tool, Arguments: json.RawMessage(`{}`)})
		errorOf(t, res, err, tools.ReasonServiceDisabled)
	}
	for _, name := range []string{"novaos.http.fetch", "novaos.connector.x", "novaos.connector.premium.x.y", "novaos.connector.a.b.c.d"} {
		if _, ok, err := p.Find(ctx, testCaller(), name); ok || err != nil {
			t.Errorf("Find(%s) = %v, %v; want not found", name, ok, err)
		}
	}
}

func TestConnectorsBadHostURL(t *testing.T) {
	for _, u := range []string{"ftp://host/", "http://user:pw@host/", "http://host/?q=1", "http://host/#f", "host:8080"} {
		if _, err := builtin.Connectors(&builtin.ConnectorOptions{ConnectorHostURL: u}); err == nil {
			t.Errorf("connector host URL %q taken", u)
		}
	}
}

func TestConnectorsCatalog(t *testing.T) {
	h := newConnectorHost(t)
	p := connectorsFor(t, h, nil)
	ctx := context.Background()
	list, err := p.Tools(ctx, testCaller())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]toolgw.Tool{}
	for _, tl := range list {
		names = append(names, tl.Name)
		byName[tl.Name] = tl
	}
	if !slices.Equal(names, catalogTools) {
		t.Fatalf("tools %v, want %v", names, catalogTools)
	}
	tests := []struct {
		name     string
		scopes   []string
		readOnly *bool
		class    tools.Class
	}{
		{"novaos.connector.slack.send_message", []string{"connector:invoke", "connector:slack:send_message"}, ptr(false), tools.ClassWrite},
		{"novaos.connector.slack.list_channels", []string{"connector:invoke", "connector:slack:list_channels"}, ptr(true), tools.ClassRead},
		{"novaos.connector.clickup.create-task", []string{"connector:invoke", "connector:clickup:create-task"}, nil, tools.ClassWrite},
		{"novaos.connector.future.ping", []string{"connector:invoke", "connector:future:ping"}, nil, tools.ClassWrite},
		{"novaos.connector.licensed.bloomberg.quote", []string{"connector:invoke", "connector:bloomberg:quote", "connector:licensed"}, ptr(true), tools.ClassRead},
		{"novaos.connector.ext.partner_x.sync", []string{"connector:invoke", "connector:partner_x:sync", "connector:ext"}, ptr(false), tools.ClassWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := byName[tc.name]
			if !slices.Equal(tl.Scopes, tc.scopes) {
				t.Errorf("scopes %v, want %v", tl.Scopes, tc.scopes)
			}
			for _, sc := range tl.Scopes {
				if !identity.ValidScope(sc) {
					t.Errorf("scope %q is not valid", sc)
				}
			}
			if got := tl.Annotations.ReadOnly; (got == nil) != (tc.readOnly == nil) || got != nil && *got != *tc.readOnly {
				t.Errorf("readOnlyHint %v, want %v", got, tc.readOnly)
			}
			if tl.Annotations.OpenWorld == nil || !*tl.Annotations.OpenWorld {
				t.Error("a connector tool is not open-world")
			}
			if c := tools.ActionClass(tl.Name, tl.Annotations); c != tc.class {
				t.Errorf("class %s, want %s", c, tc.class)
			}
			if !strings.Contains(tl.Description, `{"data": …, "provenance": {…}, "meta": {…}}`) {
				t.Errorf("description %q does not give the answer's shape", tl.Description)
			}
			var schema map[string]any
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Errorf("input schema %s", tl.InputSchema)
			}
			found, ok, err := p.Find(ctx, testCaller(), tc.name)
			if err != nil || !ok || found.Name != tc.name {
				t.Errorf("Find = %v, %v, %v", found, ok, err)
			}
		})
	}
	// A connector is found on its own tier only; unknown names are not.
	for _, name := range []string{"novaos.connector.bloomberg.quote", "novaos.connector.licensed.slack.send_message",
		"novaos.connector.ext.bloomberg.quote", "novaos.connector.slack.delete_workspace", "novaos.connector.schemas.array_schema"} {
		if _, ok, err := p.Find(ctx, testCaller(), name); ok || err != nil {
			t.Errorf("Find(%s) = %v, %v; want not found", name, ok, err)
		}
	}
	if n := h.catalogs.Load(); n != 1 {
		t.Errorf("the catalog was read %d times, want once", n)
	}
	// Changing what Tools returned changes nothing the provider keeps.
	list[0].Scopes[0] = "changed"
	again, _ := p.Tools(ctx, testCaller())
	if again[0].Scopes[0] != "connector:invoke" {
		t.Error("a caller's change of a listed tool reached the provider")
	}
}

func TestConnectorsCall(t *testing.T) {
	h := newConnectorHost(t)
	h.answer("slack/send_message", 200, `{"data":{"ts":"1.2"},"provenance":{"connector":"slack"},"meta":{"rate_limit_remaining":9}}`)
	h.answer("clickup/create-task", 400, `{"error":{"code":"BAD_PARAMS","message":"name is required"}}`)
	h.answer("future/ping", 422, `{"type":"about:blank","title":"Unprocessable","detail":"ping needs a target"}`)
	h.answer("ext-down/x", 503, `{"code":"SERVICE_DISABLED","message":"CONNECTOR_HOST_ENABLED=false"}`)
	h.answer("partner_x/sync", 502, `upstream exploded`)
	h.answer("bloomberg/quote", 200, `["not", "an", "object"]`)
	h.answer("slack/list_channels", 403, `{"error":"the tenant is not entitled to the knowledge tier"}`)
	p := connectorsFor(t, h, nil)
	args := json.RawMessage(`{"channel":"#ops","text":"deploy done","nested":{"a":[1,2]}}`)
	res, err := call(t, p, testCaller(), "novaos.connector.slack.send_message", args)
	got := answer(t, res, err)
	if !jsonEqual(got, map[string]any{"data": map[string]any{"ts": "1.2"}, "provenance": map[string]any{"connector": "slack"}, "meta": map[string]any{"rate_limit_remaining": 9}}) {
		t.Errorf("answer %v", got)
	}
	c := h.lastCall(t)
	if c.path != "/api/v1/connectors/slack/send_message" || c.body != string(args) {
		t.Errorf("call %s with %s", c.path, c.body)
	}
	wantHeaders := map[string]string{
		"Authorization": "Bearer " + connectorToken, "X-Tenant-Id": "acme", "X-Novaos-Agent-Id": "agent-1",
		"X-Novaos-Run-Id": "run-1", "X-Novaos-Instance-Id": "inst-1", "X-Novaos-User-Id": "alice",
		"Idempotency-Key": "call-1", "Content-Type": "application/json",
	}
	for k, v := range wantHeaders {
		if got := c.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	for k, vs := range c.header {
		if strings.Contains(strings.Join(vs, " "), callerToken) {
			t.Errorf("header %s carries the caller's token", k)
		}
	}

	failures := []struct {
		tool   string
		code   string // an error result's code
		reason string // else the error's reason
		want   string
		status int
	}{
		{tool: "novaos.connector.clickup.create-task", code: "BAD_PARAMS", want: "name is required", status: 400},
		{tool: "novaos.connector.future.ping", code: "CONNECTOR_ERROR", want: "ping needs a target", status: 422},
		{tool: "novaos.connector.slack.list_channels", code: "CONNECTOR_ERROR", want: "not entitled", status: 403},
		{tool: "novaos.connector.ext.partner_x.sync", reason: tools.ReasonUnavailable, want: "HTTP 502"},
		{tool: "novaos.connector.licensed.bloomberg.quote", reason: tools.ReasonUnavailable, want: "other than a JSON object"},
	}
	for _, f := range failures {
		t.Run(f.tool, func(t *testing.T) {
			res, err := call(t, p, testCaller(), f.tool, json.RawMessage(`{}`))
			if f.code != "" {
				m := failedWith(t, res, err, f.code, f.want)
				if m["status"] != float64(f.status) {
					t.Errorf("status %v, want %d", m["status"], f.status)
				}
				return
			}
			errorOf(t, res, err, f.reason, f.want)
		})
	}

	// A host that says it is disabled is SERVICE_DISABLED, whatever the
	// status; one that refuses the gateway's credentials is the
	// operator's problem.
	tool := &toolgw.Tool{Tool: tools.Tool{Name: "novaos.connector.ext-down.x"}}
	res, err = p.Call(context.Background(), &toolgw.Request{Caller: testCaller(), Tool: tool, Arguments: json.RawMessage(`{}`)})
	errorOf(t, res, err, tools.ReasonServiceDisabled, "CONNECTOR_HOST_ENABLED=false")
	wrong := connectorsFor(t, h, &builtin.ConnectorOptions{ConnectorToken: secret.New("wrong")})
	res, err = wrong.Call(context.Background(), &toolgw.Request{Caller: testCaller(), Tool: tool, Arguments: json.RawMessage(`{}`)})
	errorOf(t, res, err, tools.ReasonUnavailable, "refused the gateway's credentials")

	// Arguments that are not an object, or too large, are not sent.
	before := h.callCount()
	small := connectorsFor(t, h, &builtin.ConnectorOptions{MaxArgumentBytes: 16})
	for _, a := range []string{`[1]`, `{"a":1,"a":2}`, `{"text":"` + strings.Repeat("x", 20) + `"}`} {
		tool := &toolgw.Tool{Tool: tools.Tool{Name: "novaos.connector.slack.send_message"}}
		res, err := small.Call(context.Background(), &toolgw.Request{Caller: testCaller(), Tool: tool, Arguments: json.RawMessage(a)})
		failedWith(t, res, err, tools.ReasonInvalidArguments)
	}
	if h.callCount() != before {
		t.Error("a refused call reached the host")
	}
}

func TestConnectorsCatalogCache(t *testing.T) {
	h := newConnectorHost(t)
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p := connectorsFor(t, h, &builtin.ConnectorOptions{CatalogTTL: time.Minute, Now: clock})
	ctx := context.Background()
	count := func() int {
		t.Helper()
		list, err := p.Tools(ctx, testCaller())
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	if count() != len(catalogTools) || h.catalogs.Load() != 1 {
		t.Fatalf("first read: %d reads", h.catalogs.Load())
	}
	advance(59 * time.Second)
	count()
	if n := h.catalogs.Load(); n != 1 {
		t.Errorf("within the TTL: %d reads, want 1", n)
	}
	// Past the TTL the catalog is read again, and a change shows.
	h.catalog.Store(`[{"id":"only","operations":[{"name":"one"}]}]`)
	advance(2 * time.Second)
	if got := count(); got != 1 || h.catalogs.Load() != 2 {
		t.Errorf("past the TTL: %d tools, %d reads", got, h.catalogs.Load())
	}
	// A host that fails keeps the last catalog served.
	h.catalogStatus.Store(500)
	advance(2 * time.Minute)
	if got := count(); got != 1 {
		t.Errorf("host failing: %d tools, want the last catalog's 1", got)
	}
	reads := h.catalogs.Load()
	count()
	if h.catalogs.Load() != reads {
		t.Error("a failed read was tried again at once")
	}
}

func TestConnectorsCatalogFailures(t *testing.T) {
	tests := []struct {
		name    string
		catalog string
		status  int32
		reason  string
		want    string
	}{
		{"host disabled", testCatalog, http.StatusServiceUnavailable, tools.ReasonServiceDisabled, "CONNECTOR_HOST_ENABLED=false"},
		{"host failing", testCatalog, http.StatusInternalServerError, tools.ReasonUnavailable, "HTTP 500"},
		{"not JSON", `[{"id":`, 0, tools.ReasonUnavailable, "not valid JSON"},
		{"not an array", `{"connectors":[]}`, 0, tools.ReasonUnavailable, "not a JSON array"},
		{"a duplicate member", `[{"id":"a","id":"b"}]`, 0, tools.ReasonUnavailable, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newConnectorHost(t)
			h.catalog.Store(tc.catalog)
			h.catalogStatus.Store(tc.status)
			p := connectorsFor(t, h, nil)
			_, err := p.Tools(context.Background(), testCaller())
			errorOf(t, nil, err, tc.reason, tc.want)
			_, ok, err := p.Find(context.Background(), testCaller(), "novaos.connector.slack.send_message")
			if ok {
				t.Error("Find found a tool")
			}
			errorOf(t, nil, err, tc.reason)
		})
	}
	t.Run("too large", func(t *testing.T) {
		h := newConnectorHost(t)
		p := connectorsFor(t, h, &builtin.ConnectorOptions{MaxCatalogBytes: 64})
		_, err := p.Tools(context.Background(), testCaller())
		errorOf(t, nil, err, tools.ReasonUnavailable, "larger than 64 bytes")
	})
}

func TestConnectorsTimeouts(t *testing.T) {
	t.Run("catalog", func(t *testing.T) {
		h := newConnectorHost(t)
		release := make(chan struct{})
		h.block.Store(&release)
		defer close(release)
		p := connectorsFor(t, h, &builtin.ConnectorOptions{CatalogTimeout: 50 * time.Millisecond})
		_, err := p.Tools(context.Background(), testCaller())
		errorOf(t, nil, err, tools.ReasonUnavailable, "no answer within 50ms")
	})
	t.Run("call", func(t *testing.T) {
		h := newConnectorHost(t)
		p := connectorsFor(t, h, &builtin.ConnectorOptions{Timeout: 50 * time.Millisecond})
		tool, ok, err := p.Find(context.Background(), testCaller(), "novaos.connector.slack.send_message")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if tool.Timeout != 50*time.Millisecond {
			t.Errorf("the tool's timeout is %s", tool.Timeout)
		}
		release := make(chan struct{})
		h.block.Store(&release)
		defer close(release)
		res, err := p.Call(context.Background(), &toolgw.Request{Caller: testCaller(), Tool: tool, Arguments: json.RawMessage(`{}`)})
		errorOf(t, res, err, tools.ReasonTimeout, "no answer within 50ms")
	})
	t.Run("caller gives up", func(t *testing.T) {
		h := newConnectorHost(t)
		release := make(chan struct{})
		h.block.Store(&release)
		defer close(release)
		p := connectorsFor(t, h, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Tools(ctx, testCaller())
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Tools = %v, want the context's error", err)
		}
	})
}
