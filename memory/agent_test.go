package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
)

// A skill passes its *agent.Context to From and Prefetch.
var _ memory.Turn = (*agent.Context)(nil)

// platform is a memory service behind real token verification, as
// novaos serve runs it, and an issuer to mint the agent's tokens.
func platform(t *testing.T) (url string, issuer *auth.Issuer) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	issuer, err = auth.Open("", auth.Options{Issuer: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	svc := memorysvc.New(db.MemoryStore(), nil)
	h := svc.Handler(func(r *http.Request) (*memorysvc.Caller, bool) {
		c, ok := identity.FromContext(r.Context())
		if !ok {
			return nil, false
		}
		return &memorysvc.Caller{Tenant: c.TenantID, Agent: c.AgentID, User: c.UserID, Run: c.RunID,
			Conversation: c.ConversationID, Grants: c.HasScope}, true
	}, nil)
	mux := http.NewServeMux()
	mux.Handle(memorysvc.Path, issuer.Middleware(h))
	srv.Config.Handler = mux
	return srv.URL, issuer
}

// A skill reaches memory through memory.From with nothing but its
// execution: the token, the service URL and the write keys all come from
// the platform context. A retried execution replays its writes.
func TestFromAndPrefetch(t *testing.T) {
	url, issuer := platform(t)
	ctx := context.Background()
	token, err := issuer.Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "support", UserID: "u1", RunID: "run-9",
		ConversationID: "conv-1", Scopes: []string{"memory:read:*", "memory:write:run", "memory:write:agent"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	a := agent.New("support", "1.0.0", &agent.Options{BeforeSkill: []func(*agent.Context) context.Context{memory.Prefetch[*agent.Context](nil)}})
	if err := a.Register(agent.Skill{ID: "note", Handler: func(c *agent.Context) (agent.Result, error) {
		mc, err := memory.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		var ids []string
		for i := range 2 {
			w, err := mc.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: fmt.Sprintf("%s (part %d)", c.Input(), i)})
			if err != nil {
				return agent.Result{}, err
			}
			ids = append(ids, w.MemoryID)
		}
		pre := memory.Prefetched(c)
		return agent.Result{Output: map[string]any{"ids": ids, "prefetched": pre != nil && !pre.Partial}}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	send := func(streaming bool) (ids []string, prefetched bool, events []any) {
		t.Helper()
		md := map[string]any{agent.ContextMetadataKey: map[string]any{
			"run_id": "run-9", "idempotency_key": "exec-42", "execution_token": token, "gateway_url": url,
			"memory_budget": map[string]any{"token_budget": 2000, "latency_budget_ms": 800},
		}}
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("The customer chose the annual plan")), Metadata: md}
		cl, err := a2aclient.NewForURL(srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		var final *a2a.Task
		if streaming {
			for fr, err := range cl.SendStreamingMessage(ctx, req) {
				if err != nil {
					t.Fatal(err)
				}
				if su := fr.StatusUpdate; su != nil && su.Status.Message != nil {
					events = append(events, platformEvents(su.Status.Message)...)
				}
				if fr.Task != nil {
					final = fr.Task
				}
			}
			final, err = cl.GetTask(ctx, &a2a.GetTaskRequest{ID: taskIDOf(t, final, events)})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			resp, err := cl.SendMessage(ctx, req)
			if err != nil || resp.Task == nil {
				t.Fatalf("send: %+v, %v", resp, err)
			}
			final = resp.Task
			events = platformEvents(final.Status.Message)
		}
		if final.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task %s: %+v", final.Status.State, final.Status.Message)
		}
		var out struct {
			IDs        []string `json:"ids"`
			Prefetched bool     `json:"prefetched"`
		}
		for _, p := range final.Artifacts[0].Parts {
			if p.Data != nil {
				json.Unmarshal(p.Data, &out)
			}
		}
		return out.IDs, out.Prefetched, events
	}
	ids1, pre, events := send(false)
	if len(ids1) != 2 || ids1[0] == ids1[1] || !pre {
		t.Fatalf("first execution: ids %v prefetched %v", ids1, pre)
	}
	if len(events) != 1 || !strings.Contains(fmt.Sprint(events[0]), memory.EventAssembled) {
		t.Fatalf("final message events %v: want one memory.assembled folded in", events)
	}
	// The platform retries the execution (same idempotency key): the same
	// writes replay and nothing is written twice.
	ids2, _, events := send(true)
	if fmt.Sprint(ids2) != fmt.Sprint(ids1) {
		t.Fatalf("retried execution wrote %v, first %v: want the same memories replayed", ids2, ids1)
	}
	if len(events) != 1 {
		t.Fatalf("streaming: %d memory.assembled frames, want 1", len(events))
	}
}

func platformEvents(m *a2a.Message) []any {
	if m == nil {
		return nil
	}
	var out []any
	for _, p := range m.Parts {
		var d struct {
			Events []any `json:"events"`
		}
		if p.Data != nil && json.Unmarshal(p.Data, &d) == nil {
			out = append(out, d.Events...)
		}
	}
	return out
}

func taskIDOf(t *testing.T, task *a2a.Task, _ []any) string {
	t.Helper()
	if task == nil {
		t.Fatal("the stream carried no task")
	}
	return task.ID
}
