package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
)

// executions runs the Executor for the core: each execution on a worker,
// writing through its task's hub, which streams what it publishes to the
// calls that follow it. Shutdown waits for the running executions and then
// cuts off the rest (recover.go).
type executions struct {
	exec      Executor
	store     TaskStore
	push      PushConfigStore // stores a SendMessage's inline config; may be nil
	log       *slog.Logger
	clock     clock
	keepAlive time.Duration
	proposeID func(*a2a.SendMessageRequest) string // Options.NewTaskID

	hubs    hubs
	workers *workers
	wg      sync.WaitGroup
	// life orders starting executions against Shutdown: an execution is
	// counted in wg under the read lock, so once Shutdown has set closing
	// under the write lock, wg can only go down.
	life    sync.RWMutex
	closing bool
	shut    cutoff // the calls waiting when Shutdown's grace ends (recover.go)
}

// start launches the execution and subscribes sub to it before it can write
// anything. When eager is set the task is stored before the executor runs.
//
// With a subscriber, the caller also gets its own reference to the hub,
// taken before the execution can finish and drop the hub; it must release
// it with x.hubs.release(e.upd.hub).
func (x *executions) start(ctx context.Context, c *Call, p *prepared, sub *subscriber, eager bool) (*execution, *a2a.Task, *a2a.Error) {
	x.life.RLock()
	defer x.life.RUnlock()
	if x.closing {
		return nil, nil, a2a.NewError(a2a.CodeInternalError, "server is shutting down")
	}
	hb := x.hubs.acquire(p.msg.TaskID)
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
	u := &updater{x: x, hub: hb, taskID: p.msg.TaskID, contextID: p.msg.ContextID, userMsg: p.msg, created: p.task != nil}
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
				Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: x.clock.now()},
				History: []a2a.Message{*p.msg},
			}
			if err := hb.createLocked(ctx, t); err != nil {
				hb.mu.Unlock()
				x.hubs.release(hb)
				return nil, nil, storeError(ctx, x.log, "create", err)
			}
			u.created = true
			u.savePushConfig(ctx)
			snapshot = t.Clone()
		} else {
			t, err := hb.applyLocked(ctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
				if t.Status.State.Terminal() {
					return nil, a2a.NewError(a2a.CodeUnsupportedOperation, "task %s is in a terminal state", t.ID)
				}
				continueTask(t, p.msg, x.clock.now())
				return &a2a.StreamResponse{Task: t}, nil
			})
			if err != nil {
				hb.mu.Unlock()
				x.hubs.release(hb)
				return nil, nil, storeError(ctx, x.log, "update", err)
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
		x.hubs.acquire(hb.id) // the caller's reference; the hub is ours, held above
	}
	x.wg.Add(1)
	hb.mu.Unlock()
	x.workers.run(func() { x.run(execCtx, e, p.rc) })
	return e, snapshot, nil
}

// follow starts p's execution with the request subscribed to it; stop
// unsubscribes and drops the request's hub reference.
func (x *executions) follow(ctx context.Context, c *Call, p *prepared) (ex *execution, sub *subscriber, stop func(), e *a2a.Error) {
	sub = newSubscriber(0)
	ex, _, e = x.start(ctx, c, p, sub, false)
	if e != nil {
		return nil, nil, nil, e
	}
	hb := ex.upd.hub
	return ex, sub, func() {
		hb.unsubscribe(sub)
		x.hubs.release(hb)
	}, nil
}

// run executes e and applies the end-of-execution rules. It owns the
// execution's hub reference.
func (x *executions) run(ctx context.Context, e *execution, req *RequestContext) {
	defer x.wg.Done()
	defer x.hubs.release(e.upd.hub)
	err := x.callExecutor(ctx, req, e.upd)
	x.finish(ctx, e, err)
}

