package app

import (
	"cmp"
	"context"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/schedsvc"
	"novaos.dev/novaos/secret"
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
// service is not served).
func scheduleDeps(tokens schedsvc.Tokens, admin secret.Value, g *execgw.Service, st gateway.Store) schedsvc.Deps {
	d := schedsvc.Deps{Tokens: tokens, AdminToken: admin}
	if g != nil && st != nil {
		d.Runs = scheduleRuns{g, st}
	}
	return d
}

// scheduleRuns is the execution gateway as the schedule service starts
// runs through it. A run's Limits are not passed on: nothing enforces a
// per-run model budget yet.
type scheduleRuns struct {
	g  *execgw.Service
	st gateway.Store
}

func (r scheduleRuns) Instance(ctx context.Context, tenantID, instanceID string) (gateway.Instance, error) {
	return r.st.GetInstance(ctx, tenantID, instanceID)
}

func (r scheduleRuns) Start(ctx context.Context, s schedsvc.RunStart) (string, error) {
	run, err := r.g.StartRun(ctx, execgw.StartRequest{TenantID: s.TenantID, InstanceID: s.InstanceID, RunID: s.RunID,
		IdempotencyKey: s.IdempotencyKey, Input: s.Input, Caller: s.Caller})
	return run.ID, err
}
