package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/memorysvc"
)

// TestMCPTypeScriptClient: the official MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk 1.32.2, js/mcp_client.mjs) against the memory
// service of the real platform server (internal/app, as novaos serve runs
// it). The SDK parses every tool's input and output schema in listTools and
// checks each structured result against its tool's output schema, so it
// fails on any schema a strict client cannot read.
func TestMCPTypeScriptClient(t *testing.T) {
	node, dir := jsPeer(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("@modelcontextprotocol/sdk is not installed; run `npm ci` in interop/js (interop/run does): %v", err)
	}
	ctx := context.Background()
	srv := startApp(t, &app.Options{})
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "support-bot", UserID: "user-1", RunID: "run-1",
		ConversationID: "conv-1", Scopes: []string{"memory:read:*", "memory:write:run", "memory:write:agent"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "mcp_client.mjs", srv.URL()+memorysvc.Path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NOVAOS_TOKEN="+tok)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node mcp_client.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep jsReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String(), tok) {
		t.Fatal("the report repeats the token")
	}
	t.Logf("MCP TypeScript client report:\n%s", stdout.String())
	for _, s := range rep.Steps {
		if !s.OK {
			t.Errorf("step %s failed: %+v", s.Name, s.Error)
		}
	}

	var tools []struct{ Name, InputType, OutputType string }
	if err := json.Unmarshal(rep.step(t, "listTools").Result, &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.InputType != "object" || tl.OutputType != "object" {
			t.Errorf("tool %s: input schema type %q, output %q; want object schemas", tl.Name, tl.InputType, tl.OutputType)
		}
	}
	slices.Sort(names)
	want := []string{memorysvc.ToolAssemble, memorysvc.ToolForget, memorysvc.ToolHint, memorysvc.ToolHintStatus,
		memorysvc.ToolProposalStatus, memorysvc.ToolQuery, memorysvc.ToolUpdate, memorysvc.ToolWrite}
	slices.Sort(want)
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("listTools names (-want +got):\n%s", d)
	}

	type toolResult struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct{ Text string }
	}
	result := func(name string) toolResult {
		var r toolResult
		if err := json.Unmarshal(rep.step(t, name).Result, &r); err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
		return r
	}
	var written struct {
		MemoryID string `json:"memory_id"`
		Scope    string
	}
	if w := result("write"); w.IsError || json.Unmarshal(w.StructuredContent, &written) != nil || written.MemoryID == "" || written.Scope != "run" {
		t.Errorf("write = %+v; want a stored run memory", w)
	}
	var found struct {
		Items []struct {
			MemoryID string `json:"memory_id"`
		}
	}
	if q := result("query"); q.IsError || json.Unmarshal(q.StructuredContent, &found) != nil || len(found.Items) != 1 || found.Items[0].MemoryID != written.MemoryID {
		t.Errorf("query = %+v; want the written memory", q)
	}
	var assembled struct {
		RunData json.RawMessage `json:"run_data"`
	}
	if a := result("assemble"); a.IsError || json.Unmarshal(a.StructuredContent, &assembled) != nil || !strings.Contains(string(assembled.RunData), written.MemoryID) {
		t.Errorf("assemble = %+v; want run_data holding the written memory", a)
	}
	if r := result("refused"); !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, `"code":"insufficient_scope"`) {
		t.Errorf("a write the token does not allow = %+v; want an isError result naming insufficient_scope", r)
	}
}
