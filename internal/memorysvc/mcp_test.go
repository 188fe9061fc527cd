package memorysvc

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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// serveMCP serves s with a stand-in for the platform's token middleware:
// "Bearer good" is the agent caller, anything else is nobody.
func serveMCP(t *testing.T, s *Service) (*httptest.Server, *Caller) {
	t.Helper()
	c := agentCaller("t1", "a1")
	h := s.Handler(func(r *http.Request) (*Caller, bool) {
		if r.Header.Get("Authorization") == "Bearer good" {
			return c, true
		}
		return nil, false
	}, &HandlerOptions{MaxBodyBytes: 64 << 10})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, c
}

// bearer adds a token to every request of an http.Client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestOfficialMCPClient lists and calls the tools with the MCP go-sdk's
// own client, as any MCP client would.
func TestOfficialMCPClient(t *testing.T) {
	s, _ := newService(t, nil)
	srv, _ := serveMCP(t, s)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{"good", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tools, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s lacks a schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{ToolAssemble, ToolForget, ToolHint, ToolHintStatus, ToolProposalStatus, ToolQuery, ToolUpdate, ToolWrite}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: ToolWrite, Arguments: map[string]any{"scope": "run", "content": "Customer chose the annual plan."}})
	if err != nil || res.IsError {
		t.Fatalf("write: %+v, %v", res, err)
	}
	var w memory.WriteResult
	remarshal(t, res.StructuredContent, &w)
	if w.MemoryID == "" || !w.Durable {
		t.Fatalf("write result = %+v", w)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: ToolQuery, Arguments: map[string]any{"scope": "run", "query": "plan"}})
	if err != nil || res.IsError {
		t.Fatalf("query: %+v, %v", res, err)
	}
	var q memory.QueryResult
	remarshal(t, res.StructuredContent, &q)
	if len(q.Items) != 1 || q.Items[0].MemoryID != w.MemoryID {
		t.Fatalf("query result = %+v", q)
	}
	// A refused call is a tool error carrying the status, code, field and
	// rule.
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: ToolWrite, Arguments: map[string]any{"scope": "user", "content": "x y z"}})
	if err != nil || !res.IsError {
		t.Fatalf("user write: %+v, %v; want a tool error", res, err)
	}
	var body struct{ Error memory.Error }
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body); err != nil || body.Error.Status != http.StatusForbidden || body.Error.Code != memory.CodeScope {
		t.Fatalf("tool error %q: want 403 insufficient_scope", res.Content[0].(*mcp.TextContent).Text)
	}
}

