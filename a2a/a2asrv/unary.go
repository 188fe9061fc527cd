package a2asrv

import (
	"context"
	"errors"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

func invalid(format string, args ...any) *a2a.Error {
	return a2a.NewError(a2a.CodeInvalidParams, format, args...)
}

const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// pageSize reads an optional page size: unset or 0 is the default, 1..100
// is taken as is, anything else is invalid.
func pageSize(n *int32) (int, *a2a.Error) {
	if n == nil || *n == 0 {
		return defaultPageSize, nil
	}
	if *n < 0 || *n > maxPageSize {
		return 0, invalid("pageSize must be between 1 and %d", maxPageSize)
	}
	return int(*n), nil
}

func (h *Handler) getTask(ctx context.Context, c *Call, req *a2a.GetTaskRequest) (*a2a.Task, *a2a.Error) {
	switch {
	case req.ID == "":
		return nil, invalid("id is required")
	case badHistoryLength(req.HistoryLength):
		return nil, invalid("historyLength must not be negative")
	}
	t, _, err := h.store.Get(ctx, c.Scope, req.ID)
	if err != nil {
		return nil, h.storeError(ctx, "get", err)
	}
	return h.trimHistory(t, req.HistoryLength), nil
}

func (h *Handler) listTasks(ctx context.Context, c *Call, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, *a2a.Error) {
	q := ListQuery{ContextID: req.ContextID, State: req.Status, PageToken: req.PageToken}
	var e *a2a.Error
	if q.PageSize, e = pageSize(req.PageSize); e != nil {
		return nil, e
	}
	if badHistoryLength(req.HistoryLength) {
		return nil, invalid("historyLength must not be negative")
	}
	if req.StatusTimestampAfter != "" {
		ts, err := time.Parse(time.RFC3339Nano, req.StatusTimestampAfter)
		if err != nil {
			return nil, invalid("statusTimestampAfter must be an RFC 3339 timestamp")
		}
		q.StatusAfter = ts.UTC()
	}
	res, err := h.store.List(ctx, c.Scope, q)
	if err != nil {
		return nil, h.storeError(ctx, "list", err)
	}
	out := a2a.ListTasksResponse{Tasks: make([]a2a.Task, 0, len(res.Tasks)), NextPageToken: res.NextPageToken, PageSize: int32(q.PageSize), TotalSize: int32(res.TotalSize)}
	for _, t := range res.Tasks {
		t = h.trimHistory(t, req.HistoryLength)
		if !req.IncludeArtifacts && t.Artifacts != nil {
			cp := *t
			cp.Artifacts = nil
			t = &cp
		}
		out.Tasks = append(out.Tasks, *t)
	}
	return &out, nil
}

func (h *Handler) cancelTask(ctx context.Context, c *Call, req *a2a.CancelTaskRequest) (*a2a.Task, *a2a.Error) {
	if req.ID == "" {
		return nil, invalid("id is required")
	}
	ctx = context.WithoutCancel(ctx)
	if _, _, err := h.store.Get(ctx, c.Scope, req.ID); err != nil {
		return nil, h.storeError(ctx, "get", err)
	}
	hb := h.hubs.acquire(req.ID)
	defer h.hubs.release(hb)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.scope = c.Scope
	// CANCELED is written first; only then is the execution preempted, so
	// whatever it does on its way out cannot overwrite the decision.
	t, err := hb.applyLocked(ctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
		if t.Status.State.Terminal() {
			return nil, a2a.NewError(a2a.CodeTaskNotCancelable, "task %s is in terminal state %s", t.ID, t.Status.State)
		}
		t.Status = a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: h.now()}
		if len(req.Metadata) > 0 {
			md := make(map[string]any, len(t.Metadata)+len(req.Metadata))
			for k, v := range t.Metadata {
				md[k] = v
			}
			for k, v := range req.Metadata {
				md[k] = v
			}
			t.Metadata = md
		}
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}}, nil
	})
	if err != nil {
		return nil, h.storeError(ctx, "update", err)
	}
	if ex := hb.exec; ex != nil {
		ex.upd.revoked = true
		ex.cancel(ErrCanceled)
	}
	return t, nil
}

