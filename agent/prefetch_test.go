package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/memory"
)

// fakeMemory answers the memory service's tools/call for
// novaos.memory.assemble and records the arguments of every call.
type fakeMemory struct {
	mu     sync.Mutex
	calls  []map[string]any
	status int // non-zero: answer every call with it
}

func (f *fakeMemory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     int `json:"id"`
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.calls = append(f.calls, req.Params.Arguments)
	status := f.status
	f.mu.Unlock()
	if r.URL.Path != memory.ServicePath || req.Params.Name != "novaos.memory.assemble" {
		http.Error(w, "unexpected "+r.URL.Path+" "+req.Params.Name, http.StatusNotFound)
		return
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		w.Write([]byte(`{"detail":"not allowed"}`))
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"structuredContent": map[string]any{"agent_memories": []any{}, "sources_consulted": []any{"agent"},
			"sources_skipped": []any{}, "partial": false, "retrieval_id": "ret-1"}}})
}

func (f *fakeMemory) recorded() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// seed 000, AgentExecutionContext.memory: "ctx.memory.context is the
// AssembleResult AgentBuilder's pre-fetch hook assembled before your skill
// ran — None if the memory capability isn't declared for this agent, or if
// pre-fetch failed (logged, never raised into your skill)"; memory_budget:
// "AgentBuilder's pre-fetch hook reads this property to decide whether to
// call memory.assemble at all".
func TestAutomaticMemoryPrefetch(t *testing.T) {
	t.Setenv(memory.ServiceURLEnv, "")
	budget := map[string]any{"token_budget": 2000.0, "latency_budget_ms": 300.0}
	explicit := []func(*Context) context.Context{memory.Prefetch[*Context](nil)}
	tests := []struct {
		name       string
		opts       Options
		pc         map[string]any // gateway_url is added
		status     int
		wantCalls  int
		wantResult bool
		wantLog    string
	}{
		{name: "budget: one assemble before the skill",
			pc:        map[string]any{"execution_token": "tok-s3cr3t", "memory_budget": budget},
			wantCalls: 1, wantResult: true},
		{name: "no budget: no assemble",
			pc: map[string]any{"execution_token": "tok-s3cr3t"}},
		{name: "service refuses: logged, the skill runs",
			pc:     map[string]any{"execution_token": "tok-s3cr3t", "memory_budget": budget},
			status: http.StatusForbidden, wantCalls: 1, wantLog: "memory: pre-fetch failed"},
		{name: "no token: logged, the skill runs",
			pc:      map[string]any{"memory_budget": budget},
			wantLog: "memory: pre-fetch skipped"},
		{name: "turned off",
			opts: Options{NoMemoryPrefetch: true},
			pc:   map[string]any{"execution_token": "tok-s3cr3t", "memory_budget": budget}},
		{name: "an explicit hook pre-fetched: not twice",
			opts:      Options{BeforeSkill: explicit},
			pc:        map[string]any{"execution_token": "tok-s3cr3t", "memory_budget": budget},
			wantCalls: 1, wantResult: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeMemory{status: tt.status}
			srv := httptest.NewServer(fm)
			defer srv.Close()
			var logs bytes.Buffer
			opts := tt.opts
			opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			a := New("mem-agent", "1", &opts)
			var got *memory.AssembleResult
			ran := false
			a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) {
				ran, got = true, memory.Prefetched(c)
				return Result{}, nil
			}})
			req := request("what did the customer choose?")
			pc := map[string]any{"gateway_url": srv.URL, "run_id": "run-1"}
			for k, v := range tt.pc {
				pc[k] = v
			}
			req.Metadata = map[string]any{ContextMetadataKey: pc}
			f, err := run(t, a, req)
			if err != nil {
				t.Fatal(err)
			}
			if !ran || f.final().State != a2a.TaskStateCompleted {
				t.Fatalf("skill ran %v, final state %v: a pre-fetch must never stop the skill", ran, f.final().State)
			}
			calls := fm.recorded()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d assemble calls, want %d", len(calls), tt.wantCalls)
			}
			if tt.wantCalls > 0 {
				if q := calls[0]["query"]; q != "what did the customer choose?" {
					t.Errorf("query %v, want the turn's input", q)
				}
				if b := calls[0]["token_budget"]; b != 2000.0 {
					t.Errorf("token_budget %v, want 2000", b)
				}
			}
			if (got != nil) != tt.wantResult {
				t.Errorf("Prefetched = %+v, want present %v", got, tt.wantResult)
			}
			if tt.wantLog != "" && !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("logs %q lack %q", logs.String(), tt.wantLog)
			}
			if strings.Contains(logs.String(), "tok-s3cr3t") {
				t.Errorf("the execution token is in the logs")
			}
		})
	}
}
