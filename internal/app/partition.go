package app

import (
	"context"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// The hosted agents share one database, but an A2A task belongs to the
// agent that ran it: GetTask, ListTasks or CancelTask through another
// agent's endpoint must not see it. The partition prefixes the tenant of
// every scope with the agent's name, so the stores' own scope checks keep
// the agents apart without a column of their own.
func agentScope(agent string, s a2asrv.Scope) a2asrv.Scope {
	s.Tenant = agent + "/" + s.Tenant
	return s
}

type agentTasks struct {
	store a2asrv.TaskStore
	agent string
}

var _ a2asrv.TaskStore = agentTasks{}

func (p agentTasks) Create(ctx context.Context, s a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	return p.store.Create(ctx, agentScope(p.agent, s), t)
}

func (p agentTasks) Get(ctx context.Context, s a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	return p.store.Get(ctx, agentScope(p.agent, s), id)
}

func (p agentTasks) Update(ctx context.Context, s a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	return p.store.Update(ctx, agentScope(p.agent, s), t, prev)
}

func (p agentTasks) Append(ctx context.Context, s a2asrv.Scope, id string, prev a2asrv.Version, events []*a2a.StreamResponse, compact *a2a.Task) (a2asrv.Version, error) {
	return p.store.Append(ctx, agentScope(p.agent, s), id, prev, events, compact)
}

func (p agentTasks) List(ctx context.Context, s a2asrv.Scope, q a2asrv.ListQuery) (*a2asrv.ListResult, error) {
	return p.store.List(ctx, agentScope(p.agent, s), q)
}

func (p agentTasks) Delete(ctx context.Context, s a2asrv.Scope, id string) error {
	return p.store.Delete(ctx, agentScope(p.agent, s), id)
}

type agentPushConfigs struct {
	store a2asrv.PushConfigStore
	agent string
}

var _ a2asrv.PushConfigStore = agentPushConfigs{}

func (p agentPushConfigs) Put(ctx context.Context, s a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) error {
	return p.store.Put(ctx, agentScope(p.agent, s), cfg)
}

func (p agentPushConfigs) Get(ctx context.Context, s a2asrv.Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	return p.store.Get(ctx, agentScope(p.agent, s), taskID, id)
}

func (p agentPushConfigs) List(ctx context.Context, s a2asrv.Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	return p.store.List(ctx, agentScope(p.agent, s), taskID, pageSize, pageToken)
}

func (p agentPushConfigs) Delete(ctx context.Context, s a2asrv.Scope, taskID, id string) error {
	return p.store.Delete(ctx, agentScope(p.agent, s), taskID, id)
}
