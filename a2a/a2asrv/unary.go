package a2asrv

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// A unaryMethod answers with one result or one error.
type unaryMethod func(h *Handler, c *call, params json.RawMessage) (any, *a2a.Error)

// nullResult is the result of methods whose proto response is Empty.
var nullResult = json.RawMessage("null")

func unary(m unaryMethod) method {
	return func(h *Handler, c *call, params json.RawMessage) {
		v, e := m(h, c, params)
		switch {
		case e != nil:
			h.fail(c, e)
		case v == nil:
			h.writeResult(c, nullResult)
		default:
			h.writeValue(c, v)
		}
	}
}

// decode reads params into a fresh T and checks its identifiers.
func decode[T any](c *call, params json.RawMessage) (*T, *a2a.Error) {
	v := new(T)
	if e := a2a.DecodeParams(params, v); e != nil {
		return nil, e
	}
	return v, checkParams(c, v)
}

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

func (h *Handler) getTask(c *call, params json.RawMessage) (any, *a2a.Error) {
	req, e := decode[a2a.GetTaskRequest](c, params)
	switch {
	case e != nil:
		return nil, e
	case req.ID == "":
		return nil, invalid("id is required")
	case badHistoryLength(req.HistoryLength):
		return nil, invalid("historyLength must not be negative")
	}
	t, _, err := h.store.Get(c.r.Context(), c.scope, req.ID)
	if err != nil {
		return nil, h.storeError(c, "get", err)
	}
	return h.trimHistory(t, req.HistoryLength), nil
}

func (h *Handler) listTasks(c *call, params json.RawMessage) (any, *a2a.Error) {
	req, e := decode[a2a.ListTasksRequest](c, params)
	if e != nil {
		return nil, e
	}
	q := ListQuery{ContextID: req.ContextID, State: req.Status, PageToken: req.PageToken}
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
	res, err := h.store.List(c.r.Context(), c.scope, q)
	if err != nil {
		return nil, h.storeError(c, "list", err)
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
	return out, nil
}

func (h *Handler) cancelTask(c *call, params json.RawMessage) (any, *a2a.Error) {
	req, e := decode[a2a.CancelTaskRequest](c, params)
	if e != nil {
		return nil, e
	}
	if req.ID == "" {
		return nil, invalid("id is required")
	}
	ctx := context.WithoutCancel(c.r.Context())
	if _, _, err := h.store.Get(ctx, c.scope, req.ID); err != nil {
		return nil, h.storeError(c, "get", err)
	}
	hb := h.hubs.acquire(req.ID)
	defer h.hubs.release(hb)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.scope = c.scope
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
		return nil, h.storeError(c, "update", err)
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
func (h *Handler) pushConfigs(c *call, taskID string) (PushConfigStore, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	if taskID == "" {
		return nil, invalid("taskId is required")
	}
	if _, _, err := h.store.Get(c.r.Context(), c.scope, taskID); err != nil {
		return nil, h.storeError(c, "get", err)
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

func (h *Handler) createPushConfig(c *call, params json.RawMessage) (any, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	cfg, e := decode[a2a.TaskPushNotificationConfig](c, params)
	if e != nil {
		return nil, e
	}
	if e := h.validPushURL(cfg.URL); e != nil {
		return nil, e
	}
	ps, e := h.pushConfigs(c, cfg.TaskID)
	if e != nil {
		return nil, e
	}
	if cfg.ID == "" {
		cfg.ID = h.newID()
	}
	cfg.Tenant = c.scope.Tenant
	if err := ps.Put(c.r.Context(), c.scope, cfg); err != nil {
		return nil, h.storeError(c, "put push config", err)
	}
	return redactPushConfig(cfg), nil
}

// pushConfigRef decodes the params of Get and Delete, which name one config.
func (h *Handler) pushConfigRef(c *call, params json.RawMessage) (PushConfigStore, *a2a.GetTaskPushNotificationConfigRequest, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	req, e := decode[a2a.GetTaskPushNotificationConfigRequest](c, params)
	if e != nil {
		return nil, nil, e
	}
	if req.ID == "" {
		return nil, nil, invalid("id is required")
	}
	ps, e := h.pushConfigs(c, req.TaskID)
	return ps, req, e
}

func (h *Handler) getPushConfig(c *call, params json.RawMessage) (any, *a2a.Error) {
	ps, req, e := h.pushConfigRef(c, params)
	if e != nil {
		return nil, e
	}
	cfg, err := ps.Get(c.r.Context(), c.scope, req.TaskID, req.ID)
	if err != nil {
		return nil, h.storeError(c, "get push config", err)
	}
	return redactPushConfig(cfg), nil
}

func (h *Handler) deletePushConfig(c *call, params json.RawMessage) (any, *a2a.Error) {
	ps, req, e := h.pushConfigRef(c, params)
	if e != nil {
		return nil, e
	}
	if err := ps.Delete(c.r.Context(), c.scope, req.TaskID, req.ID); err != nil {
		return nil, h.storeError(c, "delete push config", err)
	}
	return nil, nil
}

func (h *Handler) listPushConfigs(c *call, params json.RawMessage) (any, *a2a.Error) {
	if h.opts.PushConfigStore == nil {
		return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
	}
	req, e := decode[a2a.ListTaskPushNotificationConfigsRequest](c, params)
	if e != nil {
		return nil, e
	}
	size, e := pageSize(req.PageSize)
	if e != nil {
		return nil, e
	}
	ps, e := h.pushConfigs(c, req.TaskID)
	if e != nil {
		return nil, e
	}
	cfgs, next, err := ps.List(c.r.Context(), c.scope, req.TaskID, size, req.PageToken)
	if err != nil {
		return nil, h.storeError(c, "list push configs", err)
	}
	out := a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, 0, len(cfgs)), NextPageToken: next}
	for _, cfg := range cfgs {
		out.Configs = append(out.Configs, *redactPushConfig(cfg))
	}
	return out, nil
}

func (h *Handler) getExtendedCard(c *call, params json.RawMessage) (any, *a2a.Error) {
	if _, e := decode[a2a.GetExtendedAgentCardRequest](c, params); e != nil {
		return nil, e
	}
	if h.opts.ExtendedCard == nil {
		return nil, a2a.NewError(a2a.CodeExtendedAgentCardNotConfigured, "no extended agent card is configured")
	}
	return h.opts.ExtendedCard, nil
}