func (x *executions) callExecutor(ctx context.Context, req *RequestContext, u *updater) (err error) {
	defer func() {
		if r := recover(); r != nil {
			x.log.ErrorContext(ctx, "a2asrv: executor panicked", "task_id", u.taskID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = &panicError{value: r}
		}
	}()
	return x.exec.Execute(ctx, req, u)
}

func (x *executions) finish(ctx context.Context, e *execution, err error) {
	u, hb := e.upd, e.upd.hub
	cause := context.Cause(ctx)
	e.cancel(nil)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()

	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.exec == e {
		hb.exec = nil
	}
	revoked := u.revoked
	u.revoked = true
	defer hb.publishLocked(frame{endExec: e.id})
	// Before the end is announced, whatever the execution wrote is in
	// the store: pending artifact updates, or a task held back by a
	// deferred create.
	defer x.settleWritesLocked(sctx, u)

	// Interrupted by CancelTask, a newer message or shutdown: whoever
	// interrupted owns the outcome.
	if errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrSuperseded) || errors.Is(cause, ErrShutdown) {
		return
	}
	if err == nil || revoked || u.replied {
		if err == nil && !u.created && !u.replied && !revoked {
			x.recordUntouched(sctx, u)
		}
		return
	}
	// Rule 2: the execution ended in a cancellation nobody asked for; the
	// task keeps its last state.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !u.created {
			x.recordUntouched(sctx, u)
		}
		return
	}
	var protoErr *a2a.Error
	if errors.As(err, &protoErr) && !u.wrote {
		hb.publishLocked(frame{err: protoErr})
		return
	}
	x.log.WarnContext(ctx, "a2asrv: execution failed", "task_id", u.taskID, "err", err)
	msg := &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(describeFailure(err))}}
	u.revoked = false
	if werr := u.writeLockedFailed(sctx, msg); werr != nil && !errors.Is(werr, ErrRevoked) {
		x.log.ErrorContext(ctx, "a2asrv: record failed task", "task_id", u.taskID, "err", werr)
	}
	u.revoked = true
}

// settleWritesLocked stores what an ending execution left in the hub only;
// the caller holds the hub lock.
func (x *executions) settleWritesLocked(ctx context.Context, u *updater) {
	hb := u.hub
	var err error
	if hb.heldLocked() {
		if err = hb.releaseHeldLocked(ctx); err == nil {
			u.savePushConfig(ctx)
		}
	} else {
		err = hb.flushLocked(ctx)
	}
	if err != nil {
		x.log.ErrorContext(ctx, "a2asrv: store the execution's last writes", "task_id", u.taskID, "err", err)
	}
}

// recordUntouched stores a task the executor never wrote, so the caller's
// task id stays answerable; the caller holds the hub lock.
func (x *executions) recordUntouched(ctx context.Context, u *updater) {
	if u.userMsg == nil || u.created {
		return
	}
	t := &a2a.Task{
		ID: u.taskID, ContextID: u.contextID,
		Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: x.clock.now()},
		History: []a2a.Message{*u.userMsg},
	}
	if err := u.hub.createLocked(ctx, t); err != nil {
		x.log.ErrorContext(ctx, "a2asrv: record task", "task_id", u.taskID, "err", err)
		return
	}
	u.created = true
}

// errSinkFailed ends a stream whose sink refused a frame: the caller is
// gone or the frame could not be encoded, so nothing more can be sent.
var errSinkFailed = &a2a.Error{Code: a2a.CodeInternalError, Message: "the stream could not be written"}

// stream sends frames to sink until a final frame, the end of the followed
// execution, or the caller leaving. An execution's error, or Shutdown
// cutting the stream off, is returned for the binding to send.
func (x *executions) stream(ctx context.Context, sink StreamSink, sub *subscriber, first *frame, execID uint64) *a2a.Error {
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
	keepAlive := time.NewTicker(x.keepAlive)
	defer keepAlive.Stop()
	var buf []frame
	var dropped bool
	for {
		select {
		case <-sub.notify:
		case <-x.shut.cutC():
		case <-keepAlive.C:
			if sink.KeepAlive() != nil {
				return errSinkFailed
			}
			continue
		case <-ctx.Done():
			return nil
		}
		if x.shut.isCut() {
			return x.cutError(sub.hub)
		}
		buf, dropped = sub.take(buf)
		for i := range buf {
			f := &buf[i]
			switch {
			case f.err != nil:
				return f.err
			case f.endExec != 0:
				if f.endExec == execID || (execID == 0 && !liveExec(sub)) {
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

// liveExec reports whether the task a task-following subscriber watches
// still has an execution (a newer one may have superseded the one that
// ended).
func liveExec(sub *subscriber) bool {
	hb := sub.hub
	if hb == nil {
		return false
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.exec != nil
}

// shutdown is Handler.Shutdown: it refuses new executions, waits for the
// running ones until ctx is done, then cuts off the rest.
func (x *executions) shutdown(ctx context.Context) error {
	x.life.Lock()
	x.closing = true
	x.life.Unlock()
	defer x.workers.stop()
	done := make(chan struct{})
	go func() {
		x.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	x.cutExecutions()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return ctx.Err()
}