func remarshal(t *testing.T, in any, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func rawCall(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	s, _ := newService(t, nil)
	srv, _ := serveMCP(t, s)
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":` + args + `}}`
	}
	tests := []struct {
		name, auth, body string
		status           int
		contains         string
	}{
		{"no token", "", call(`{"scope":"run","content":"a b c"}`), http.StatusUnauthorized, ""},
		{"duplicate key", "Bearer good", call(`{"scope":"run","scope":"agent","content":"a b c"}`), http.StatusBadRequest, "duplicate key"},
		{"malformed", "Bearer good", `{"jsonrpc":`, http.StatusBadRequest, "-32700"},
		{"too large", "Bearer good", call(`{"scope":"run","content":"` + strings.Repeat("x", 70<<10) + `"}`), http.StatusRequestEntityTooLarge, ""},
		{"case variant key", "Bearer good", call(`{"Scope":"run","content":"a b c"}`), http.StatusOK, `is not a field of this tool`},
		{"wrong type", "Bearer good", call(`{"scope":"run","content":5}`), http.StatusOK, `must be a JSON string`},
		{"unknown type", "Bearer good", call(`{"scope":"run","content":"a b c","memory_type":"opinion"}`), http.StatusOK, `memory_type`},
		{"tenant in body is not a field", "Bearer good", call(`{"scope":"run","content":"a b c","tenant_id":"t2"}`), http.StatusOK, `tenant_id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rawCall(t, srv.URL, tt.auth, tt.body)
			if code != tt.status || !strings.Contains(body, tt.contains) {
				t.Fatalf("%d %s; want %d containing %q", code, body, tt.status, tt.contains)
			}
			if code == http.StatusOK && !strings.Contains(body, `"isError":true`) {
				t.Fatalf("accepted: %s", body)
			}
		})
	}
	// GET is not served.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}

// TestGoClient drives the service through memory.Client: typed results,
// typed errors, validation before any request.
func TestGoClient(t *testing.T) {
	s, _ := newService(t, nil)
	srv, _ := serveMCP(t, s)
	ctx := context.Background()
	cl, err := memory.NewClient(srv.URL, secret.New("good"), &memory.ClientOptions{Retry: &resilience.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cl.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Prefer the staging cluster for trials."})
	if err != nil || w.Durable {
		t.Fatalf("write = %+v, %v", w, err)
	}
	go s.judgeProposals(ctx)
	pollCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := cl.PollProposal(pollCtx, w.MemoryID, 10*time.Millisecond)
	if err != nil || st.Status != memory.ProposalCommitted {
		t.Fatalf("poll = %+v, %v", st, err)
	}
	q, err := cl.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "which cluster for trials"})
	if err != nil || len(q.Items) != 1 {
		t.Fatalf("query = %+v, %v", q, err)
	}
	_, err = cl.Update(ctx, &memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: q.Items[0].MemoryID, Version: 7, Content: ptr("x y z")})
	if !errors.Is(err, memory.ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	var me *memory.Error
	if !errors.As(err, &me) || me.Status != http.StatusConflict || me.Field != "version" {
		t.Fatalf("stale update error = %#v", err)
	}
	// A key reused for another request comes back as ErrKeyReused, which
	// is no version conflict.
	if _, err := cl.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "first", IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "second", IdempotencyKey: "k1"})
	if !errors.Is(err, memory.ErrKeyReused) || errors.Is(err, memory.ErrConflict) || !errors.As(err, &me) || me.Status != http.StatusConflict {
		t.Fatalf("reused key: %#v, want a 409 matching ErrKeyReused only", err)
	}
	// Refused before any request: the server would count it otherwise.
	if _, err := cl.Hint(ctx, &memory.HintRequest{Hint: "User likes tea."}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("hint without conversation: %v, want ErrInvalid", err)
	}
	if _, err := cl.Forget(ctx, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: "m1", Reason: strings.Repeat("r", 501)}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("long reason: %v", err)
	}
	if _, err := cl.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "x", MemoryType: "opinion"}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("unknown type: %v", err)
	}
	// A bad token is a 401 Error, not retried.
	bad, _ := memory.NewClient(srv.URL, secret.New("wrong"), nil)
	_, err = bad.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "x"})
	if !errors.As(err, &me) || me.Status != http.StatusUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the token leaked into %q", err)
	}
}

// TestGoClientRetries: 503s are retried, then the breaker opens.
func TestGoClientRetries(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	breaker := resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 4})
	cl, _ := memory.NewClient(srv.URL, secret.New("t"), &memory.ClientOptions{Retry: &resilience.Policy{Attempts: 3, Base: time.Millisecond, Breaker: breaker}})
	_, err := cl.Query(context.Background(), &memory.QueryRequest{Scope: memory.ScopeRun, Query: "x"})
	var me *memory.Error
	if calls != 3 || !errors.As(err, &me) || me.Status != http.StatusServiceUnavailable {
		t.Fatalf("calls %d err %v; want 3 attempts ending in 503", calls, err)
	}
	_, err = cl.Query(context.Background(), &memory.QueryRequest{Scope: memory.ScopeRun, Query: "x"})
	if !errors.Is(err, resilience.ErrOpen) || calls != 4 {
		t.Fatalf("calls %d err %v; want the breaker open after 4 failures", calls, err)
	}
}

// countingStore counts the searches that reach the store.
type countingStore struct {
	memory.Store
	mu       sync.Mutex
	searches int
}

func (c *countingStore) List(ctx context.Context, tenant string, f memory.Filter, limit int) ([]memory.Memory, error) {
	c.mu.Lock()
	c.searches++
	c.mu.Unlock()
	return c.Store.List(ctx, tenant, f, limit)
}

// TestHandlerRefusesBatches: a JSON-RPC batch is refused with -32600
// before any call in it runs, whatever protocol revision the request
// names (the SDK itself runs batches for 2025-03-26 and for a request
// naming none), while the same call alone is served.
func TestHandlerRefusesBatches(t *testing.T) {
	store := &countingStore{Store: openStore(t)}
	s := New(store, nil)
	srv, _ := serveMCP(t, s)
	query := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"novaos.memory.query","arguments":{"scope":"run","query":"deploy"}}}`, id)
	}
	calls := make([]string, 50)
	for i := range calls {
		calls[i] = query(i + 1)
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	for _, version := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18"} {
		t.Run("version "+version, func(t *testing.T) {
			for _, body := range []string{batch, " \n\t[" + query(1) + "]"} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer good")
				if version != "" {
					req.Header.Set("Mcp-Protocol-Version", version)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var rpc struct {
					Error struct {
						Code    int
						Message string
					}
				}
				if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &rpc) != nil || rpc.Error.Code != -32600 ||
					!strings.Contains(rpc.Error.Message, "batches are not supported") {
					t.Errorf("batch: %d %s; want 400 with JSON-RPC error -32600", resp.StatusCode, b)
				}
			}
		})
	}
	if store.searches != 0 {
		t.Errorf("%d calls of refused batches reached the store, want 0", store.searches)
	}
	if code, body := rawCall(t, srv.URL, "Bearer good", query(1)); code != http.StatusOK || strings.Contains(body, `"isError":true`) || !strings.Contains(body, `"stores_queried"`) {
		t.Errorf("a single call: %d %s; want it served", code, body)
	}
	if store.searches != 1 {
		t.Errorf("a single call made %d searches, want 1", store.searches)
	}
}

