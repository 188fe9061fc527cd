package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/tools"
)

const toolsToken = "exec-tok-91c2d7aa55"

// toolsRequest is one request the fake tool gateway received.
type toolsRequest struct {
	path, method, auth, tenant, session string
	params                              map[string]any
}

// fakeToolGateway answers tools/list with three tools and tools/call by
// the tool's name: echo echoes its arguments, broken fails, notify is
// held for a person, secret is refused for a missing scope.
func fakeToolGateway(t *testing.T) (string, func() []toolsRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []toolsRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage
			Method string
			Params map[string]any
		}
		_ = json.Unmarshal(b, &req)
		mu.Lock()
		seen = append(seen, toolsRequest{r.URL.Path, req.Method, r.Header.Get("Authorization"), r.Header.Get(tools.TenantHeader),
			r.Header.Get(tools.SessionHeader), req.Params})
		mu.Unlock()
		answer := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch {
		case req.Method == "initialize":
			w.Header().Set(tools.SessionHeader, "s-1")
			answer["result"] = map[string]any{"protocolVersion": tools.ProtocolVersion, "capabilities": map[string]any{}}
		case len(req.ID) == 0:
			w.WriteHeader(http.StatusAccepted)
			return
		case req.Method == "tools/list":
			answer["result"] = map[string]any{"tools": []any{
				map[string]any{"name": "novaos.demo.echo", "description": "Echo the arguments"},
				map[string]any{"name": "novaos.demo.broken", "description": "Always fails"},
				map[string]any{"name": "novaos.notify.webhook", "description": "Post a webhook"},
			}}
		default:
			switch req.Params["name"] {
			case "novaos.demo.slow":
				<-r.Context().Done() // answers only when the caller gives up
				return
			case "novaos.demo.echo":
				answer["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}, "structuredContent": req.Params["arguments"]}
			case "novaos.demo.broken":
				answer["result"] = map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": `{"error":"the disk is full"}`}}}
			case "novaos.notify.webhook":
				answer["error"] = map[string]any{"code": tools.CodeWriteConfirmationRequired, "message": "a person must approve this call",
					"data": map[string]any{"code": tools.ReasonHITLRequired, "call_id": "call-5", "tool_name": "novaos.notify.webhook",
						"elicitations": []any{map[string]any{"mode": "url", "elicitationId": "e", "url": "http://127.0.0.1/ui/gate/a-5", "message": "approve"}}}}
			default:
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:tools:`+req.Params["name"].(string)+`"`)
				w.WriteHeader(http.StatusForbidden)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []toolsRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]toolsRequest(nil), seen...)
	}
}

func runTool(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	e, out, errOut := testEnv(vars)
	code := run(t.Context(), args, e)
	if strings.Contains(out.String()+errOut.String(), toolsToken) {
		t.Fatalf("novaos %s printed the token", strings.Join(args, " "))
	}
	return code, out.String(), errOut.String()
}

