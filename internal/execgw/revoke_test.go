package execgw_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw"
)

// A run's tokens are refused once the run has ended, and not before; a
// token naming no run, or a run the gateway does not know, is not refused.
func TestRevoked(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, nil)
			close(started)
			<-release
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
	now := time.Now()
	clock := func() time.Time { return now }
	e := newEnv(t, hostedAgents{"a": sc}, &execgw.Options{Now: clock})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
	<-started
	ctx := context.Background()
	claims := &identity.Claims{TenantID: "acme", RunID: run}
	if err := e.svc.Revoked(ctx, claims); err != nil {
		t.Fatalf("a live run's token: %v", err)
	}
	close(release)
	e.waitStatus(run, gateway.StatusCompleted)
	// The ending's event reached the gateway: the token is refused at once.
	if err := e.svc.Revoked(ctx, claims); err == nil {
		t.Fatal("an ended run's token is accepted")
	}
	for _, c := range []*identity.Claims{{TenantID: "acme"}, {TenantID: "acme", RunID: "run-42"}, {TenantID: "globex", RunID: run}} {
		if err := e.svc.Revoked(ctx, c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A run that ends on another replica, whose news never reaches this one,
// is refused within a second of this replica's clock.
func TestRevokedBoundedStaleness(t *testing.T) {
	st := gateway.NewMemoryStore()
	now := time.Unix(1_700_000_000, 0)
	svc := execgw.New(st, execgw.Deps{Tokens: &fakeTokens{}}, &execgw.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	r, _, err := st.CreateRun(ctx, gateway.RunWrite{Now: now, Run: gateway.Run{ID: "r1", TenantID: "acme", Status: gateway.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	c := &identity.Claims{TenantID: "acme", RunID: "r1"}
	if err := svc.Revoked(ctx, c); err != nil {
		t.Fatal(err)
	}
	r.Status = gateway.StatusFailed
	if _, _, err := st.WriteRun(ctx, gateway.RunWrite{Run: r, ExpectVersion: r.Version, Now: now}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Revoked(ctx, c); err != nil {
		t.Fatalf("within the second, the remembered answer holds: %v", err)
	}
	now = now.Add(time.Second)
	if err := svc.Revoked(ctx, c); err == nil || errors.Is(err, gateway.ErrNotFound) {
		t.Fatalf("a second later: %v", err)
	}
}

// Events another service appends to a live run (a model call's) keep
// the run's answer remembered: the store's news of that write is the
// write's own, so the next token of the run is checked without a read.
func TestRevokedRemembersAppends(t *testing.T) {
	// The run waits for its user: no replica holds it.
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateInputRequired, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("which one?")))
		},
	}}
	st := &runReads{Store: gateway.NewMemoryStore()}
	now := time.Now()
	e := newEnvOn(t, st, hostedAgents{"a": sc}, &execgw.Options{Now: func() time.Time { return now }})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
	e.waitStatus(run, gateway.StatusWaitingUser)
	ctx := context.Background()
	claims := &identity.Claims{TenantID: "acme", RunID: run}
	if err := e.svc.Revoked(ctx, claims); err != nil {
		t.Fatalf("a live run's token: %v", err)
	}
	for i := range 3 {
		if err := e.svc.AppendEvents(ctx, "acme", run, gateway.Event{Type: "llm.call", Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		before := st.n.Load()
		if err := e.svc.Revoked(ctx, claims); err != nil {
			t.Fatalf("after append %d: %v", i, err)
		}
		if n := st.n.Load() - before; n != 0 {
			t.Fatalf("after append %d the token's check read the run %d times", i, n)
		}
	}
}

// runReads counts GetRun calls.
type runReads struct {
	gateway.Store
	n atomic.Int64
}

func (r *runReads) GetRun(ctx context.Context, tenant, id string) (gateway.Run, error) {
	r.n.Add(1)
	return r.Store.GetRun(ctx, tenant, id)
}
