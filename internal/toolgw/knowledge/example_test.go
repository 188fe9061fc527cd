package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/store/sqlite"
)

// A document is ingested, indexed by the worker and found by search,
// with a citation of its place. The gateway makes these calls for an
// agent; RunOnce stands for the worker Run keeps going.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "knowledge")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	stores := db.Stores()
	p := knowledge.New(stores.Knowledge, stores.Memory, nil)

	caller := &toolgw.Caller{Tenant: "acme", Agent: "helpdesk", Scopes: []string{knowledge.ScopeRead, knowledge.ScopeWrite}}
	call := func(name string, args any) map[string]any {
		tool, _, _ := p.Find(ctx, caller, name)
		b, _ := json.Marshal(args)
		res, err := p.Call(ctx, &toolgw.Request{Caller: caller, Tool: tool, Arguments: b})
		if err != nil {
			panic(err)
		}
		var out map[string]any
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
		return out
	}

	job := call(knowledge.ToolIngest, map[string]any{
		"content":  "Hotel stays are reimbursed up to 180 euros a night. Receipts are due within thirty days.",
		"metadata": map[string]any{"collection": "handbook", "filename": "expenses.md"},
	})
	fmt.Println("ingest:", job["status"])
	if _, err := p.RunOnce(ctx); err != nil {
		panic(err)
	}
	fmt.Println("job:", call(knowledge.ToolJobStatus, map[string]any{"job_id": job["job_id"]})["status"])

	res := call(knowledge.ToolSearch, map[string]any{"query": "how much for a hotel night?", "top_k": 1})
	top := res["results"].([]any)[0].(map[string]any)
	cite := top["citation"].(map[string]any)
	fmt.Printf("%s [%s, %v-%v]\n", top["text"], cite["filename"], cite["start"], cite["end"])
	// Output:
	// ingest: pending
	// job: completed
	// Hotel stays are reimbursed up to 180 euros a night. Receipts are due within thirty days. [expenses.md, 0-88]
}
