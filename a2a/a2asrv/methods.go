package a2asrv

import (
	"context"
	"errors"
	"log/slog"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// taskMethods are the core's six task methods: SendMessage,
// SendStreamingMessage, SubscribeToTask (here), GetTask, ListTasks and
// CancelTask (unary.go). They check a request against the store and hand
// what runs the Executor to executions.
type taskMethods struct {
	store TaskStore
	// followsFeed: other processes write the tasks too (Options.TaskFeed).
	followsFeed   bool
	execs         *executions
	log           *slog.Logger
	clock         clock
	streaming     bool // the card says the agent streams
	historyLength int  // Options.DefaultHistoryLength
	// push and pushURLs check a SendMessage's inline push config.
	push     PushConfigStore
	pushURLs *netguard.Policy
}

// storeError maps a store failure to the protocol: not found stays not found
// (which is also what another scope's task looks like); anything else is an
// internal error whose detail is logged, not sent.
func storeError(ctx context.Context, log *slog.Logger, op string, err error) *a2a.Error {
	var e *a2a.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, ErrNotFound):
		return a2a.NewError(a2a.CodeTaskNotFound, "task not found")
	case errors.Is(err, ErrBadPageToken):
		return a2a.NewError(a2a.CodeInvalidParams, "invalid pageToken")
	case errors.Is(err, ErrExists):
		return taskIDTaken()
	}
	log.ErrorContext(ctx, "a2asrv: store", "op", op, "err", err)
	return a2a.NewError(a2a.CodeInternalError, "internal error")
}

// trimHistory applies a historyLength: nil keeps the default, 0 drops the
// history, n keeps the n most recent messages.
func (tm *taskMethods) trimHistory(t *a2a.Task, n *int32) *a2a.Task {
	limit := tm.historyLength
	if n != nil {
		if *n == 0 {
			if t.History == nil {
				return t
			}
			c := *t
			c.History = nil
			return &c
		}
		limit = int(*n)
	}
	if limit <= 0 || len(t.History) <= limit {
		return t
	}
	c := *t
	c.History = t.History[len(t.History)-limit:]
	return &c
}

func badHistoryLength(n *int32) bool { return n != nil && *n < 0 }

// prepared is a validated SendMessage ready to run.
type prepared struct {
	req  a2a.SendMessageRequest
	msg  *a2a.Message
	task *a2a.Task // existing task, nil for a new one
	rc   *RequestContext
	// proposed says the new task's id came from Options.NewTaskID, so
	// another scope may hold it: only the store's create can tell.
	proposed bool
}

func (tm *taskMethods) prepareSend(ctx context.Context, c *Call, req *a2a.SendMessageRequest, streaming bool) (*prepared, *a2a.Error) {
	p := prepared{req: *req}
	m := p.req.Message
	switch {
	case m == nil:
		return nil, a2a.NewError(a2a.CodeInvalidParams, "message is required")
	case m.MessageID == "":
		return nil, a2a.NewError(a2a.CodeInvalidParams, "message.messageId is required")
	case len(m.Parts) == 0:
		return nil, a2a.NewError(a2a.CodeInvalidParams, "message.parts must not be empty")
	case m.Role == a2a.RoleUnspecified:
		return nil, a2a.NewError(a2a.CodeInvalidParams, "message.role must be ROLE_USER or ROLE_AGENT")
	}
	if cfg := p.req.Configuration; cfg != nil {
		if badHistoryLength(cfg.HistoryLength) {
			return nil, a2a.NewError(a2a.CodeInvalidParams, "configuration.historyLength must not be negative")
		}
		if cfg.TaskPushNotificationConfig != nil {
			if tm.push == nil {
				return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
			}
			if e := checkPushURL(tm.pushURLs, cfg.TaskPushNotificationConfig.URL); e != nil {
				return nil, e
			}
		}
	}
	msg := *m
	if msg.TaskID != "" {
		t, _, err := tm.store.Get(ctx, c.Scope, msg.TaskID)
		if err != nil {
			return nil, storeError(ctx, tm.log, "get", err)
		}
		if t.Status.State.Terminal() {
			return nil, a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in terminal state %s and accepts no more messages", t.ID, t.Status.State)
		}
		if msg.ContextID == "" {
			msg.ContextID = t.ContextID
		} else if msg.ContextID != t.ContextID {
			return nil, a2a.NewError(a2a.CodeInvalidParams, "message.contextId does not match the task's contextId")
		}
		p.task = t
	} else {
		msg.TaskID, p.proposed = tm.execs.newTaskID(ctx, c.Scope, &p.req)
		if msg.ContextID == "" {
			msg.ContextID = tm.clock.newID()
		}
	}
	p.msg = &msg
	rc := &RequestContext{
		TaskID: msg.TaskID, ContextID: msg.ContextID, Message: p.msg, Task: p.task,
		Metadata: p.req.Metadata, Configuration: p.req.Configuration, Scope: c.Scope,
		Extensions: c.Extensions, Header: c.Header, Streaming: streaming, Identity: c.Identity,
	}
	for _, ref := range msg.ReferenceTaskIDs {
		t, _, err := tm.store.Get(ctx, c.Scope, ref)
		if err == nil && t.ContextID == msg.ContextID {
			rc.ReferencedTasks = append(rc.ReferencedTasks, t)
			continue
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, storeError(ctx, tm.log, "get", err)
		}
		rc.UnresolvedReferences = append(rc.UnresolvedReferences, ref)
	}
	p.rc = rc
	return &p, nil
}

