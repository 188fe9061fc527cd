package execgw_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/problem"
)

// A run the platform starts itself is delivered like any other, once per
// run id however often it is started.
func TestStartRun(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("echo", "echo", nil)
	ctx := context.Background()
	req := execgw.StartRequest{TenantID: "acme", InstanceID: inst, RunID: "0b8e9a4c-3f2d-8a1b-9c4d-5e6f7a8b9c0d",
		IdempotencyKey: "tick-key-1", Input: "good morning", Caller: gateway.Caller{Subject: "schedule:c1", UserID: "alice"}}
	run, err := e.svc.StartRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != req.RunID || run.IdempotencyKey != "tick-key-1" || run.Status != gateway.StatusQueued || run.AgentID != "echo" {
		t.Errorf("StartRun = %+v", run)
	}
	done := e.waitStatus(run.ID, gateway.StatusCompleted)
	if done.Output == "" || done.Caller != req.Caller {
		t.Errorf("the run ended %+v", done)
	}
	if _, err := e.svc.StartRun(ctx, req); !errors.Is(err, gateway.ErrExists) {
		t.Errorf("a second start of the run: %v, want ErrExists", err)
	}
	other := req
	other.RunID, other.TenantID = "r-2", "globex"
	if _, err := e.svc.StartRun(ctx, other); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a start on another tenant's instance: %v, want ErrNotFound", err)
	}
	for name, change := range map[string]func(r *execgw.StartRequest){
		"no input":               func(r *execgw.StartRequest) { r.Input = " " },
		"no run id":              func(r *execgw.StartRequest) { r.RunID = "" },
		"a bad key":              func(r *execgw.StartRequest) { r.IdempotencyKey = "a key\n" },
		"no instance":            func(r *execgw.StartRequest) { r.InstanceID = "" },
		"a negative token limit": func(r *execgw.StartRequest) { r.LLMLimit.MaxTokens = -1 },
		"a negative cost limit":  func(r *execgw.StartRequest) { r.LLMLimit.MaxCostUSD = -0.5 },
		"a cost limit of NaN":    func(r *execgw.StartRequest) { r.LLMLimit.MaxCostUSD = math.NaN() },
		"an endless cost limit":  func(r *execgw.StartRequest) { r.LLMLimit.MaxCostUSD = math.Inf(1) },
	} {
		bad := req
		bad.RunID = "r-3"
		change(&bad)
		var p *problem.Problem
		if _, err := e.svc.StartRun(ctx, bad); !errors.As(err, &p) || p.Status != http.StatusBadRequest {
			t.Errorf("%s: %v, want a 400", name, err)
		}
	}
}

// A run started with a model limit keeps it, and every execution token
// of the run carries it: the first turn's and the one after a pause.
func TestStartRunLLMLimit(t *testing.T) {
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateInputRequired, hitl.NewMessage("Which account?",
				hitl.InputRequest("Which account?", hitl.InputText, nil, "s-1")))
		},
		func(_ *a2a.SendMessageRequest, w *frameWriter) { w.status(a2a.TaskStateCompleted, nil) },
	}}
	e := newEnv(t, hostedAgents{"payer": sc}, nil)
	inst := e.install("payer", "payer", nil)
	limit := gateway.LLMLimit{MaxTokens: 1200, MaxCostUSD: 0.25}
	run, err := e.svc.StartRun(context.Background(), execgw.StartRequest{TenantID: "acme", InstanceID: inst, RunID: "r-limited",
		Input: "pay the invoice", Caller: gateway.Caller{Subject: "schedule:c1", UserID: "alice"}, LLMLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if run.LLMLimit != limit {
		t.Errorf("the started run's limit %+v, want %+v", run.LLMLimit, limit)
	}
	e.waitStatus(run.ID, gateway.StatusWaitingUser)
	if st := e.do("POST", gateway.RunsPath+"/"+run.ID+"/reply", userTok, map[string]any{"input": "savings"}, nil); st != http.StatusAccepted {
		t.Fatalf("reply: %d", st)
	}
	done := e.waitStatus(run.ID, gateway.StatusCompleted)
	if done.LLMLimit != limit {
		t.Errorf("the ended run's limit %+v, want %+v", done.LLMLimit, limit)
	}
	e.tokens.mu.Lock()
	minted := append([]identity.Claims(nil), e.tokens.minted...)
	e.tokens.mu.Unlock()
	if len(minted) != 2 {
		t.Fatalf("%d tokens minted, want one a turn", len(minted))
	}
	for i, c := range minted {
		if c.RunID != run.ID || c.LLMMaxTokens != limit.MaxTokens || c.LLMMaxCostUSD != limit.MaxCostUSD {
			t.Errorf("turn %d's token: run %q, limit %d tokens, $%g", i+1, c.RunID, c.LLMMaxTokens, c.LLMMaxCostUSD)
		}
	}
}
