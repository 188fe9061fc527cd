package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/files"
	"novaos.dev/novaos/tools"
)

// An agent writes a note in its own area, reads it back and lists its
// files; a write that would take its tenant past the quota fails with a
// reason it can act on.
func ExampleProvider() {
	ctx := context.Background()
	p, err := files.New(tools.NewMemoryFileStore(), &files.Options{
		TenantQuotaBytes: 64,
		Now:              func() time.Time { return time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	agent := &toolgw.Caller{Tenant: "acme", Agent: "researcher", Scopes: []string{"mcp:tools:*", "files:read:agent", "files:write:agent"}}
	call := func(name, args string) {
		tool, _, _ := p.Find(ctx, agent, name)
		res, err := p.Call(ctx, &toolgw.Request{Caller: agent, Tool: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			fmt.Println(name, "error:", err)
			return
		}
		fmt.Println(name, res.Content[0].(*mcp.TextContent).Text)
	}
	call(files.ToolWrite, `{"path": "notes/plan.md", "content": "1. read\n2. write", "content_type": "text/markdown"}`)
	call(files.ToolRead, `{"path": "notes/plan.md"}`)
	call(files.ToolList, `{"prefix": "notes/"}`)
	call(files.ToolWrite, `{"path": "notes/big.txt", "content": "`+fmt.Sprintf("%064d", 0)+`"}`)
	// Output:
	// novaos.files.write {"path":"notes/plan.md","version":1,"size":16,"sha256":"9c1d81fd96a025382eb2abb1ad55327d91efbb9cf327860d8be8bc2e9e2a103e"}
	// novaos.files.read {"path":"notes/plan.md","content":"1. read\n2. write","encoding":"text","content_type":"text/markdown","version":1,"size":16,"sha256":"9c1d81fd96a025382eb2abb1ad55327d91efbb9cf327860d8be8bc2e9e2a103e"}
	// novaos.files.list {"files":[{"path":"notes/plan.md","size":16,"version":1,"content_type":"text/markdown","updated_at":"2026-06-01T09:00:00Z"}],"next_cursor":""}
	// novaos.files.write {"code":"QUOTA_EXCEEDED","error":"QUOTA_EXCEEDED: the tenant's files take 16 bytes and would take 80, its quota is 64: delete or shrink some first"}
}
