package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/secret"
)

// A call posts one JSON-RPC request to CallPath, a listing to Path, each
// with the client's headers; the caller's custom headers pass when they
// are safe and never replace the client's own.
func TestRequestShapeAndHeaders(t *testing.T) {
	g := newFakeGateway(t, func(c gwCall) reply {
		if c.Method == "tools/list" {
			return reply{result: map[string]any{"tools": []any{}}}
		}
		return reply{result: okResult}
	})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	c := g.client(t, &ClientOptions{TenantID: "acme", Traceparent: tp, Header: http.Header{
		"X-Customer":     {"c-1"},
		"Authorization":  {"Bearer forged"},
		"Cookie":         {"sid=1"},
		"Mcp-Session-Id": {"forged-session"},
		"X-Tenant-Id":    {"other"},
		"Traceparent":    {"00-forged"},
	}})
	if _, err := c.CallTool(t.Context(), "novaos.memory.query", map[string]any{"scope": "run", "query": "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	calls := g.recorded()
	if len(calls) != 2 || calls[0].Path != CallPath || calls[1].Path != Path {
		t.Fatalf("paths %+v: want %s then %s", calls, CallPath, Path)
	}
	for _, call := range calls {
		want := map[string]string{
			"Authorization": "Bearer " + testToken, TenantHeader: "acme", "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", ProtocolHeader: ProtocolVersion, "Traceparent": tp,
			"X-Customer": "c-1", "Cookie": "", SessionHeader: "",
		}
		for k, v := range want {
			if got := call.Header.Get(k); got != v {
				t.Errorf("%s: header %s = %q, want %q", call.Method, k, got, v)
			}
			if n := len(call.Header.Values(k)); v != "" && n != 1 {
				t.Errorf("%s: header %s sent %d times", call.Method, k, n)
			}
		}
	}
	var body map[string]any
	_ = json.Unmarshal(calls[0].Params, &body)
	want := map[string]any{"name": "novaos.memory.query", "arguments": map[string]any{"scope": "run", "query": "q"}}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("tools/call params (-want +got):\n%s", diff)
	}
	if string(calls[0].ID) == string(calls[1].ID) {
		t.Errorf("two requests with id %s", calls[0].ID)
	}
}

// Results come as JSON or as an event stream that carries notifications
// before the response; both read the same.
func TestJSONAndStreamAnswers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			g := newFakeGateway(t, func(gwCall) reply {
				return reply{stream: stream, result: map[string]any{
					"content": []any{
						map[string]any{"type": "image", "data": "aGk=", "mimeType": "image/png"},
						map[string]any{"type": "text", "text": "first"},
						map[string]any{"type": "text", "text": "second"},
					},
					"structuredContent": map[string]any{"n": 1},
					"_meta":             map[string]any{"k": "v"},
				}}
			})
			res, err := g.client(t, nil).CallTool(t.Context(), "echo", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "first" || res.IsError || string(res.Structured) != `{"n":1}` || string(res.Meta) != `{"k":"v"}` {
				t.Fatalf("result %+v", res)
			}
			if len(res.Content) != 3 || res.Content[0].Type != "image" || !strings.Contains(string(res.Content[0].Raw), `"aGk="`) {
				t.Fatalf("content %+v", res.Content)
			}
			if got := g.recorded()[0].args(); string(got) != "{}" {
				t.Fatalf("nil arguments sent as %s, want {}", got)
			}
		})
	}
}

