package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/tools"
)

// TestUpstreamServers: the tool gateway's upstream provider against the
// reference MCP servers from npm (@modelcontextprotocol/server-everything
// over Streamable HTTP, a session-era server, and
// @modelcontextprotocol/server-memory over stdio, 2026.8.31 both, see
// js/package.json), registered through the provider's admin API: their
// tools come through namespaced, calls work, and server-memory's
// annotations classify as the gateway's classifier expects.
func TestUpstreamServers(t *testing.T) {
	node, dir := jsPeer(t)
	modules := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	everything := filepath.Join(modules, "server-everything", "dist", "index.js")
	memory := filepath.Join(modules, "server-memory", "dist", "index.js")
	for _, f := range []string{everything, memory} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is not installed; run `npm ci` in interop/js (interop/run does): %v", f, err)
		}
	}
	endpoint := startEverything(t, node, everything)

	sealer, err := sealkey.Open(filepath.Join(t.TempDir(), "seal.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := httpapi.AuthenticatorFunc(func(*http.Request) (*httpapi.Caller, error) {
		return &httpapi.Caller{Admin: true, Subject: "admin"}, nil
	})
	p, err := upstream.New(tools.NewMemoryServerStore(), upstream.Deps{Sealer: sealer, Auth: admin},
		&upstream.Options{AllowPrivate: true, AllowedCommands: []string{node}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mux := http.NewServeMux()
	for _, r := range p.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	api := httptest.NewServer(mux)
	defer api.Close()

	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	register(t, api.URL, "everything", tools.ServerRequest{Transport: tools.TransportHTTP, URL: endpoint})
	register(t, api.URL, "kg", tools.ServerRequest{Transport: tools.TransportStdio, Command: node, Args: []string{memory},
		Env: map[string]*string{"MEMORY_FILE_PATH": &graph}})

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	caller := &toolgw.Caller{Tenant: "acme", Agent: "agent-1"}
	list, err := p.Tools(ctx, caller)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]toolgw.Tool{}
	for _, tl := range list {
		byName[tl.Name] = tl
		if !tools.ValidName(tl.Name) {
			t.Errorf("%s is not a gateway tool name", tl.Name)
		}
	}
	for _, want := range []string{"novaos.everything.echo", "novaos.everything.get-sum", "novaos.kg.create_entities",
		"novaos.kg.read_graph", "novaos.kg.search_nodes", "novaos.kg.delete_entities"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("%s is missing from the list", want)
		}
	}
	var names []string
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	t.Logf("tools through the gateway: %s", strings.Join(names, " "))

	for _, c := range []struct {
		tool string
		want tools.Class
	}{
		{"novaos.kg.create_entities", tools.ClassWrite},
		{"novaos.kg.add_observations", tools.ClassWrite},
		{"novaos.kg.delete_entities", tools.ClassWrite},
		{"novaos.kg.read_graph", tools.ClassRead},
		{"novaos.kg.search_nodes", tools.ClassRead},
		{"novaos.kg.open_nodes", tools.ClassRead},
	} {
		tl, ok := byName[c.tool]
		if !ok {
			continue
		}
		if tl.Annotations == nil {
			t.Errorf("%s came without its annotations", c.tool)
		}
		if got := tools.ActionClass(c.tool, tl.Annotations); got != c.want {
			t.Errorf("%s classifies %s, want %s (annotations %+v)", c.tool, got, c.want, tl.Annotations)
		}
	}
	if d := byName["novaos.kg.delete_entities"].Annotations; d == nil || d.Destructive == nil || !*d.Destructive {
		t.Errorf("delete_entities: destructiveHint lost: %+v", d)
	}

	call := func(name string, args any) string {
		t.Helper()
		tl, ok, err := p.Find(ctx, caller, name)
		if err != nil || !ok {
			t.Fatalf("Find(%s) = %v, %v", name, ok, err)
		}
		b, _ := json.Marshal(args)
		res, err := p.Call(ctx, &toolgw.Request{Caller: caller, Tool: tl, Arguments: b, CallID: "call-" + name})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("call %s failed: %s", name, resultText(res))
		}
		return resultText(res)
	}
	if got := call("novaos.everything.echo", map[string]string{"message": "hello through the gateway"}); !strings.Contains(got, "hello through the gateway") {
		t.Errorf("everything echo = %q", got)
	}
	if got := call("novaos.everything.get-sum", map[string]int{"a": 2, "b": 40}); !strings.Contains(got, "42") {
		t.Errorf("everything get-sum = %q", got)
	}
	call("novaos.kg.create_entities", map[string]any{"entities": []map[string]any{
		{"name": "NovaOS", "entityType": "project", "observations": []string{"has a tool gateway"}}}})
	if got := call("novaos.kg.read_graph", map[string]any{}); !strings.Contains(got, "NovaOS") || !strings.Contains(got, "has a tool gateway") {
		t.Errorf("read_graph after create_entities = %q", got)
	}
	stored, err := os.ReadFile(graph)
	if err != nil || !bytes.Contains(stored, []byte("NovaOS")) {
		t.Errorf("the memory file named by the sealed environment holds %q (%v)", stored, err)
	}
}

// register puts a server for tenant acme through the admin API.
func register(t *testing.T, base, name string, req tools.ServerRequest) {
	t.Helper()
	b, _ := json.Marshal(req)
	r, _ := http.NewRequest(http.MethodPut, base+tools.ServersPath+"/"+name, bytes.NewReader(b))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(tools.TenantHeader, "acme")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register %s: %d %s", name, resp.StatusCode, body)
	}
}

func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// startEverything runs server-everything's Streamable HTTP server on a
// free loopback port and returns its MCP endpoint once it says it
// listens. Express binds every interface; the test only ever dials
// 127.0.0.1. Its environment is PORT alone: it has a tool that prints
// its environment.
func startEverything(t *testing.T, node, script string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = []string{"PORT=" + strconv.Itoa(port)}
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	startUntilReady(t, "server-everything", cmd, stderr, "listening on port "+strconv.Itoa(port))
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}
