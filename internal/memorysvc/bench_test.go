package memorysvc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
)

// BenchmarkDoorVsMCP compares the direct door with MCP tools/call for the
// same operation on the same endpoint: one service on SQLite, its HTTP
// handler called in process (no socket), "Bearer good" the agent caller.
// Each iteration makes one call of each, in alternating order, so the
// machine's load and the store's background work fall on both alike. It
// reports each side's ns/call and door÷mcp (1 means the door costs what
// MCP does; below 1, less).
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
			var doorT, mcpT time.Duration
			call := func(body string, into *time.Duration) {
				t0 := time.Now()
				r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, bytes.NewReader([]byte(body)))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Authorization", "Bearer good")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				*into += time.Since(t0)
				if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
					b.Fatalf("%d %s", w.Code, w.Body.Bytes())
				}
			}
			i := 0
			for b.Loop() {
				// Distinct writes: the two sides never write the same
				// content.
				door := `{"tool":"memory.` + op.tool + `","payload":` + op.args(2*i) + `}`
				rpc := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.` + op.tool + `","arguments":` + op.args(2*i+1) + `}}`
				if i%2 == 0 {
					call(door, &doorT)
					call(rpc, &mcpT)
				} else {
					call(rpc, &mcpT)
					call(door, &doorT)
				}
				i++
			}
			n := float64(b.N)
			b.ReportMetric(float64(doorT.Nanoseconds())/n, "door-ns/call")
			b.ReportMetric(float64(mcpT.Nanoseconds())/n, "mcp-ns/call")
			b.ReportMetric(float64(doorT)/float64(mcpT), "door÷mcp")
		})
	}
}
