package memorysvc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
)

// An agent's run-scope write is read back in the same run; an agent-scope
// write becomes a proposal the write gate decides.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memory-example-")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	svc := memorysvc.New(db.MemoryStore(), nil)

	// In the server the Caller comes from a verified execution token.
	caller := &memorysvc.Caller{Tenant: "acme", Agent: "support", Run: "run-1",
		Grants: func(scope string) bool { return strings.HasPrefix(scope, "memory:") && scope != memorysvc.ScopeAdmin }}

	svc.Write(ctx, caller, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Customer chose the annual plan."})
	res, _ := svc.Query(ctx, caller, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "which plan?"})
	fmt.Println(res.Items[0].Content, res.Items[0].Score == nil)

	w, _ := svc.Write(ctx, caller, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Refunds over 500 EUR need a second approver."})
	fmt.Println(strings.HasPrefix(w.MemoryID, memory.ProposalPrefix), w.Durable)

	_, err = svc.Write(ctx, caller, &memory.WriteRequest{Scope: memory.ScopeUser, Content: "The user lives in Lisbon."})
	fmt.Println(err)
	// Output:
	// Customer chose the annual plan. true
	// true false
	// memory: 422 policy_denied: scope: user memory is written by consolidation only: submit a hint
}