func TestToolsCommands(t *testing.T) {
	base, seen := fakeToolGateway(t)
	vars := map[string]string{EnvToken: toolsToken}

	code, out, errOut := runTool(t, vars, "tools", "list", "--server", base, "--query", "ECHO", "--tenant", "acme")
	var list []tools.Tool
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Name != "novaos.demo.echo" {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	r := seen()[0]
	if r.path != tools.Path || r.method != "tools/list" || r.auth != "Bearer "+toolsToken || r.tenant != "acme" || r.params["query"] != "ECHO" {
		t.Fatalf("list request %+v", r)
	}

	code, out, errOut = runTool(t, vars, "tools", "call", "novaos.demo.echo", "text=hi there", "n:=3", "flags:=[true]", "--url", base)
	var res tools.CallResult
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("call: %d %q %q", code, out, errOut)
	}
	var got map[string]any
	_ = json.Unmarshal(res.Structured, &got)
	if diff := cmp.Diff(map[string]any{"text": "hi there", "n": 3.0, "flags": []any{true}}, got); diff != "" {
		t.Fatalf("arguments (-want +got):\n%s", diff)
	}
	if r := seen()[len(seen())-1]; r.path != tools.CallPath || r.tenant != "" {
		t.Fatalf("call request %+v", r)
	}

	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("Bearer "+toolsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runTool(t, nil, "tools", "call", "novaos.demo.echo", "--args", `{"a":{"b":1}}`, "--server", base, "--token-file", tokFile, "--session")
	if code != exitOK || !strings.Contains(out, `"a": {`) {
		t.Fatalf("call --args: %d %q", code, out)
	}
	all := seen()
	if n := len(all); all[n-3].method != "initialize" || all[n-1].session != "s-1" || all[n-1].auth != "Bearer "+toolsToken {
		t.Fatalf("a call with --session: %+v", all[n-3:])
	}

	code, out, errOut = runTool(t, vars, "tools", "call", "novaos.demo.broken", "--server", base)
	if code != exitFail || !strings.Contains(out, `"isError": true`) || !strings.Contains(errOut, "the disk is full") {
		t.Fatalf("a failing tool: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runTool(t, vars, "tools", "call", "novaos.notify.webhook", "url=https://x/", "--server", base)
	if code != exitFail || out != "" || !strings.Contains(errOut, "call-5") || !strings.Contains(errOut, "http://127.0.0.1/ui/gate/a-5") {
		t.Fatalf("a held call: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runTool(t, vars, "tools", "call", "novaos.demo.secret", "--server", base)
	if code != exitFail || !strings.Contains(errOut, "lacks the scope mcp:tools:novaos.demo.secret") {
		t.Fatalf("a refused call: %d %q", code, errOut)
	}
}

// The CLI reads NOVAOS_TOOL_TIMEOUT_S and NOVAOS_ALLOWED_HOSTS through
// package envconfig. seed 000, novaos_client_sdk.config.get_default_tool_timeout_s:
// "Raises ValueError if NOVAOS_TOOL_TIMEOUT_S is set but not a positive
// integer"; validate_host_allowed: "Raises ValueError if an allowlist is
// configured and url's hostname doesn't end with any entry in it".
func TestToolsEnvironment(t *testing.T) {
	base, _ := fakeToolGateway(t) // http://127.0.0.1:PORT
	for _, tt := range []struct {
		name    string
		vars    map[string]string
		tool    string
		code    int
		wantErr string
	}{
		{"allowed host", map[string]string{envconfig.AllowedHostsEnv: "localhost,127.0.0.1"}, "novaos.demo.echo", exitOK, ""},
		{"no list", map[string]string{envconfig.AllowedHostsEnv: ""}, "novaos.demo.echo", exitOK, ""},
		{"host not allowed", map[string]string{envconfig.AllowedHostsEnv: "novaos.example.com"}, "novaos.demo.echo", exitFail, `host not in the allowed hosts: "127.0.0.1"`},
		{"malformed timeout", map[string]string{envconfig.ToolTimeoutEnv: "soon"}, "novaos.demo.echo", exitFail, envconfig.ToolTimeoutEnv + ": invalid value"},
		// The gateway never answers: the call ends at the variable's
		// deadline, not the 128 s default.
		{"timeout", map[string]string{envconfig.ToolTimeoutEnv: "1"}, "novaos.demo.slow", exitFail, "the call's timeout is $" + envconfig.ToolTimeoutEnv},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.vars[EnvToken] = toolsToken
			code, _, errOut := runTool(t, tt.vars, "tools", "call", tt.tool, "--server", base)
			if code != tt.code || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("%d %q, want %d saying %q", code, errOut, tt.code, tt.wantErr)
			}
		})
	}
	code, _, errOut := runTool(t, map[string]string{EnvToken: toolsToken, envconfig.AllowedHostsEnv: "novaos.example.com"}, "tools", "list", "--server", base)
	if code != exitFail || !strings.Contains(errOut, "host not in the allowed hosts") {
		t.Fatalf("tools list past the allowed hosts: %d %q", code, errOut)
	}
}

func TestToolsUsage(t *testing.T) {
	vars := map[string]string{EnvToken: toolsToken}
	for _, tt := range []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"no name", vars, []string{"tools", "call"}, "want the tool's name"},
		{"bad pair", vars, []string{"tools", "call", "x", "novalue"}, "want key=value"},
		{"bad JSON pair", vars, []string{"tools", "call", "x", "n:=nope"}, "is not JSON"},
		{"pair twice", vars, []string{"tools", "call", "x", "a=1", "a=2"}, "given twice"},
		{"args and pairs", vars, []string{"tools", "call", "x", "a=1", "--args", "{}"}, "not both"},
		{"args not an object", vars, []string{"tools", "call", "x", "--args", "[1]"}, "want a JSON object"},
		{"no token", nil, []string{"tools", "list"}, "no token"},
		{"bad server", vars, []string{"tools", "list", "--server", "ftp://x"}, "want an absolute http(s) URL"},
		{"unknown subcommand", vars, []string{"tools", "run"}, `unknown subcommand "run"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runTool(t, tt.vars, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Fatalf("%d %q, want usage saying %q", code, errOut, tt.want)
			}
		})
	}
}

// Against novaos serve's own tool gateway: a token with the tool scopes
// lists the built-in tools and calls one in a session; the gateway's
// refusals (a disabled tool, an unknown one, a held write) reach the
// command's error.
func TestToolsAgainstServe(t *testing.T) {
	data := t.TempDir()
	base, _, _ := serveFor(t, nil, "--data", data)
	code, tok, errOut := runCmd(t, "token", "mint", "--data", data, "--issuer", base, "--tenant", "t1", "--agent", "a1", "--run", "run-1",
		"--scopes", "mcp:tools:*,memory:read:*,memory:write:run")
	if code != exitOK {
		t.Fatalf("token mint: %d %s", code, errOut)
	}
	vars := map[string]string{EnvToken: strings.TrimSpace(tok)}
	code, out, errOut := runTool(t, vars, "tools", "list", "--server", base)
	var list []tools.Tool
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) == 0 {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	names := map[string]bool{}
	for _, tl := range list {
		names[tl.Name] = true
	}
	for _, want := range []string{tools.ToolMemoryWrite, tools.ToolHITLRequest} {
		if !names[want] {
			t.Errorf("%s not listed: %v", want, names)
		}
	}
	code, out, errOut = runTool(t, vars, "tools", "call", tools.ToolMemoryWrite, "scope=run", "content=the customer chose annual", "--session", "--server", base)
	if code != exitOK || !strings.Contains(out, "memory_id") {
		t.Fatalf("memory write: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runTool(t, vars, "tools", "call", tools.ToolHITLRequest, "prompt=which plan?", "--server", base)
	if code != exitFail || !strings.Contains(errOut, tools.ReasonServiceDisabled) {
		t.Fatalf("hitl: %d %q", code, errOut)
	}
	code, _, errOut = runTool(t, vars, "tools", "call", "novaos.nowhere.nothing", "--server", base)
	if code != exitFail || !strings.Contains(errOut, tools.ReasonToolNotFound) {
		t.Fatalf("an unknown tool: %d %q", code, errOut)
	}
	// A write-class call is held for a person: nothing ran, and the
	// command says where the person decides.
	code, _, errOut = runTool(t, vars, "tools", "call", tools.ToolNotifyWebhook, "url=https://hooks.example.com/x", "payload:={}", "--server", base)
	if code != exitFail || !strings.Contains(errOut, "waits for a person's approval") || !strings.Contains(errOut, base+"/ui/gate") {
		t.Fatalf("a write-class call: %d %q", code, errOut)
	}
}
