package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// stdioServerEnv, set in a process's environment, makes the test binary
// a stdio MCP server (see TestMain): the stdio tests run it as their
// allowed command, so they need no network and no build step.
const stdioServerEnv = "NOVAOS_UPSTREAM_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		if err := stdioServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type textIn struct {
	Text string `json:"text"`
}

type nameIn struct {
	Name string `json:"name"`
}

type none struct{}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// stdioServer is the test binary's MCP server over stdio.
func stdioServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_env"}, func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
		return textResult(os.Getenv(in.Name)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "get_pid"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult(fmt.Sprint(os.Getpid())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	return s
}

// upServer is an upstream MCP server over Streamable HTTP (go-sdk), which
// records every request's headers.
type upServer struct {
	*httptest.Server
	mcp *mcp.Server

	mu      sync.Mutex
	headers []http.Header

	// down makes every request fail with 503.
	down     atomic.Bool
	requests atomic.Int64
	// blocked receives when the block tool starts, cancelled when its
	// call's context ends; release lets it answer.
	blocked   chan struct{}
	cancelled chan struct{}
	release   chan struct{}
}

func newUpServer(t *testing.T, stateless bool, extra ...string) *upServer {
	t.Helper()
	u := &upServer{blocked: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	tru := true
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Title: "Echo", Description: "says it back",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, textIn, error) {
			return nil, in, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_status"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult("ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_all", Annotations: &mcp.ToolAnnotations{Title: "Delete everything", DestructiveHint: &tru}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return textResult("deleted"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "dotted.name"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult("dotted"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "bad name!"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult("never listed"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		u.blocked <- struct{}{}
		select {
		case <-u.release:
			return textResult("released"), nil, nil
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "traceparent"}, func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return textResult(tp), nil, nil
	})
	for _, name := range extra {
		addNamed(s, name)
	}
	u.mcp = s
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		if u.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// addNamed adds a tool answering its own name.
func addNamed(s *mcp.Server, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult(name), nil, nil
	})
}

func (u *upServer) endpoint() string { return u.URL + "/mcp" }

// seen returns the headers of every request so far.
func (u *upServer) seen() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.headers...)
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// env is a provider over a memory store, its admin API on a test server,
// and a clock.
type env struct {
	t     *testing.T
	store *tools.MemoryServerStore
	p     *Provider
	clock *clock
	api   *httptest.Server
	logs  *syncBuffer
}

// testAuth knows the tokens the tests present.
var testAuth = httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
	tok, _ := httpapi.BearerToken(r)
	switch tok {
	case "admin":
		return &httpapi.Caller{Admin: true, Subject: "admin"}, nil
	case "acme-admin":
		return &httpapi.Caller{Subject: "alice", Claims: &identity.Claims{TenantID: "acme", Subject: "alice", Scopes: []string{tools.ScopeAdmin}}}, nil
	case "acme-user":
		return &httpapi.Caller{Subject: "bob", Claims: &identity.Claims{TenantID: "acme", Subject: "bob", Scopes: []string{"mcp:tools:*"}}}, nil
	case "globex-admin":
		return &httpapi.Caller{Subject: "carol", Claims: &identity.Claims{TenantID: "globex", Subject: "carol", Scopes: []string{"tools:*"}}}, nil
	}
	return nil, httpapi.ErrUnauthenticated
})

func newEnv(t *testing.T, o *Options) *env {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	e := &env{t: t, store: tools.NewMemoryServerStore(), clock: newClock(), logs: &syncBuffer{}}
	if opts.Now == nil {
		opts.Now = e.clock.Now
	}
	opts.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sealer, err := sealkey.Open(filepath.Join(t.TempDir(), "seal.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(e.store, Deps{Sealer: sealer, Auth: testAuth}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	t.Cleanup(func() { p.Close() })
	mux := http.NewServeMux()
	for _, r := range p.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	e.api = httptest.NewServer(mux)
	t.Cleanup(e.api.Close)
	return e
}

// stdioOptions allow the test binary as a stdio server.
func stdioOptions(t *testing.T) Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{AllowedCommands: []string{exe}, StdioEnv: []string{stdioServerEnv + "=1"}}
}

// response is an answer of the admin API.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// problemType is the type of a problem answer.
func (r response) problemType() string {
	var p struct{ Type string }
	_ = json.Unmarshal(r.body, &p)
	return p.Type
}

// do calls the admin API with token (and headers as "Name: value").
func (e *env) do(method, path, token string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.api.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := e.api.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// register puts a server for acme through the admin API and fails the
// test unless it is stored.
func (e *env) register(name string, req tools.ServerRequest) tools.ServerInfo {
	e.t.Helper()
	r := e.do(http.MethodPut, tools.ServersPath+"/"+name, "acme-admin", req)
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		e.t.Fatalf("PUT %s: %d %s", name, r.status, r.body)
	}
	var info tools.ServerInfo
	r.decode(e.t, &info)
	return info
}

var acme = &toolgw.Caller{Tenant: "acme", Agent: "agent-1", Subject: "agent-1", Token: secret.New("caller-token-must-stay-home")}

// names are the names of tools.
func names(list []toolgw.Tool) []string {
	out := make([]string, 0, len(list))
	for _, t := range list {
		out = append(out, t.Name)
	}
	return out
}

// call finds and calls a tool of acme's.
func (e *env) call(name string, args any) (*mcp.CallToolResult, error) {
	e.t.Helper()
	return e.callCtx(context.Background(), name, args)
}

// callCtx is call in ctx.
func (e *env) callCtx(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	e.t.Helper()
	tool, ok, err := e.p.Find(ctx, acme, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		e.t.Fatalf("Find(%s): no such tool", name)
	}
	b, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.p.Call(ctx, &toolgw.Request{Caller: acme, Tool: tool, Arguments: b, CallID: "call-1"})
}

// text is a result's first text content.
func text(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if r == nil || len(r.Content) == 0 {
		t.Fatalf("result %+v has no content", r)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content %T, want text", r.Content[0])
	}
	return tc.Text
}

// reason is the reason of a *toolgw.Error, or "" for another error.
func reason(err error) string {
	var te *toolgw.Error
	if errors.As(err, &te) {
		return te.Reason
	}
	return ""
}

// upstreamOf returns the provider's state of acme's server name.
func (e *env) upstreamOf(name string) *upstream {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return e.p.ups[key{"acme", name}]
}

// sessionsOf returns the live sessions of acme's server name.
func (e *env) sessionsOf(name string) []*session {
	u := e.upstreamOf(name)
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*session(nil), u.sessions...)
}

func newTestServer(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
