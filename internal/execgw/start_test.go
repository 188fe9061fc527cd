package execgw_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"novaos.dev/novaos/gateway"
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
		"no input":    func(r *execgw.StartRequest) { r.Input = " " },
		"no run id":   func(r *execgw.StartRequest) { r.RunID = "" },
		"a bad key":   func(r *execgw.StartRequest) { r.IdempotencyKey = "a key\n" },
		"no instance": func(r *execgw.StartRequest) { r.InstanceID = "" },
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
