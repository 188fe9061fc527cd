package memory_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/secret"
)

// argsRecorder is a memory service that answers every tools/call with a
// forget result and keeps the arguments it was sent.
type argsRecorder struct {
	mu   sync.Mutex
	args []memory.ForgetRequest
}

func (a *argsRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var call struct {
		ID     int64 `json:"id"`
		Params struct {
			Arguments memory.ForgetRequest `json:"arguments"`
		} `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.args = append(a.args, call.Params.Arguments)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": map[string]any{
		"structuredContent": memory.ForgetResult{DeletedCount: 1, DeleteEventID: "e1"}}})
}

// TestForgetDefaultReason: a forget without a reason is sent with the
// memory guide's default, and one with a reason keeps it.
//
// seed 000, novaos_client_sdk.memory MemoryClient.forget: "reason ...
// Human-readable reason for deletion (1-500 chars). Stored in the audit
// trail. Defaults to "agent-requested"."
func TestForgetDefaultReason(t *testing.T) {
	rec := &argsRecorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := memory.NewClient(srv.URL, secret.New("tok"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		name, reason, want string
	}{
		{"no reason", "", "agent-requested"},
		{"a reason", "superseded by final outline", "superseded by final outline"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: "m1", Reason: tt.reason}
			if _, err := c.Forget(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if req.Reason != tt.reason {
				t.Errorf("Forget changed the caller's request: reason %q", req.Reason)
			}
			rec.mu.Lock()
			got := rec.args[i].Reason
			rec.mu.Unlock()
			if got != tt.want {
				t.Fatalf("sent reason %q, want %q", got, tt.want)
			}
		})
	}
	if memory.DefaultForgetReason != "agent-requested" {
		t.Fatalf("DefaultForgetReason = %q", memory.DefaultForgetReason)
	}
}
