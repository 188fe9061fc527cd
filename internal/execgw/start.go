package execgw

import (
	"context"
	"math"
	"net/http"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/problem"
)

// StartRequest is a run the platform starts on its own behalf, such as
// a schedule's tick.
type StartRequest struct {
	TenantID   string
	InstanceID string
	// RunID names the run. A run of that id stored already is an error
	// matching gateway.ErrExists and nothing is started, so a start that
	// is retried, in any process, starts one run.
	RunID string
	// IdempotencyKey is the key of the run's first turn (a new one when
	// empty).
	IdempotencyKey string
	Input          string
	Caller         gateway.Caller
	// LLMLimit is the run's own limit on its model use (zero: none),
	// kept in the run and carried by each of its execution tokens, so
	// that the LLM gateway holds every call of the run to it: a refusal
	// names it as the run's schedule limit.
	LLMLimit gateway.LLMLimit
}

// StartRun queues a run as POST /api/v1/execute does, for a caller the
// platform vouches for: the instance must be the tenant's (an error
// matching gateway.ErrNotFound otherwise), and the input and ids within an
// execute request's rules (a 400 *problem.Problem otherwise).
func (s *Service) StartRun(ctx context.Context, r StartRequest) (gateway.Run, error) {
	if err := checkExecute(&gateway.ExecuteRequest{InstanceID: r.InstanceID, Input: r.Input}); err != nil {
		return gateway.Run{}, err
	}
	if !validID(r.RunID) || r.IdempotencyKey != "" && !validID(r.IdempotencyKey) {
		return gateway.Run{}, &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "a run id and an idempotency key are at most 128 printable characters"}
	}
	if l := r.LLMLimit; l.MaxTokens < 0 || !(l.MaxCostUSD >= 0) || math.IsInf(l.MaxCostUSD, 1) {
		return gateway.Run{}, &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "a run's model limit is a number of tokens and of US dollars, neither negative"}
	}
	inst, err := s.store.GetInstance(ctx, r.TenantID, r.InstanceID)
	if err != nil {
		if isNotFound(err) {
			err = instanceNotFound(r.InstanceID)
		}
		return gateway.Run{}, err
	}
	key := r.IdempotencyKey
	if key == "" {
		key = newIdempotencyKey()
	}
	run := gateway.Run{ID: r.RunID, TenantID: r.TenantID, InstanceID: inst.ID, AgentID: agentID(&inst), Pull: pullState(&inst), Caller: r.Caller,
		Status: gateway.StatusQueued, Input: r.Input, IdempotencyKey: key, Turn: 1, LLMLimit: r.LLMLimit}
	if run.Pull != nil {
		run.ThreadID = run.ID // a pulled run's agent always works in a thread
	}
	stored, _, err := s.store.CreateRun(ctx, gateway.RunWrite{Run: run, Now: s.o.Now(),
		Events: []gateway.Event{statusEvent(gateway.StatusQueued, "")}})
	if err != nil {
		return gateway.Run{}, err
	}
	s.log.InfoContext(ctx, "gateway: run queued", "run_id", stored.ID, "tenant_id", stored.TenantID,
		"instance_id", stored.InstanceID, "caller", r.Caller.Subject)
	s.dispatch.kick()
	return stored, nil
}