// pushConfigs returns the push-config store and checks that taskID names a
// task of the caller: PushNotificationNotSupported without a store,
// TaskNotFound for anyone else's task.
func (h *Handler) pushConfigs(ctx context.Context, c *Call, taskID string) (PushConfigStore, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if taskID == "" {
		return nil, invalid("taskId is required")
	}
	if _, _, err := h.store.Get(ctx, c.Scope, taskID); err != nil {
		return nil, h.storeError(ctx, "get", err)
	}
	return h.opts.PushConfigStore, nil
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

// validPushURL checks a webhook URL against Options.PushURLPolicy. The
// error names the reason, never the URL, which may carry a token.
func (h *Handler) validPushURL(raw string) *a2a.Error {
	if len(raw) > maxPushURLLen {
		return invalid("push notification url is longer than %d bytes", maxPushURLLen)
	}
	err := h.opts.PushURLPolicy.CheckURL(raw)
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

func (h *Handler) createPushConfig(ctx context.Context, c *Call, req *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if e := h.validPushURL(req.URL); e != nil {
		return nil, e
	}
	cfg := *req // the caller's request is not ours to change
	cfg.Delivery = nil
	ps, e := h.pushConfigs(ctx, c, cfg.TaskID)
	if e != nil {
		return nil, e
	}
	if cfg.ID == "" {
		cfg.ID = h.newID()
	}
	cfg.Tenant = c.Scope.Tenant
	if err := ps.Put(ctx, c.Scope, &cfg); err != nil {
		return nil, h.storeError(ctx, "put push config", err)
	}
	return redactPushConfig(&cfg), nil
}

// pushConfigRef checks the request of Get and Delete, which name one
// config.
func (h *Handler) pushConfigRef(ctx context.Context, c *Call, req *a2a.GetTaskPushNotificationConfigRequest) (PushConfigStore, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if req.ID == "" {
		return nil, invalid("id is required")
	}
	return h.pushConfigs(ctx, c, req.TaskID)
}

func (h *Handler) getPushConfig(ctx context.Context, c *Call, req *a2a.GetTaskPushNotificationConfigRequest) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
	ps, e := h.pushConfigRef(ctx, c, req)
	if e != nil {
		return nil, e
	}
	cfg, err := ps.Get(ctx, c.Scope, req.TaskID, req.ID)
	if err != nil {
		return nil, h.storeError(ctx, "get push config", err)
	}
	return h.withDelivery(ctx, c, redactPushConfig(cfg)), nil
}

// withDelivery adds how delivery to cfg stands, when the store delivers,
// so a caller sees a stream that gave up (dead) and why.
func (h *Handler) withDelivery(ctx context.Context, c *Call, cfg *a2a.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	ds, ok := h.opts.PushConfigStore.(PushDeliveryStore)
	if !ok {
		return cfg
	}
	st, err := ds.PushDeliveryState(ctx, c.Scope, cfg.TaskID, cfg.ID)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			h.log.WarnContext(ctx, "a2asrv: push delivery state", "err", err)
		}
		return cfg
	}
	out := *cfg
	out.Delivery = st
	return &out
}

func (h *Handler) deletePushConfig(ctx context.Context, c *Call, req *a2a.DeleteTaskPushNotificationConfigRequest) (struct{}, *a2a.Error) {
	ps, e := h.pushConfigRef(ctx, c, req)
	if e != nil {
		return struct{}{}, e
	}
	if err := ps.Delete(ctx, c.Scope, req.TaskID, req.ID); err != nil {
		return struct{}{}, h.storeError(ctx, "delete push config", err)
	}
	return struct{}{}, nil
}

func (h *Handler) listPushConfigs(ctx context.Context, c *Call, req *a2a.ListTaskPushNotificationConfigsRequest) (*a2a.ListTaskPushNotificationConfigsResponse, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	size, e := pageSize(req.PageSize)
	if e != nil {
		return nil, e
	}
	ps, e := h.pushConfigs(ctx, c, req.TaskID)
	if e != nil {
		return nil, e
	}
	cfgs, next, err := ps.List(ctx, c.Scope, req.TaskID, size, req.PageToken)
	if err != nil {
		return nil, h.storeError(ctx, "list push configs", err)
	}
	out := a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, 0, len(cfgs)), NextPageToken: next}
	for _, cfg := range cfgs {
		out.Configs = append(out.Configs, *h.withDelivery(ctx, c, redactPushConfig(cfg)))
	}
	return &out, nil
}

func (h *Handler) getExtendedCard(_ context.Context, _ *Call, _ *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, *a2a.Error) {
	if h.opts.ExtendedCard == nil {
		return nil, a2a.NewError(a2a.CodeExtendedAgentCardNotConfigured, "no extended agent card is configured")
	}
	return h.opts.ExtendedCard, nil
}
