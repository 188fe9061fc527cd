package app

import (
	"cmp"
	"context"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/schedsvc"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// SchedulesOptions configure the heartbeat schedules (Options.Schedules).
type SchedulesOptions = schedsvc.Options

func (o *Options) schedules() *schedsvc.Options {
	sc := o.Schedules
	sc.Logger = cmp.Or(sc.Logger, o.Logger.With("service", "schedules"))
	return &sc
}

// scheduleDeps are the schedule service's dependencies: it starts its
// runs through the execution gateway g (none without one, and then the
// service is not served), and reads their model use from the LLM
// gateway's ledger in st.
func scheduleDeps(st *store.Stores, tokens schedsvc.Tokens, admin secret.Value, g *execgw.Service) schedsvc.Deps {
	d := schedsvc.Deps{Tokens: tokens, AdminToken: admin}
	if g != nil && st.Gateway != nil {
		d.Runs = scheduleRuns{g, st.Gateway}
	}
	if st.LLM != nil {
		d.Spend = scheduleSpend{st.LLM}
	}
	return d
}

// scheduleRuns is the execution gateway as the schedule service starts
// runs through it. A run's Limits (what the schedule's day has left of
// its token and cost caps) become the run's own LLM limit: its execution
// tokens carry it, and the LLM gateway holds each of the run's model
// calls to it: a run stops at what the day had left when it started.
// (Runs of one schedule that overlap are each given that rest.)
type scheduleRuns struct {
	g  *execgw.Service
	st gateway.Store
}

func (r scheduleRuns) Instance(ctx context.Context, tenantID, instanceID string) (gateway.Instance, error) {
	return r.st.GetInstance(ctx, tenantID, instanceID)
}

func (r scheduleRuns) Start(ctx context.Context, s schedsvc.RunStart) (string, error) {
	run, err := r.g.StartRun(ctx, execgw.StartRequest{TenantID: s.TenantID, InstanceID: s.InstanceID, RunID: s.RunID,
		IdempotencyKey: s.IdempotencyKey, Input: s.Input, Caller: s.Caller,
		LLMLimit: gateway.LLMLimit{MaxTokens: s.Limits.MaxTokens, MaxCostUSD: s.Limits.MaxCostUSD}})
	return run.ID, err
}

// scheduleSpend is the LLM gateway's ledger as the schedule service reads
// it: the model tokens and cost of each of a tenant's runs, summed.
type scheduleSpend struct{ st llm.Store }

func (s scheduleSpend) Spent(ctx context.Context, tenantID string, runIDs []string) (schedsvc.Usage, error) {
	var total llm.Amount
	for _, id := range runIDs {
		sp, err := s.st.Spent(ctx, llm.Keys{TenantID: tenantID, RunID: id})
		if err != nil {
			return schedsvc.Usage{}, err
		}
		total = total.Add(sp.Used.Run)
	}
	return schedsvc.Usage{Tokens: total.Tokens, CostUSD: total.Cost.USD()}, nil
}
