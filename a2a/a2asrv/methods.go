package a2asrv

import (
	"context"
	"errors"
	"time"

	"novaos.dev/novaos/a2a"
)

// storeError maps a store failure to the protocol: not found stays not found
// (which is also what another scope's task looks like); anything else is an
// internal error whose detail is logged, not sent.
func (h *Handler) storeError(ctx context.Context, op string, err error) *a2a.Error {
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
	h.log.ErrorContext(ctx, "a2asrv: store", "op", op, "err", err)
	return a2a.NewError(a2a.CodeInternalError, "internal error")
}

// trimHistory applies a historyLength: nil keeps the default, 0 drops the
// history, n keeps the n most recent messages.
func (h *Handler) trimHistory(t *a2a.Task, n *int32) *a2a.Task {
	limit := h.opts.DefaultHistoryLength
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

func (h *Handler) prepareSend(ctx context.Context, c *Call, req *a2a.SendMessageRequest, streaming bool) (*prepared, *a2a.Error) {
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
			if h.opts.PushConfigStore == nil {
				return nil, a2a.NewError(a2a.CodePushNotificationNotSupported, "push notifications are not supported")
			}
			if e := h.validPushURL(cfg.TaskPushNotificationConfig.URL); e != nil {
				return nil, e
			}
		}
	}
	msg := *m
	if msg.TaskID != "" {
		t, _, err := h.store.Get(ctx, c.Scope, msg.TaskID)
		if err != nil {
			return nil, h.storeError(ctx, "get", err)
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
		msg.TaskID, p.proposed = h.newTaskID(ctx, c.Scope, &p.req)
		if msg.ContextID == "" {
			msg.ContextID = h.newID()
		}
	}
	p.msg = &msg
	rc := &RequestContext{
		TaskID: msg.TaskID, ContextID: msg.ContextID, Message: p.msg, Task: p.task,
		Metadata: p.req.Metadata, Configuration: p.req.Configuration, Scope: c.Scope,
		Extensions: c.Extensions, Header: c.Header, Streaming: streaming,
	}
	for _, ref := range msg.ReferenceTaskIDs {
		t, _, err := h.store.Get(ctx, c.Scope, ref)
		if err == nil && t.ContextID == msg.ContextID {
			rc.ReferencedTasks = append(rc.ReferencedTasks, t)
			continue
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, h.storeError(ctx, "get", err)
		}
		rc.UnresolvedReferences = append(rc.UnresolvedReferences, ref)
	}
	p.rc = rc
	return &p, nil
}

// start launches the execution and subscribes sub to it before it can write
// anything. When eager is set the task is stored before the executor runs.
//
// With a subscriber, the caller also gets its own reference to the hub,
// taken before the execution can finish and drop the hub; it must release
// it with h.hubs.release(e.upd.hub).
func (h *Handler) start(ctx context.Context, c *Call, p *prepared, sub *subscriber, eager bool) (*execution, *a2a.Task, *a2a.Error) {
	h.life.RLock()
	defer h.life.RUnlock()
	if h.closing {
		return nil, nil, a2a.NewError(a2a.CodeInternalError, "server is shutting down")
	}
	hb := h.hubs.acquire(p.msg.TaskID)
	hb.mu.Lock()
	hb.scope = c.Scope
	if hb.exec == nil {
		// No writer in this process: the cache may be stale, re-read on the
		// next write.
		hb.task = nil
	}
	if old := hb.exec; old != nil {
		// A new message on a live task supersedes the running execution.
		old.upd.revoked = true
		old.cancel(ErrSuperseded)
		hb.exec = nil
	}
	u := &updater{h: h, hub: hb, taskID: p.msg.TaskID, contextID: p.msg.ContextID, userMsg: p.msg, created: p.task != nil}
	// A blocking SendMessage's new task is named to nobody before the
	// answer, so it may stay out of the store until it is final, unless
	// its id was proposed: then the create at the executor's first write
	// is what finds the id taken, before the executor goes on to act.
	u.deferCreate = !eager && p.task == nil && sub != nil && !p.rc.Streaming && !p.proposed
	if cfg := p.req.Configuration; cfg != nil && cfg.TaskPushNotificationConfig != nil {
		pc := *cfg.TaskPushNotificationConfig
		pc.Delivery = nil // the server's to say, never the caller's
		u.pushCfg = &pc
	}
	var snapshot *a2a.Task
	ctx = context.WithoutCancel(ctx)
	if eager {
		if p.task == nil {
			t := &a2a.Task{
				ID: u.taskID, ContextID: u.contextID,
				Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: h.now()},
				History: []a2a.Message{*p.msg},
			}
			if err := hb.createLocked(ctx, t); err != nil {
				hb.mu.Unlock()
				h.hubs.release(hb)
				return nil, nil, h.storeError(ctx, "create", err)
			}
			u.created = true
			u.savePushConfig(ctx)
			snapshot = t.Clone()
		} else {
			t, err := hb.applyLocked(ctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
				if t.Status.State.Terminal() {
					return nil, a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in a terminal state", t.ID)
				}
				continueTask(t, p.msg, h.now())
				return &a2a.StreamResponse{Task: t}, nil
			})
			if err != nil {
				hb.mu.Unlock()
				h.hubs.release(hb)
				return nil, nil, h.storeError(ctx, "update", err)
			}
			snapshot = t
		}
		u.userMsg = nil
		u.convertReply = true
		u.landed = true // the task was stored for this execution
	}
	execCtx, cancel := context.WithCancelCause(ctx)
	e := &execution{id: execSeq.Add(1), cancel: cancel, upd: u}
	hb.exec = e
	if sub != nil {
		sub.execID = e.id
		hb.subscribeLocked(sub)
		h.hubs.acquire(hb.id) // the caller's reference; the hub is ours, held above
	}
	h.wg.Add(1)
	hb.mu.Unlock()
	h.workers.run(func() { h.run(execCtx, e, p.rc) })
	return e, snapshot, nil
}

