package memorysvc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/internal/benchpair"
	"novaos.dev/novaos/memory"
)

// BenchmarkDoorVsMCP compares the direct door with MCP tools/call for the
// same operation on the same endpoint: one service on SQLite, its HTTP
// handler called in process (no socket), "Bearer good" the agent caller.
// benchpair.Run makes one call of each per iteration, in alternating
// order, so the machine's load and the store's background work fall on
// both alike, and reports door÷mcp (1 means the door costs what MCP does;
// below 1, less).
//
//   - write: a new run memory per call, answered after its commit;
//   - query: a run-scope query of three words over 200 run memories.
func BenchmarkDoorVsMCP(b *testing.B) {
	for _, op := range []struct {
		name, tool string
		args       func(i int) string
		seed       int
	}{
		{"write", "write", func(i int) string {
			return fmt.Sprintf(`{"scope":"run","content":"Customer %d chose the annual plan and asked for an invoice."}`, i)
		}, 0},
		{"query", "query", func(i int) string {
			return `{"scope":"run","query":"annual plan invoice","top_k":5}`
		}, 200},
	} {
		b.Run(op.name, func(b *testing.B) {
			s, _ := newService(b, nil)
			c := agentCaller("t1", "a1")
			h := s.Handler(func(r *http.Request) (*Caller, bool) {
				if r.Header.Get("Authorization") == "Bearer good" {
					return c, true
				}
				return nil, false
			}, nil)
			ctx := context.Background()
			for i := range op.seed {
				if _, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun,
					Content: fmt.Sprintf("Customer %d chose the %s plan.", i, []string{"annual", "monthly", "trial"}[i%3])}); err != nil {
					b.Fatal(err)
				}
			}
			call := func(body string) {
				r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Authorization", "Bearer good")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
					b.Fatalf("%d %s", w.Code, w.Body.Bytes())
				}
			}
			// Distinct writes: no two calls write the same content.
			i := 0
			benchpair.Run(b, "door", func() {
				i++
				call(`{"tool":"memory.` + op.tool + `","payload":` + op.args(i) + `}`)
			}, "mcp", func() {
				i++
				call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.` + op.tool + `","arguments":` + op.args(i) + `}}`)
			})
		})
	}
}