// The stream reader passes over comments, other events, notifications
// and the server's own requests, and takes the response to its request
// with LF or CRLF line ends.
func TestReadStream(t *testing.T) {
	resp := `{"jsonrpc":"2.0","id":5,"result":{"ok":true}}`
	tests := []struct {
		name, body string
		wantErr    string
	}{
		{"plain", "data: " + resp + "\n\n", ""},
		{"CRLF", "event: message\r\ndata: " + resp + "\r\n\r\n", ""},
		{"no space after colon", "data:" + resp + "\n\n", ""},
		{"after other traffic", ": hi\n\nevent: ping\ndata: {}\n\n" +
			`data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":4,"result":{"other":true}}` + "\n\n" +
			"data: " + resp + "\n\n", ""},
		{"unterminated last event", "data: " + resp, ""},
		{"ends early", "data: " + `{"jsonrpc":"2.0","method":"notifications/progress"}` + "\n\n", "ended before the answer"},
		{"malformed event", "data: {nope\n\n", "malformed"},
		{"empty", "", "ended before the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := readAnswer("text/event-stream", strings.NewReader(tt.body), 5, 1<<20)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(m.Result) != `{"ok":true}` {
				t.Fatalf("got %+v, %v", m, err)
			}
		})
	}
}

// ListTools follows every page, sends its query in params and _meta,
// and filters again itself; a cursor the server repeats, or more pages
// than MaxListPages, is an error, not a loop.
func TestListToolsPages(t *testing.T) {
	pages := map[string]map[string]any{
		"": {"tools": []any{map[string]any{"name": "novaos.memory.query", "description": "Query memories"},
			map[string]any{"name": "novaos.notify.webhook", "description": "Post a webhook"}}, "nextCursor": "p2"},
		"p2": {"tools": []any{map[string]any{"name": "novaos.knowledge.search", "description": "Search collections",
			"annotations": map[string]any{"readOnlyHint": true}}}, "nextCursor": "p3"},
		"p3": {"tools": []any{map[string]any{"name": "novaos.files.read", "description": "Read a MEMORY dump"}}},
	}
	g := newFakeGateway(t, func(c gwCall) reply {
		var p struct{ Cursor string }
		_ = json.Unmarshal(c.Params, &p)
		return reply{result: pages[p.Cursor]}
	})
	c := g.client(t, nil)
	all, err := c.ListTools(t.Context(), "")
	if err != nil || len(all) != 4 || all[2].Annotations == nil || !*all[2].Annotations.ReadOnly {
		t.Fatalf("all tools: %+v, %v", all, err)
	}
	got, err := c.ListTools(t.Context(), "memory")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range got {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"novaos.memory.query", "novaos.files.read"}, names); diff != "" {
		t.Errorf("query memory (-want +got):\n%s", diff)
	}
	last := g.recorded()[len(g.recorded())-1]
	var params map[string]any
	_ = json.Unmarshal(last.Params, &params)
	if params["query"] != "memory" || params["cursor"] != "p3" || params["_meta"].(map[string]any)[QueryMetaKey] != "memory" {
		t.Errorf("list params %v", params)
	}

	loop := newFakeGateway(t, result(map[string]any{"tools": []any{}, "nextCursor": "again"}))
	if _, err := loop.client(t, nil).ListTools(t.Context(), ""); err == nil || !strings.Contains(err.Error(), "repeated a cursor") {
		t.Errorf("repeated cursor: %v", err)
	}
	n := 0
	endless := newFakeGateway(t, func(gwCall) reply {
		n++
		return reply{result: map[string]any{"tools": []any{}, "nextCursor": fmt.Sprint("c", n)}}
	})
	if _, err := endless.client(t, &ClientOptions{MaxListPages: 3}).ListTools(t.Context(), ""); err == nil || len(endless.recorded()) != 3 {
		t.Errorf("endless pages: %v after %d pages", err, len(endless.recorded()))
	}
}