func (tm *taskMethods) sendMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest) (*a2a.SendMessageResponse, *a2a.Error) {
	p, e := tm.prepareSend(ctx, c, req, false)
	if e != nil {
		return nil, e
	}
	var histLen *int32
	if cfg := p.req.Configuration; cfg != nil {
		histLen = cfg.HistoryLength
	}
	if cfg := p.req.Configuration; cfg != nil && cfg.ReturnImmediately {
		_, snap, e := tm.execs.start(ctx, c, p, nil, true)
		if e != nil {
			return nil, e
		}
		return &a2a.SendMessageResponse{Task: tm.trimHistory(snap, histLen)}, nil
	}
	ex, sub, stop, e := tm.execs.follow(ctx, c, p)
	if e != nil {
		return nil, e
	}
	defer stop()
	hb := ex.upd.hub
	var buf []frame
	var dropped bool
	for {
		select {
		case <-sub.notify:
		case <-tm.execs.shut.cutC():
		case <-ctx.Done():
			// The caller left; the execution runs on, detached.
			return nil, a2a.NewError(a2a.CodeInternalError, "the caller left")
		}
		if tm.execs.shut.isCut() {
			return nil, tm.execs.cutError(hb)
		}
		buf, dropped = sub.take(buf)
		for i := range buf {
			f := &buf[i]
			switch {
			case f.err != nil:
				return nil, f.err
			case f.resp != nil && f.resp.Message != nil:
				return &a2a.SendMessageResponse{Message: f.resp.Message}, nil
			case f.final() || f.endExec == ex.id:
				return tm.respondTask(ctx, c, hb, histLen)
			}
		}
		if dropped {
			return tm.respondTask(ctx, c, hb, histLen)
		}
	}
}

// respondTask answers with the task as it stands now.
func (tm *taskMethods) respondTask(ctx context.Context, c *Call, hb *hub, histLen *int32) (*a2a.SendMessageResponse, *a2a.Error) {
	hb.mu.Lock()
	t := hb.snapshotLocked()
	hb.mu.Unlock()
	if t == nil {
		var err error
		t, _, err = tm.store.Get(ctx, c.Scope, hb.id)
		if err != nil {
			return nil, storeError(ctx, tm.log, "get", err)
		}
	}
	return &a2a.SendMessageResponse{Task: tm.trimHistory(t, histLen)}, nil
}

func (tm *taskMethods) requireStreaming() *a2a.Error {
	if !tm.streaming {
		return a2a.NewError(a2a.CodeUnsupportedOperation, "this agent does not support streaming")
	}
	return nil
}

func (tm *taskMethods) sendStreamingMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest, sink StreamSink) *a2a.Error {
	if e := tm.requireStreaming(); e != nil {
		return e
	}
	p, e := tm.prepareSend(ctx, c, req, true)
	if e != nil {
		return e
	}
	ex, sub, stop, e := tm.execs.follow(ctx, c, p)
	if e != nil {
		return e
	}
	defer stop()
	return tm.execs.stream(ctx, sink, sub, nil, ex.id)
}

func (tm *taskMethods) subscribeToTask(ctx context.Context, c *Call, req *a2a.SubscribeToTaskRequest, sink StreamSink) *a2a.Error {
	if e := tm.requireStreaming(); e != nil {
		return e
	}
	if req.ID == "" {
		return a2a.NewError(a2a.CodeInvalidParams, "id is required")
	}
	// Check scope against the store before touching the hub, so another
	// caller's task id reveals nothing.
	if _, _, err := tm.store.Get(ctx, c.Scope, req.ID); err != nil {
		return storeError(ctx, tm.log, "get", err)
	}
	hb := tm.execs.hubs.acquire(req.ID)
	defer tm.execs.hubs.release(hb)
	hb.mu.Lock()
	hb.scope = c.Scope
	if hb.exec == nil && (!tm.followsFeed || len(hb.subs) == 0) {
		// Re-read: another replica may have written since. A hub that
		// others already follow through the feed is up to date, and
		// re-reading it would skip its followers past frames.
		hb.task = nil
	}
	if err := hb.loadLocked(ctx); err != nil {
		hb.mu.Unlock()
		return storeError(ctx, tm.log, "get", err)
	}
	snap, seq := hb.snapshotLocked(), hb.version
	if snap.Status.State.Terminal() {
		hb.mu.Unlock()
		return a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in terminal state %s", snap.ID, snap.Status.State)
	}
	// The task is live while an execution here writes it, or, with a
	// feed, while it is not final: an execution elsewhere may write it,
	// and if none does, crash recovery settles it in the end.
	live := hb.exec != nil || tm.followsFeed
	sub := newSubscriber(0)
	if live {
		hb.subscribeLocked(sub)
	}
	hb.mu.Unlock()
	defer hb.unsubscribe(sub)
	first := &frame{seq: seq, resp: &a2a.StreamResponse{Task: snap}}
	if !live {
		// Nothing will change the task that this process would hear
		// of: send the snapshot and close.
		return tm.execs.stream(ctx, sink, nil, first, 0)
	}
	return tm.execs.stream(ctx, sink, sub, first, 0)
}
