package a2asrv

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a"
)

type method func(h *Handler, c *call, params json.RawMessage)

var methods map[string]method

func init() {
	// Assigned in init because the methods refer back to the table's type.
	methods = map[string]method{
		a2a.MethodSendMessage:                      (*Handler).sendMessage,
		a2a.MethodSendStreamingMessage:             (*Handler).sendStreamingMessage,
		a2a.MethodSubscribeToTask:                  (*Handler).subscribeToTask,
		a2a.MethodGetTask:                          unary((*Handler).getTask),
		a2a.MethodListTasks:                        unary((*Handler).listTasks),
		a2a.MethodCancelTask:                       unary((*Handler).cancelTask),
		a2a.MethodCreateTaskPushNotificationConfig: unary((*Handler).createPushConfig),
		a2a.MethodGetTaskPushNotificationConfig:    unary((*Handler).getPushConfig),
		a2a.MethodListTaskPushNotificationConfigs:  unary((*Handler).listPushConfigs),
		a2a.MethodDeleteTaskPushNotificationConfig: unary((*Handler).deletePushConfig),
		a2a.MethodGetExtendedAgentCard:             unary((*Handler).getExtendedCard),
	}
}

// storeError maps a store failure to the protocol: not found stays not found
// (which is also what another scope's task looks like); anything else is an
// internal error whose detail is logged, not sent.
func (h *Handler) storeError(c *call, op string, err error) *a2a.Error {
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
	h.log.ErrorContext(c.r.Context(), "a2asrv: store", "op", op, "err", err)
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

func (h *Handler) prepareSend(c *call, params json.RawMessage, streaming bool) (*prepared, *a2a.Error) {
	var p prepared
	if e := a2a.DecodeParams(params, &p.req); e != nil {
		return nil, e
	}
	if e := checkParams(c, &p.req); e != nil {
		return nil, e
	}
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
	ctx := c.r.Context()
	msg := *m
	if msg.TaskID != "" {
		t, _, err := h.store.Get(ctx, c.scope, msg.TaskID)
		if err != nil {
			return nil, h.storeError(c, "get", err)
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
		msg.TaskID, p.proposed = h.newTaskID(ctx, c.scope, &p.req)
		if msg.ContextID == "" {
			msg.ContextID = h.newID()
		}
	}
	p.msg = &msg
	rc := &RequestContext{
		TaskID: msg.TaskID, ContextID: msg.ContextID, Message: p.msg, Task: p.task,
		Metadata: p.req.Metadata, Configuration: p.req.Configuration, Scope: c.scope,
		Extensions: c.active, Header: c.r.Header, Streaming: streaming,
	}
	for _, ref := range msg.ReferenceTaskIDs {
		t, _, err := h.store.Get(ctx, c.scope, ref)
		if err == nil && t.ContextID == msg.ContextID {
			rc.ReferencedTasks = append(rc.ReferencedTasks, t)
			continue
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, h.storeError(c, "get", err)
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
func (h *Handler) start(c *call, p *prepared, sub *subscriber, eager bool) (*execution, *a2a.Task, *a2a.Error) {
	h.life.RLock()
	defer h.life.RUnlock()
	if h.closing {
		return nil, nil, a2a.NewError(a2a.CodeInternalError, "server is shutting down")
	}
	hb := h.hubs.acquire(p.msg.TaskID)
	hb.mu.Lock()
	hb.scope = c.scope
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
		u.pushCfg = cfg.TaskPushNotificationConfig
	}
	var snapshot *a2a.Task
	ctx := context.WithoutCancel(c.r.Context())
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
				return nil, nil, h.storeError(c, "create", err)
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
				return nil, nil, h.storeError(c, "update", err)
			}
			snapshot = t
		}
		u.userMsg = nil
		u.convertReply = true
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

func (h *Handler) sendMessage(c *call, params json.RawMessage) {
	p, e := h.prepareSend(c, params, false)
	if e != nil {
		h.fail(c, e)
		return
	}
	var histLen *int32
	if cfg := p.req.Configuration; cfg != nil {
		histLen = cfg.HistoryLength
	}
	if cfg := p.req.Configuration; cfg != nil && cfg.ReturnImmediately {
		_, snap, e := h.start(c, p, nil, true)
		if e != nil {
			h.fail(c, e)
			return
		}
		h.writeValue(c, a2a.SendMessageResponse{Task: h.trimHistory(snap, histLen)})
		return
	}
	ex, sub, stop := h.follow(c, p)
	if ex == nil {
		return
	}
	defer stop()
	hb := ex.upd.hub
	leave := h.shut.enter()
	defer leave()
	var buf []frame
	var dropped bool
	for {
		select {
		case <-sub.notify:
		case <-h.shut.cutC():
		case <-c.r.Context().Done():
			return // the caller left; the execution runs on, detached
		}
		if h.shut.isCut() {
			h.failFlushed(c, h.cutError(hb))
			return
		}
		buf, dropped = sub.take(buf)
		for i := range buf {
			f := &buf[i]
			switch {
			case f.err != nil:
				h.fail(c, f.err)
				return
			case f.resp != nil && f.resp.Message != nil:
				h.writeValue(c, a2a.SendMessageResponse{Message: f.resp.Message})
				return
			case f.final() || f.endExec == ex.id:
				h.respondTask(c, hb, histLen)
				return
			}
		}
		if dropped {
			h.respondTask(c, hb, histLen)
			return
		}
	}
}

// respondTask answers with the task as it stands now.
func (h *Handler) respondTask(c *call, hb *hub, histLen *int32) {
	hb.mu.Lock()
	t := hb.snapshotLocked()
	hb.mu.Unlock()
	if t == nil {
		var err error
		t, _, err = h.store.Get(c.r.Context(), c.scope, hb.id)
		if err != nil {
			h.fail(c, h.storeError(c, "get", err))
			return
		}
	}
	h.writeValue(c, a2a.SendMessageResponse{Task: h.trimHistory(t, histLen)})
}

func (h *Handler) requireStreaming(c *call) bool {
	if !h.streamOK {
		h.fail(c, a2a.NewError(a2a.CodeUnsupportedOperation, "this agent does not support streaming"))
		return false
	}
	return true
}

func (h *Handler) sendStreamingMessage(c *call, params json.RawMessage) {
	if !h.requireStreaming(c) {
		return
	}
	p, e := h.prepareSend(c, params, true)
	if e != nil {
		h.fail(c, e)
		return
	}
	ex, sub, stop := h.follow(c, p)
	if ex == nil {
		return
	}
	defer stop()
	h.stream(c, sub, nil, ex.id)
}

// follow starts p's execution with the request subscribed to it; stop
// unsubscribes and drops the request's hub reference. On failure it has
// answered the call and returns a nil execution.
func (h *Handler) follow(c *call, p *prepared) (ex *execution, sub *subscriber, stop func()) {
	sub = newSubscriber(0)
	ex, _, e := h.start(c, p, sub, false)
	if e != nil {
		h.fail(c, e)
		return nil, nil, nil
	}
	hb := ex.upd.hub
	return ex, sub, func() {
		hb.unsubscribe(sub)
		h.hubs.release(hb)
	}
}

func (h *Handler) subscribeToTask(c *call, params json.RawMessage) {
	if !h.requireStreaming(c) {
		return
	}
	var req a2a.SubscribeToTaskRequest
	if e := a2a.DecodeParams(params, &req); e != nil {
		h.fail(c, e)
		return
	}
	if e := checkParams(c, &req); e != nil {
		h.fail(c, e)
		return
	}
	if req.ID == "" {
		h.fail(c, a2a.NewError(a2a.CodeInvalidParams, "id is required"))
		return
	}
	ctx := c.r.Context()
	// Check scope against the store before touching the hub, so another
	// caller's task id reveals nothing.
	if _, _, err := h.store.Get(ctx, c.scope, req.ID); err != nil {
		h.fail(c, h.storeError(c, "get", err))
		return
	}
	hb := h.hubs.acquire(req.ID)
	defer h.hubs.release(hb)
	hb.mu.Lock()
	hb.scope = c.scope
	if hb.exec == nil {
		hb.task = nil // re-read: another replica may have written since
	}
	if err := hb.loadLocked(ctx); err != nil {
		hb.mu.Unlock()
		h.fail(c, h.storeError(c, "get", err))
		return
	}
	snap, seq := hb.snapshotLocked(), hb.version
	if snap.Status.State.Terminal() {
		hb.mu.Unlock()
		h.fail(c, a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in terminal state %s", snap.ID, snap.Status.State))
		return
	}
	live := hb.exec != nil
	sub := newSubscriber(0)
	if live {
		hb.subscribeLocked(sub)
	}
	hb.mu.Unlock()
	defer hb.unsubscribe(sub)
	first := &frame{seq: seq, resp: &a2a.StreamResponse{Task: snap}}
	if !live {
		// Nothing in this process will change the task: send the
		// snapshot and close.
		h.stream(c, nil, first, 0)
		return
	}
	h.stream(c, sub, first, 0)
}

// stream writes frames as SSE until a final frame, the end of the followed
// execution, or the caller leaving. An error frame before anything was sent
// is answered as a plain JSON-RPC error.
func (h *Handler) stream(c *call, sub *subscriber, first *frame, execID uint64) {
	w := c.w
	flusher, _ := w.(http.Flusher)
	started := false
	// Frames queue up in out and go to the network in one write and flush
	// per batch: when the executor is faster than the connection, a burst
	// of chunks costs one syscall instead of one each.
	var out []byte
	flush := func() bool {
		if !started {
			started = true
			setStreamHeaders(w.Header())
			w.WriteHeader(http.StatusOK)
		}
		if len(out) > 0 {
			_, err := w.Write(out)
			out = out[:0]
			if err != nil {
				return false
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	add := func(f *frame) bool {
		var err error
		if out, err = appendFrame(out, c.id, f); err != nil {
			h.log.ErrorContext(c.r.Context(), "a2asrv: encode frame", "err", err)
			return false
		}
		return true
	}
	if first != nil {
		if !add(first) || !flush() || first.final() || sub == nil {
			return
		}
	}
	if sub == nil {
		return
	}
	leave := h.shut.enter()
	defer leave()
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	var buf []frame
	var dropped bool
	for {
		select {
		case <-sub.notify:
		case <-h.shut.cutC():
		case <-keepAlive.C:
			out = append(out, a2a.KeepAlive...)
			if !flush() {
				return
			}
			continue
		case <-c.r.Context().Done():
			return
		}
		if h.shut.isCut() {
			// Shutdown cut the stream off: end it with an error event.
			e := h.cutError(sub.hub)
			if !started {
				h.failFlushed(c, e)
				return
			}
			out = a2a.AppendEvent(out, a2a.Event{Data: a2a.AppendErrorResponse(nil, c.id, e)})
			flush()
			return
		}
		buf, dropped = sub.take(buf)
		for i := range buf {
			f := &buf[i]
			switch {
			case f.err != nil:
				if !started {
					h.fail(c, f.err)
					return
				}
				out = a2a.AppendEvent(out, a2a.Event{Data: a2a.AppendErrorResponse(nil, c.id, f.err)})
				flush()
				return
			case f.endExec != 0:
				if f.endExec == execID || (execID == 0 && !h.hasLiveExec(sub)) {
					flush()
					return
				}
			case f.resp != nil:
				if !add(f) {
					flush()
					return
				}
				if f.final() {
					flush()
					return
				}
			}
		}
		if !flush() || dropped {
			return
		}
	}
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

// appendFrame writes one SSE event holding the JSON-RPC response for f. The
// encoded JSON has no raw newlines, so it goes on a single data line.
func appendFrame(b []byte, id json.RawMessage, f *frame) ([]byte, error) {
	if f.seq > 0 {
		b = append(b, "id: "...)
		b = appendInt(b, int64(f.seq))
		b = append(b, '\n')
	}
	b = append(b, `data: {"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b, err := a2a.AppendStreamResponse(b, f.resp)
	if err != nil {
		return nil, err
	}
	return append(b, "}\n\n"...), nil
}
