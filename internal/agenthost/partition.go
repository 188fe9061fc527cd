package agenthost

import (
	"context"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// The hosted agents share one database, but an A2A task belongs to the
// agent that ran it: GetTask, ListTasks or CancelTask through another
// agent's endpoint must not see it. The partition prefixes the tenant of
// every scope with the agent's name, so the stores' own scope checks keep
// the agents apart without a column of their own. Crash recovery settles
// stored rows under the scope they were stored with, already partitioned,
// so it goes to the database's store directly, not through this wrapper
// (recover.go).
func agentScope(agent string, s a2asrv.Scope) a2asrv.Scope {
	s.Tenant = agent + "/" + s.Tenant
	return s
}

type agentTasks struct {
	store a2asrv.TaskStore
	agent string
	// wake, when set, is called after every write: it may have queued
	// push notifications (push.go).
	wake func()
}

// woke calls wake after a successful write.
func (p agentTasks) woke(v a2asrv.Version, err error) (a2asrv.Version, error) {
	if err == nil && p.wake != nil {
		p.wake()
	}
	return v, err
}

var _ a2asrv.TaskStore = agentTasks{}

func (p agentTasks) Create(ctx context.Context, s a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	return p.woke(p.store.Create(ctx, agentScope(p.agent, s), t))
}

func (p agentTasks) Get(ctx context.Context, s a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	return p.store.Get(ctx, agentScope(p.agent, s), id)
}

func (p agentTasks) Update(ctx context.Context, s a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	return p.woke(p.store.Update(ctx, agentScope(p.agent, s), t, prev))
}

func (p agentTasks) Append(ctx context.Context, s a2asrv.Scope, id string, prev a2asrv.Version, events []*a2a.StreamResponse, compact *a2a.Task) (a2asrv.Version, error) {
	return p.woke(p.store.Append(ctx, agentScope(p.agent, s), id, prev, events, compact))
}

func (p agentTasks) List(ctx context.Context, s a2asrv.Scope, q a2asrv.ListQuery) (*a2asrv.ListResult, error) {
	return p.store.List(ctx, agentScope(p.agent, s), q)
}

func (p agentTasks) Delete(ctx context.Context, s a2asrv.Scope, id string) error {
	return p.store.Delete(ctx, agentScope(p.agent, s), id)
}

// agentPushConfigs partitions push configs like tasks, and seals their
// secrets (pushkey.go) when seal is set: the stores keep only sealed
// values, Get and List return the token opened and the credentials never
// (they are write-only; a2asrv redacts them as well), and Open returns a
// config whole for the one caller that needs the credentials: delivery.
type agentPushConfigs struct {
	store a2asrv.PushConfigStore
	agent string
	seal  *pushSealer
	wake  func() // as agentTasks.wake: a put queues the task
}

var _ a2asrv.PushConfigStore = agentPushConfigs{}

func (p agentPushConfigs) Put(ctx context.Context, s a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) error {
	s = agentScope(p.agent, s)
	if p.seal != nil {
		// The caller keeps its cfg: a2asrv answers with it.
		c := *cfg
		tenant := s.Tenant
		var err error
		if c.Token, err = p.seal.seal(c.Token, pushAAD(tenant, c.TaskID, c.ID, c.URL, "token")); err != nil {
			return err
		}
		if cfg.Authentication != nil {
			auth := *cfg.Authentication
			if auth.Credentials, err = p.seal.seal(auth.Credentials, pushAAD(tenant, c.TaskID, c.ID, c.URL, "credentials")); err != nil {
				return err
			}
			c.Authentication = &auth
		}
		cfg = &c
	}
	err := p.store.Put(ctx, s, cfg)
	if err == nil && p.wake != nil {
		p.wake()
	}
	return err
}

func (p agentPushConfigs) Get(ctx context.Context, s a2asrv.Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	s = agentScope(p.agent, s)
	cfg, err := p.store.Get(ctx, s, taskID, id)
	if err != nil || p.seal == nil {
		return cfg, err
	}
	return p.readable(s, taskID, id, cfg, false)
}

func (p agentPushConfigs) List(ctx context.Context, s a2asrv.Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	s = agentScope(p.agent, s)
	cfgs, next, err := p.store.List(ctx, s, taskID, pageSize, pageToken)
	if err != nil || p.seal == nil {
		return cfgs, next, err
	}
	for i, cfg := range cfgs {
		if cfgs[i], err = p.readable(s, taskID, cfg.ID, cfg, false); err != nil {
			return nil, "", err
		}
	}
	return cfgs, next, nil
}

func (p agentPushConfigs) Delete(ctx context.Context, s a2asrv.Scope, taskID, id string) error {
	return p.store.Delete(ctx, agentScope(p.agent, s), taskID, id)
}

// Open returns one config with its token and credentials opened: what a
// webhook delivery sends. It fails closed when a sealed value does not
// open (another key, or a row moved to another task or URL).
func (p agentPushConfigs) Open(ctx context.Context, s a2asrv.Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	s = agentScope(p.agent, s)
	cfg, err := p.store.Get(ctx, s, taskID, id)
	if err != nil || p.seal == nil {
		return cfg, err
	}
	return p.readable(s, taskID, id, cfg, true)
}

// readable opens cfg's token, and its credentials when withCredentials,
// else drops them. s, taskID and id are where the config was looked up,
// which the sealed values are bound to: a row copied elsewhere keeps its
// body, and must not open there.
func (p agentPushConfigs) readable(s a2asrv.Scope, taskID, id string, cfg *a2a.TaskPushNotificationConfig, withCredentials bool) (*a2a.TaskPushNotificationConfig, error) {
	return p.seal.openConfig(s, taskID, id, cfg, withCredentials)
}

// openConfig opens cfg's token, and its credentials when withCredentials,
// else drops them. s (partitioned), taskID and id are where the config was
// looked up, which the sealed values are bound to: a row copied elsewhere
// keeps its body, and must not open there.
func (seal *pushSealer) openConfig(s a2asrv.Scope, taskID, id string, cfg *a2a.TaskPushNotificationConfig, withCredentials bool) (*a2a.TaskPushNotificationConfig, error) {
	if cfg.TaskID != taskID || cfg.ID != id {
		return nil, fmt.Errorf("agenthost: push config %s: %w: stored under another task or id", id, errPushKey)
	}
	c := *cfg
	var err error
	if c.Token, err = seal.open(c.Token, pushAAD(s.Tenant, taskID, id, c.URL, "token")); err != nil {
		return nil, fmt.Errorf("agenthost: push config %s: %w", id, err)
	}
	if cfg.Authentication != nil {
		auth := *cfg.Authentication
		if !withCredentials {
			auth.Credentials = ""
		} else if auth.Credentials, err = seal.open(auth.Credentials, pushAAD(s.Tenant, taskID, id, c.URL, "credentials")); err != nil {
			return nil, fmt.Errorf("agenthost: push config %s: %w", id, err)
		}
		c.Authentication = &auth
	}
	return &c, nil
}

// agentFeed partitions a TaskFeed like the task store: a catch-up reads the
// task under the agent's scope. Watches go by task id, which is unique
// across the database.
type agentFeed struct {
	feed  a2asrv.TaskFeed
	agent string
}

var _ a2asrv.TaskFeed = agentFeed{}

func (p agentFeed) Watch(id string, fn func(a2asrv.TaskChange)) func() { return p.feed.Watch(id, fn) }

func (p agentFeed) CatchUp(ctx context.Context, s a2asrv.Scope, id string, after a2asrv.Version) (a2asrv.TaskChange, error) {
	return p.feed.CatchUp(ctx, agentScope(p.agent, s), id, after)
}