func (h *Handler) sendMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest) (*a2a.SendMessageResponse, *a2a.Error) {
	p, e := h.prepareSend(ctx, c, req, false)
	if e != nil {
		return nil, e
	}
	var histLen *int32
	if cfg := p.req.Configuration; cfg != nil {
		histLen = cfg.HistoryLength
	}
	if cfg := p.req.Configuration; cfg != nil && cfg.ReturnImmediately {
		_, snap, e := h.start(ctx, c, p, nil, true)
		if e != nil {
			return nil, e
		}
		return &a2a.SendMessageResponse{Task: h.trimHistory(snap, histLen)}, nil
	}
	ex, sub, stop, e := h.follow(ctx, c, p)
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
		case <-h.shut.cutC():
		case <-ctx.Done():
			// The caller left; the execution runs on, detached.
			return nil, a2a.NewError(a2a.CodeInternalError, "the caller left")
		}
		if h.shut.isCut() {
			return nil, h.cutError(hb)
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
				return h.respondTask(ctx, c, hb, histLen)
			}
		}
		if dropped {
			return h.respondTask(ctx, c, hb, histLen)
		}
	}
}

// respondTask answers with the task as it stands now.
func (h *Handler) respondTask(ctx context.Context, c *Call, hb *hub, histLen *int32) (*a2a.SendMessageResponse, *a2a.Error) {
	hb.mu.Lock()
	t := hb.snapshotLocked()
	hb.mu.Unlock()
	if t == nil {
		var err error
		t, _, err = h.store.Get(ctx, c.Scope, hb.id)
		if err != nil {
			return nil, h.storeError(ctx, "get", err)
		}
	}
	return &a2a.SendMessageResponse{Task: h.trimHistory(t, histLen)}, nil
}

func (h *Handler) requireStreaming() *a2a.Error {
	if !h.streamOK {
		return a2a.NewError(a2a.CodeUnsupportedOperation, "this agent does not support streaming")
	}
	return nil
}

func (h *Handler) sendStreamingMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest, sink StreamSink) *a2a.Error {
	if e := h.requireStreaming(); e != nil {
		return e
	}
	p, e := h.prepareSend(ctx, c, req, true)
	if e != nil {
		return e
	}
	ex, sub, stop, e := h.follow(ctx, c, p)
	if e != nil {
		return e
	}
	defer stop()
	return h.stream(ctx, sink, sub, nil, ex.id)
}

