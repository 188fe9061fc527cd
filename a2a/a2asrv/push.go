package a2asrv

import (
	"context"
	"errors"
	"log/slog"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// pushMethods are the core's four push-config methods. Without a
// PushConfigStore each answers PushNotificationNotSupported.
type pushMethods struct {
	configs PushConfigStore // nil: not supported
	tasks   TaskStore       // says whose task a config is for
	urls    *netguard.Policy
	log     *slog.Logger
	clock   clock
}

// taskConfigs returns the push-config store and checks that taskID names a
// task of the caller: PushNotificationNotSupported without a store,
// TaskNotFound for anyone else's task.
func (pm *pushMethods) taskConfigs(ctx context.Context, c *Call, taskID string) (PushConfigStore, *a2a.Error) {
	if pm.configs == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if taskID == "" {
		return nil, invalid("taskId is required")
	}
	if _, _, err := pm.tasks.Get(ctx, c.Scope, taskID); err != nil {
		return nil, storeError(ctx, pm.log, "get", err)
	}
	return pm.configs, nil
}

// redactPushConfig drops the webhook credentials from a config before it
// is sent: they are write-only, so reading configs back never leaks a secret
// (the concern of a2aproject/A2A#1988).
func redactPushConfig(cfg *a2a.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	if cfg.Authentication == nil || cfg.Authentication.Credentials == "" {
		return cfg
	}
	c := *cfg
	auth := *cfg.Authentication
	auth.Credentials = ""
	c.Authentication = &auth
	return &c
}

// maxPushURLLen bounds a push-notification webhook URL.
const maxPushURLLen = 2048

// checkPushURL checks a webhook URL against policy (Options.PushURLPolicy). The
// error names the reason, never the URL, which may carry a token.
func checkPushURL(policy *netguard.Policy, raw string) *a2a.Error {
	if len(raw) > maxPushURLLen {
		return invalid("push notification url is longer than %d bytes", maxPushURLLen)
	}
	err := policy.CheckURL(raw)
	var re *netguard.RefusedError
	var me *netguard.MalformedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return invalid("push notification url: host %s is a %s address, which this server does not send to", re.Host, re.Class)
	case errors.As(err, &me):
		return invalid("push notification url must be an absolute http(s) URL: %s", me.Reason)
	}
	return invalid("push notification url must be an absolute http(s) URL")
}

func (pm *pushMethods) createConfig(ctx context.Context, c *Call, req *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
	if pm.configs == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if e := checkPushURL(pm.urls, req.URL); e != nil {
		return nil, e
	}
	cfg := *req // the caller's request is not ours to change
	cfg.Delivery = nil
	ps, e := pm.taskConfigs(ctx, c, cfg.TaskID)
	if e != nil {
		return nil, e
	}
	if cfg.ID == "" {
		cfg.ID = pm.clock.newID()
	}
	cfg.Tenant = c.Scope.Tenant
	if err := ps.Put(ctx, c.Scope, &cfg); err != nil {
		return nil, storeError(ctx, pm.log, "put push config", err)
	}
	return redactPushConfig(&cfg), nil
}

// configRef checks the request of Get and Delete, which name one
// config.
func (pm *pushMethods) configRef(ctx context.Context, c *Call, req *a2a.GetTaskPushNotificationConfigRequest) (PushConfigStore, *a2a.Error) {
	if pm.configs == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if req.ID == "" {
		return nil, invalid("id is required")
	}
	return pm.taskConfigs(ctx, c, req.TaskID)
}

func (pm *pushMethods) getConfig(ctx context.Context, c *Call, req *a2a.GetTaskPushNotificationConfigRequest) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
	ps, e := pm.configRef(ctx, c, req)
	if e != nil {
		return nil, e
	}
	cfg, err := ps.Get(ctx, c.Scope, req.TaskID, req.ID)
	if err != nil {
		return nil, storeError(ctx, pm.log, "get push config", err)
	}
	return pm.withDelivery(ctx, c, redactPushConfig(cfg)), nil
}

// withDelivery adds how delivery to cfg stands, when the store delivers,
// so a caller sees a stream that gave up (dead) and why.
func (pm *pushMethods) withDelivery(ctx context.Context, c *Call, cfg *a2a.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	ds, ok := pm.configs.(PushDeliveryStore)
	if !ok {
		return cfg
	}
	st, err := ds.PushDeliveryState(ctx, c.Scope, cfg.TaskID, cfg.ID)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			pm.log.WarnContext(ctx, "a2asrv: push delivery state", "err", err)
		}
		return cfg
	}
	out := *cfg
	out.Delivery = st
	return &out
}

func (pm *pushMethods) deleteConfig(ctx context.Context, c *Call, req *a2a.DeleteTaskPushNotificationConfigRequest) (struct{}, *a2a.Error) {
	ps, e := pm.configRef(ctx, c, req)
	if e != nil {
		return struct{}{}, e
	}
	if err := ps.Delete(ctx, c.Scope, req.TaskID, req.ID); err != nil {
		return struct{}{}, storeError(ctx, pm.log, "delete push config", err)
	}
	return struct{}{}, nil
}

func (pm *pushMethods) listConfigs(ctx context.Context, c *Call, req *a2a.ListTaskPushNotificationConfigsRequest) (*a2a.ListTaskPushNotificationConfigsResponse, *a2a.Error) {
	if pm.configs == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	size, e := pageSize(req.PageSize)
	if e != nil {
		return nil, e
	}
	ps, e := pm.taskConfigs(ctx, c, req.TaskID)
	if e != nil {
		return nil, e
	}
	cfgs, next, err := ps.List(ctx, c.Scope, req.TaskID, size, req.PageToken)
	if err != nil {
		return nil, storeError(ctx, pm.log, "list push configs", err)
	}
	out := a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, 0, len(cfgs)), NextPageToken: next}
	for _, cfg := range cfgs {
		out.Configs = append(out.Configs, *pm.withDelivery(ctx, c, redactPushConfig(cfg)))
	}
	return &out, nil
}