// Without Initialize a client has no session. After it, the session id
// goes on every call; a session the server forgot (404) is opened again
// once and the call repeated; a server that forgets it again is an
// error, not a loop.
func TestSession(t *testing.T) {
	g := newFakeGateway(t, result(okResult))
	c := g.client(t, nil)
	if _, err := c.CallTool(t.Context(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != "" || g.recorded()[0].Header.Get(SessionHeader) != "" {
		t.Fatalf("session %q before initialize", c.SessionID())
	}
	if err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != "session-1" {
		t.Fatalf("session %q after initialize", c.SessionID())
	}
	if _, err := c.CallTool(t.Context(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	g.expire()
	if _, err := c.CallTool(t.Context(), "echo", nil); err != nil {
		t.Fatalf("after the session expired: %v", err)
	}
	var got []string
	for _, call := range g.recorded() {
		got = append(got, call.Method+"@"+call.Header.Get(SessionHeader))
	}
	want := []string{"tools/call@", "initialize@", "notifications/initialized@session-1", "tools/call@session-1",
		"tools/call@session-1", "initialize@", "notifications/initialized@session-2", "tools/call@session-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	if c.SessionID() != "session-2" {
		t.Fatalf("session %q", c.SessionID())
	}

	// A server whose sessions never last: one re-initialize, then the 404.
	forgetful := newFakeGateway(t, nil)
	forgetful.answer = func(gwCall) reply {
		forgetful.expire()
		return reply{status: 404, body: "gone", contentType: "text/plain"}
	}
	fc := forgetful.client(t, nil)
	if err := fc.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := fc.CallTool(t.Context(), "echo", nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != 404 {
		t.Fatalf("err %v, want the 404", err)
	}
	if n := len(forgetful.toolCalls()); n != 2 {
		t.Fatalf("%d calls, want the call and one retry", n)
	}
}

// Errors map to types a caller branches on, with the code, the data, the
// HTTP status and the status retries read.
func TestErrorMapping(t *testing.T) {
	wcData := WriteConfirmationData{Code: ReasonHITLRequired, CallID: "call-9", ToolName: "novaos.notify.webhook", ActionID: "act-1",
		RunID: "run-1", Elicitations: []Elicitation{{Mode: "url", ElicitationID: "el-1", URL: "https://gw/ui/gate/act-1", Message: "approve"}}}
	tests := []struct {
		name  string
		reply reply
		check func(t *testing.T, err error)
	}{
		{"write confirmation", reply{err: rpcErr(CodeWriteConfirmationRequired, "held for approval", wcData)}, func(t *testing.T, err error) {
			var w *WriteConfirmationRequired
			if !errors.As(err, &w) {
				t.Fatalf("%T %v", err, err)
			}
			if diff := cmp.Diff(wcData, w.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if w.Message != "held for approval" || w.ApprovalURL() != "https://gw/ui/gate/act-1" || w.HTTPStatus() != 403 {
				t.Errorf("%+v", w)
			}
		}},
		{"write confirmation without data", reply{err: rpcErr(CodeWriteConfirmationRequired, "held", nil)}, func(t *testing.T, err error) {
			var w *WriteConfirmationRequired
			if !errors.As(err, &w) || w.Data.ToolName != "novaos.x.y" {
				t.Fatalf("%T %+v", err, err)
			}
		}},
		{"forbidden", reply{err: rpcErr(CodeForbidden, "policy says no", ErrorData{Code: ReasonPolicyDenied, Tool: "novaos.x.y", Rule: "r1"})}, func(t *testing.T, err error) {
			e := asError(t, err)
			if e.Code != CodeForbidden || e.Data.Code != ReasonPolicyDenied || e.Data.Rule != "r1" || e.Status != 200 || e.HTTPStatus() != 403 || e.Tool != "novaos.x.y" {
				t.Errorf("%+v", e)
			}
			if !strings.Contains(err.Error(), "policy says no") || !strings.Contains(err.Error(), "POLICY_DENIED") {
				t.Errorf("text %q", err)
			}
		}},
		{"unavailable, timed out", reply{err: rpcErr(CodeUnavailable, "slow", ErrorData{Code: ReasonTimeout})}, func(t *testing.T, err error) {
			if e := asError(t, err); e.HTTPStatus() != 504 {
				t.Errorf("status %d", e.HTTPStatus())
			}
		}},
		{"unavailable, disabled", reply{err: rpcErr(CodeUnavailable, "off", ErrorData{Code: ReasonServiceDisabled})}, func(t *testing.T, err error) {
			if e := asError(t, err); e.HTTPStatus() != 503 || e.Data.Code != ReasonServiceDisabled {
				t.Errorf("%+v", e)
			}
		}},
		{"invalid params", reply{err: rpcErr(-32602, "unknown tool", nil)}, func(t *testing.T, err error) {
			if e := asError(t, err); e.HTTPStatus() != 400 || e.Code != -32602 {
				t.Errorf("%+v", e)
			}
		}},
		{"data of another shape", reply{err: rpcErr(-32000, "odd", []int{1})}, func(t *testing.T, err error) {
			if e := asError(t, err); string(e.RawData) != "[1]" || e.HTTPStatus() != 500 {
				t.Errorf("%+v", e)
			}
		}},
		{"401 challenge", reply{status: 401, header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token", error_description="the token expired", resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp/v1"`}}}, func(t *testing.T, err error) {
			e := asError(t, err)
			if e.Status != 401 || e.Code != 0 || e.Data.Code != "invalid_token" || e.Message != "the token expired" {
				t.Errorf("%+v", e)
			}
		}},
		{"403 insufficient scope", reply{status: 403, header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="mcp:tools:novaos.notify.webhook"`}}}, func(t *testing.T, err error) {
			e := asError(t, err)
			if e.Status != 403 || e.Data.Code != ReasonInsufficientScope || e.Data.Scope != "mcp:tools:novaos.notify.webhook" || e.Message != "Forbidden" {
				t.Errorf("%+v", e)
			}
		}},
		{"413", reply{status: 413, body: "too big", contentType: "text/plain"}, func(t *testing.T, err error) {
			if e := asError(t, err); e.Status != 413 || e.Message != "Request Entity Too Large" {
				t.Errorf("%+v", e)
			}
		}},
		{"503 with Retry-After", reply{status: 503, header: http.Header{"Retry-After": {"7"}}, body: `{"title":"Busy","detail":"in-flight bytes over the limit"}`, contentType: "application/problem+json"}, func(t *testing.T, err error) {
			e := asError(t, err)
			if e.Status != 503 || e.RetryAfter() != 7*time.Second || e.Message != "in-flight bytes over the limit" {
				t.Errorf("%+v", e)
			}
		}},
		{"JSON-RPC error in a 400", reply{status: 400, err: rpcErr(-32600, "duplicate key", nil)}, func(t *testing.T, err error) {
			if e := asError(t, err); e.Status != 400 || e.Code != -32600 || e.Message != "duplicate key" {
				t.Errorf("%+v", e)
			}
		}},
		{"tool failure is a result", reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "boom"}}}}, func(t *testing.T, err error) {
			if err != nil {
				t.Errorf("err %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, func(gwCall) reply { return tt.reply })
			_, err := g.client(t, nil).CallTool(t.Context(), "novaos.x.y", nil)
			tt.check(t, err)
		})
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%T %v, want *Error", err, err)
	}
	return e
}

// A malformed or mismatched answer is an error, never a result.
func TestMalformedAnswers(t *testing.T) {
	tests := []struct{ name, body, ct, want string }{
		{"not JSON", "nope", "application/json", "malformed"},
		{"another id", `{"jsonrpc":"2.0","id":99,"result":{}}`, "application/json", "not the response"},
		{"not 2.0", `{"id":1,"result":{}}`, "application/json", "not JSON-RPC 2.0"},
		{"both", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "application/json", "exactly one"},
		{"HTML", "<html>", "text/html", "unexpected content type"},
		{"result not an object", `{"jsonrpc":"2.0","id":1,"result":[1]}`, "application/json", "not an object"},
		{"content block without a type", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"x"}]}}`, "application/json", "without a type"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "application/json", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, func(gwCall) reply { return reply{body: tt.body, contentType: tt.ct} })
			res, err := g.client(t, nil).CallTool(t.Context(), "echo", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %+v, %v; want an error saying %q", res, err, tt.want)
			}
		})
	}
	// 202 with no body answers a notification, not a request.
	g := newFakeGateway(t, func(gwCall) reply { return reply{status: 202, contentType: "text/plain"} })
	if _, err := g.client(t, nil).CallTool(t.Context(), "echo", nil); err == nil {
		t.Fatal("202 without an answer accepted")
	}
}

// Answers past MaxResponseBytes fail, as JSON and as a stream; a request
// past MaxRequestBytes is not sent.
func TestSizeLimits(t *testing.T) {
	big := strings.Repeat("x", 4096)
	for _, stream := range []bool{false, true} {
		g := newFakeGateway(t, func(gwCall) reply {
			return reply{stream: stream, result: map[string]any{"content": []any{map[string]any{"type": "text", "text": big}}}}
		})
		_, err := g.client(t, &ClientOptions{MaxResponseBytes: 1024}).CallTool(t.Context(), "echo", nil)
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("stream=%v: %v, want ErrResponseTooLarge", stream, err)
		}
		if _, err := g.client(t, &ClientOptions{MaxResponseBytes: 8192}).CallTool(t.Context(), "echo", nil); err != nil {
			t.Errorf("stream=%v, within the limit: %v", stream, err)
		}
	}
	g := newFakeGateway(t, result(okResult))
	_, err := g.client(t, &ClientOptions{MaxRequestBytes: 512}).CallTool(t.Context(), "echo", map[string]string{"x": big})
	if !errors.Is(err, ErrRequestTooLarge) || len(g.recorded()) != 0 {
		t.Fatalf("%v after %d requests", err, len(g.recorded()))
	}
	// An error answer's body is bounded too.
	huge := newFakeGateway(t, func(gwCall) reply {
		return reply{status: 500, body: strings.Repeat("e", 8192), contentType: "text/plain"}
	})
	if _, err := huge.client(t, &ClientOptions{MaxResponseBytes: 1024}).CallTool(t.Context(), "echo", nil); asError(t, err).Status != 500 {
		t.Fatalf("%v", err)
	}
}

// The token appears in no error and no formatted value, even when a
// server echoes it back.
func TestTokenNeverShown(t *testing.T) {
	echo := func(c gwCall) reply {
		auth := c.Header.Get("Authorization")
		switch c.tool() {
		case "rpc":
			return reply{err: rpcErr(CodeForbidden, "bad token "+auth, ErrorData{Code: auth, Scope: auth})}
		case "held":
			return reply{err: rpcErr(CodeWriteConfirmationRequired, "held "+auth, WriteConfirmationData{CallID: auth})}
		case "challenge":
			return reply{status: 401, header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token", error_description="` + auth + `"`}}}
		case "problem":
			return reply{status: 500, body: `{"detail":"` + auth + `"}`, contentType: "application/problem+json"}
		}
		return reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": `{"error":"` + auth + `"}`}}}}
	}
	g := newFakeGateway(t, echo)
	c := g.client(t, nil)
	b, err := NewBindings(c, &BindingsOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, tool := range []string{"rpc", "held", "challenge", "problem"} {
		_, err := c.CallTool(t.Context(), tool, nil)
		if err == nil {
			t.Fatalf("%s: no error", tool)
		}
		shown = append(shown, fmt.Sprintf("%v|%+v|%#v|%s", err, err, err, err.Error()))
	}
	resp, _ := b.Memory.k.call(t.Context(), "tool-error", nil, spec{}, nil)
	shown = append(shown, resp.Error, fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%v %+v", b, *b.Memory.k))
	for _, s := range shown {
		if strings.Contains(s, testToken) {
			t.Errorf("the token shows in %q", s)
		}
	}
}

// NewClient takes the platform's base URL or the gateway's endpoint and
// refuses what it cannot call safely.
func TestNewClient(t *testing.T) {
	tok := secret.New(testToken)
	for _, tt := range []struct{ in, endpoint string }{
		{"http://gw:8080", "http://gw:8080/mcp/v1"},
		{"http://gw:8080/", "http://gw:8080/mcp/v1"},
		{"https://gw/mcp/v1", "https://gw/mcp/v1"},
		{"https://gw/mcp/v1/tools/call", "https://gw/mcp/v1"},
		{"https://gw/prefix", "https://gw/prefix/mcp/v1"},
	} {
		c, err := NewClient(tt.in, tok, nil)
		if err != nil || c.Endpoint() != tt.endpoint || c.callEndpoint != strings.TrimSuffix(tt.endpoint, Path)+CallPath {
			t.Errorf("%s: %v, %v", tt.in, c, err)
		}
	}
	for _, bad := range []string{"", "gw:8080", "ftp://gw", "http://user:pw@gw", "http://gw?x=1", "http:///mcp"} {
		if _, err := NewClient(bad, tok, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewClient("http://gw", secret.Value{}, nil); err == nil {
		t.Error("no token accepted")
	}
	if _, err := NewClient("http://gw", tok, &ClientOptions{TenantID: "a\r\nX-Evil: 1"}); err == nil {
		t.Error("a tenant with a line break accepted")
	}
	c, _ := NewClient("http://gw", tok, nil)
	for _, name := range []string{"", "has space", strings.Repeat("x", 129), "slash/name"} {
		if _, err := c.CallTool(t.Context(), name, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("tool name %q: %v", name, err)
		}
	}
	for _, args := range []any{json.RawMessage(`[1]`), "text", 5, json.RawMessage(`{"x":`)} {
		if _, err := c.CallTool(t.Context(), "echo", args); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("arguments %v: %v", args, err)
		}
	}
}

// A redirect is not followed: it would carry the token elsewhere.
func TestNoRedirect(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed (Authorization sent: %v)", r.Header.Get("Authorization") != "")
	}))
	defer other.Close()
	g := newFakeGateway(t, func(gwCall) reply {
		return reply{status: http.StatusTemporaryRedirect, header: http.Header{"Location": {other.URL + CallPath}}, contentType: "text/plain", body: "moved"}
	})
	_, err := g.client(t, nil).CallTool(t.Context(), "echo", nil)
	if e := asError(t, err); e.Status != http.StatusTemporaryRedirect {
		t.Fatalf("%+v", e)
	}
}