// follow starts p's execution with the request subscribed to it; stop
// unsubscribes and drops the request's hub reference.
func (h *Handler) follow(ctx context.Context, c *Call, p *prepared) (ex *execution, sub *subscriber, stop func(), e *a2a.Error) {
	sub = newSubscriber(0)
	ex, _, e = h.start(ctx, c, p, sub, false)
	if e != nil {
		return nil, nil, nil, e
	}
	hb := ex.upd.hub
	return ex, sub, func() {
		hb.unsubscribe(sub)
		h.hubs.release(hb)
	}, nil
}

func (h *Handler) subscribeToTask(ctx context.Context, c *Call, req *a2a.SubscribeToTaskRequest, sink StreamSink) *a2a.Error {
	if e := h.requireStreaming(); e != nil {
		return e
	}
	if req.ID == "" {
		return a2a.NewError(a2a.CodeInvalidParams, "id is required")
	}
	// Check scope against the store before touching the hub, so another
	// caller's task id reveals nothing.
	if _, _, err := h.store.Get(ctx, c.Scope, req.ID); err != nil {
		return h.storeError(ctx, "get", err)
	}
	hb := h.hubs.acquire(req.ID)
	defer h.hubs.release(hb)
	hb.mu.Lock()
	hb.scope = c.Scope
	if hb.exec == nil && (h.opts.TaskFeed == nil || len(hb.subs) == 0) {
		// Re-read: another replica may have written since. A hub that
		// others already follow through the feed is up to date, and
		// re-reading it would skip its followers past frames.
		hb.task = nil
	}
	if err := hb.loadLocked(ctx); err != nil {
		hb.mu.Unlock()
		return h.storeError(ctx, "get", err)
	}
	snap, seq := hb.snapshotLocked(), hb.version
	if snap.Status.State.Terminal() {
		hb.mu.Unlock()
		return a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in terminal state %s", snap.ID, snap.Status.State)
	}
	// The task is live while an execution here writes it, or, with a
	// feed, while it is not final: an execution elsewhere may write it,
	// and if none does, crash recovery settles it in the end.
	live := hb.exec != nil || h.opts.TaskFeed != nil
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
		return h.stream(ctx, sink, nil, first, 0)
	}
	return h.stream(ctx, sink, sub, first, 0)
}

// errSinkFailed ends a stream whose sink refused a frame: the caller is
// gone or the frame could not be encoded, so nothing more can be sent.
var errSinkFailed = &a2a.Error{Code: a2a.CodeInternalError, Message: "the stream could not be written"}

// stream sends frames to sink until a final frame, the end of the followed
// execution, or the caller leaving. An execution's error, or Shutdown
// cutting the stream off, is returned for the binding to send.
func (h *Handler) stream(ctx context.Context, sink StreamSink, sub *subscriber, first *frame, execID uint64) *a2a.Error {
	send := func(f *frame) bool {
		return sink.Send(f.seq, f.resp) == nil
	}
	if first != nil {
		if !send(first) || sink.Flush() != nil {
			return errSinkFailed
		}
		if first.final() || sub == nil {
			return nil
		}
	}
	if sub == nil {
		return nil
	}
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	var buf []frame
	var dropped bool
	for {
		select {
		case <-sub.notify:
		case <-h.shut.cutC():
		case <-keepAlive.C:
			if sink.KeepAlive() != nil {
				return errSinkFailed
			}
			continue
		case <-ctx.Done():
			return nil
		}
		if h.shut.isCut() {
			return h.cutError(sub.hub)
		}
		buf, dropped = sub.take(buf)
		for i := range buf {
			f := &buf[i]
			switch {
			case f.err != nil:
				return f.err
			case f.endExec != 0:
				if f.endExec == execID || (execID == 0 && !h.hasLiveExec(sub)) {
					return flushed(sink)
				}
			case f.resp != nil:
				if !send(f) {
					return errSinkFailed
				}
				if f.final() {
					return flushed(sink)
				}
			}
		}
		if e := flushed(sink); e != nil || dropped {
			return e
		}
	}
}

// flushed flushes sink, saying whether it failed.
func flushed(sink StreamSink) *a2a.Error {
	if sink.Flush() != nil {
		return errSinkFailed
	}
	return nil
}

// hasLiveExec reports whether the task a task-following subscriber watches
// still has an execution (a newer one may have superseded the one that
// ended).
func (h *Handler) hasLiveExec(sub *subscriber) bool {
	hb := sub.hub
	if hb == nil {
		return false
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.exec != nil
}