// TestHandlerChecksArgumentsOnce: the pass Handler makes over the whole
// body checks a tool call's arguments against the tool's field names, in
// either member order, so a well-formed call reaches its tool with no
// second strict pass; a call the pass found an unknown field in, or one
// that did not come through Handler, is checked by the tool itself.
func TestHandlerChecksArgumentsOnce(t *testing.T) {
	s, _ := newService(t, nil)
	srv, _ := serveMCP(t, s)
	for _, tc := range []struct {
		name, body string
		contains   string
		checks     int64 // the tool's own passes
	}{
		{"name first", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":{"scope":"run","content":"a b c"}}}`, `"durable":true`, 0},
		{"arguments first", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"scope":"run","content":"a b c"},"name":"novaos.memory.write"}}`, `"durable":true`, 0},
		{"no arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.hint_status"}}`, `"isError":true`, 0},
		{"unknown field", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":{"Scope":"run","content":"a b c"}}}`, `is not a field of this tool`, 1},
		{"unknown field, arguments first", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"scope":"run","content":"a b c","tenant_id":"t2"},"name":"novaos.memory.write"}}`, `tenant_id`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.argChecks.Load()
			code, body := rawCall(t, srv.URL, "Bearer good", tc.body)
			if code != http.StatusOK || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s; want 200 containing %q", code, body, tc.contains)
			}
			if got := s.argChecks.Load() - before; got != tc.checks {
				t.Errorf("the tool checked its arguments %d times, want %d", got, tc.checks)
			}
		})
	}

	// Served without Handler in front, the tool checks for itself.
	srv2 := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCPServer("test") },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	bare := httptest.NewServer(auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{Extra: map[string]any{callerKey: agentCaller("t1", "a1")}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(srv2))
	t.Cleanup(bare.Close)
	for _, tc := range []struct{ args, contains string }{
		{`{"scope":"run","content":"a b c"}`, `"durable":true`},
		{`{"Scope":"run","content":"a b c"}`, `is not a field of this tool`},
	} {
		before := s.argChecks.Load()
		req, _ := http.NewRequest(http.MethodPost, bare.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":`+tc.args+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer any")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), tc.contains) {
			t.Errorf("%s: %s; want it to contain %q", tc.args, b, tc.contains)
		}
		if got := s.argChecks.Load() - before; got != 1 {
			t.Errorf("%s: the tool checked its arguments %d times, want 1", tc.args, got)
		}
	}
}