// A call whose context has no deadline is bounded by the client's
// Timeout; a context that ends stops the call.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := NewClient(srv.URL, secret.New(testToken), &ClientOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "echo", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.CallTool(ctx, "echo", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want cancelled", err)
	}
}

// The challenge parser reads RFC 6750 parameters, quoted or not, and
// ignores what it does not understand.
func TestParseChallenge(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y"`,
			map[string]string{"error": "insufficient_scope", "scope": "a b", "resource_metadata": "https://x/y"}},
		{`bearer error=invalid_token,error_description="say \"hi\""`, map[string]string{"error": "invalid_token", "error_description": `say "hi"`}},
		{`Bearer`, map[string]string{}},
		{`Bearer stray , realm="r"`, map[string]string{"realm": "r"}},
		{`Basic realm="x"`, nil},
		{`Bearer error="unterminated`, map[string]string{"error": "unterminated"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, parseChallenge(tt.in)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}

// An event stream answer read through a real connection: the client
// reads events as they come and stops at the response, while the server
// still holds the stream open.
func TestStreamStopsAtAnswer(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID int64 }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n", req.ID)
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL, secret.New(testToken), nil)
	res, err := c.CallTool(t.Context(), "echo", nil)
	if err != nil || res.Text() != "hi" {
		t.Fatalf("%+v, %v", res, err)
	}
}
