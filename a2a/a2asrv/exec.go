package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/a2a"
)

var execSeq atomic.Uint64

// execution is one running Executor call.
type execution struct {
	id     uint64
	cancel context.CancelCauseFunc
	upd    *updater
}

// updater is the Updater handed to one execution. Its state is guarded by
// the hub's mutex, which every write takes, so revocation by CancelTask or a
// superseding message is atomic with respect to the writes.
type updater struct {
	h   *Handler
	hub *hub

	taskID, contextID string
	userMsg           *a2a.Message // appended to history by the first write
	pushCfg           *a2a.TaskPushNotificationConfig

	created bool // the task exists in the store
	wrote   bool // this execution has written (or replied)
	replied bool
	// convertReply turns Reply into completion: the task was created before
	// the executor ran (returnImmediately), so a message-only answer is no
	// longer possible.
	convertReply bool
	// deferCreate keeps a new task in the hub until it is final: nobody
	// but the blocking caller can know its id before the answer.
	deferCreate bool
	revoked     bool
	// landed: a write of this execution has been applied. Only then can
	// a write by another process overtake it (feed.go); what others
	// wrote before, its first write builds on.
	landed bool
}

var _ Updater = (*updater)(nil)

func (u *updater) TaskID() string    { return u.taskID }
func (u *updater) ContextID() string { return u.contextID }

func (u *updater) Task() *a2a.Task {
	u.hub.mu.Lock()
	defer u.hub.mu.Unlock()
	if !u.created {
		return nil
	}
	return u.hub.snapshotLocked()
}

func (u *updater) UpdateStatus(ctx context.Context, state a2a.TaskState, msg *a2a.Message, metadata map[string]any) error {
	if state == a2a.TaskStateUnspecified {
		return fmt.Errorf("a2asrv: update status: state is unspecified")
	}
	msg = u.agentMessage(msg)
	return u.write(ctx, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: u.taskID, ContextID: u.contextID,
		Status:   a2a.TaskStatus{State: state, Message: msg, Timestamp: u.h.now()},
		Metadata: metadata,
	}})
}

func (u *updater) AddArtifact(ctx context.Context, art a2a.Artifact, appendChunk, lastChunk bool, metadata map[string]any) error {
	if art.ArtifactID == "" {
		art.ArtifactID = u.h.newID()
	}
	if len(art.Parts) == 0 {
		return fmt.Errorf("a2asrv: add artifact %s: no parts", art.ArtifactID)
	}
	return u.write(ctx, &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
		TaskID: u.taskID, ContextID: u.contextID, Artifact: art,
		Append: appendChunk, LastChunk: lastChunk, Metadata: metadata,
	}})
}

func (u *updater) Reply(ctx context.Context, msg *a2a.Message) error {
	msg = u.agentMessage(msg)
	if msg == nil {
		return fmt.Errorf("a2asrv: reply: message is nil")
	}
	if !u.convertReply {
		// No task is stored for a message-only answer, so the message must
		// not point at one.
		msg.TaskID = ""
	}
	u.hub.mu.Lock()
	convert := u.convertReply
	if !convert {
		defer u.hub.mu.Unlock()
		if u.revoked {
			return ErrRevoked
		}
		if u.wrote || u.created {
			return fmt.Errorf("a2asrv: reply: the task already has updates; use UpdateStatus")
		}
		u.wrote, u.replied, u.revoked = true, true, true
		u.hub.publishLocked(frame{resp: &a2a.StreamResponse{Message: msg}})
		return nil
	}
	u.hub.mu.Unlock()
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, msg, nil)
}

// agentMessage fills in the ids and role of a message the executor wrote.
func (u *updater) agentMessage(msg *a2a.Message) *a2a.Message {
	if msg == nil {
		return nil
	}
	m := *msg
	if m.MessageID == "" {
		m.MessageID = u.h.newID()
	}
	if m.Role == a2a.RoleUnspecified {
		m.Role = a2a.RoleAgent
	}
	m.TaskID, m.ContextID = u.taskID, u.contextID
	return &m
}

// write applies one event (a status or artifact update), creating the
// task on the first write. Status updates are stored before they are
// published; artifact updates are published at once and stored within the
// flush interval, or with the next status update, whichever comes first.
func (u *updater) write(ctx context.Context, ev *a2a.StreamResponse) error {
	u.hub.mu.Lock()
	defer u.hub.mu.Unlock()
	return u.writeLocked(ctx, ev)
}

// writeLocked is write with the hub lock held.
func (u *updater) writeLocked(ctx context.Context, ev *a2a.StreamResponse) error {
	hb := u.hub
	if u.revoked {
		return ErrRevoked
	}
	// Store calls must finish even if the executor's context is cancelled
	// right now: a half-applied write is worse than a late one.
	sctx := context.WithoutCancel(ctx)
	first := !u.wrote
	u.wrote = true
	if !u.created {
		t := &a2a.Task{
			ID: u.taskID, ContextID: u.contextID,
			Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: u.h.now()},
			History: []a2a.Message{*u.userMsg},
		}
		if err := ApplyEvent(t, ev); err != nil {
			return err
		}
		u.created = true
		if u.deferCreate && !t.Status.State.Final() {
			hb.holdLocked(t)
			hb.publishLocked(frame{resp: ev})
			return nil
		}
		if err := hb.createLocked(sctx, t); err != nil {
			u.created = false
			if errors.Is(err, ErrExists) {
				// Another scope's task has the id proposed for this run
				// (Options.NewTaskID). Nothing was written: the caller is
				// answered with this error, not a task.
				u.wrote = !first
				return taskIDTaken()
			}
			return fmt.Errorf("a2asrv: create task: %w", err)
		}
		u.savePushConfig(sctx)
		u.landedLocked()
		return nil
	}
	if hb.heldLocked() {
		if err := hb.appendLocked(sctx, ev, false); err != nil {
			return err
		}
		if !hb.task.Status.State.Final() && time.Since(hb.heldSince) < maxHold {
			return nil
		}
		if err := hb.releaseHeldLocked(sctx); err != nil {
			return fmt.Errorf("a2asrv: create task: %w", err)
		}
		u.savePushConfig(sctx)
		u.landedLocked()
		return nil
	}
	if first && u.userMsg != nil {
		// The first write of a continuation is sent as the whole task, so
		// a stream about it starts with a Task frame like a new task's
		// does. userMsg is nil when the task was stored before the
		// executor ran (returnImmediately): its Task frame is already out.
		_, err := hb.applyLocked(sctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
			if t.Status.State.Terminal() {
				u.revoked = true
				return nil, ErrRevoked
			}
			continueTask(t, u.userMsg, u.h.now())
			if err := ApplyEvent(t, ev); err != nil {
				return nil, err
			}
			return &a2a.StreamResponse{Task: t}, nil
		})
		if err == nil {
			u.landedLocked()
		}
		return err
	}
	durable := ev.ArtifactUpdate == nil
	for i := 0; ; i++ {
		if err := hb.loadLocked(sctx); err != nil {
			return err
		}
		if u.revoked {
			return ErrRevoked // another process took the task over
		}
		if hb.task.Status.State.Terminal() {
			// Another process (CancelTask on a replica) ended the task.
			u.revoked = true
			return ErrRevoked
		}
		err := hb.appendLocked(sctx, ev, durable)
		if errors.Is(err, ErrConcurrentModification) && i < conflictRetries {
			continue // the cache was dropped: re-read and try again
		}
		if err == nil {
			u.landedLocked()
		}
		return err
	}
}

// landedLocked records that a write of the updater reached the hub's task
// (and the store, or its pending events), and ends the updater's writes
// once the task is final.
func (u *updater) landedLocked() {
	u.landed = true
	if t := u.hub.task; t != nil && t.Status.State.Terminal() {
		u.revoked = true
	}
}

// continueTask records msg, the next message of a live task. A task that
// was waiting for input or authorization has got it and is working again:
// left interrupted, its first frame would read as final, and a blocking
// call or a stream would end before the agent answered.
func continueTask(t *a2a.Task, msg *a2a.Message, now time.Time) {
	retireStatusMessage(t)
	t.History = append(t.History, *msg)
	if t.Status.State.Interrupted() {
		t.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: now}
	}
}

func (u *updater) savePushConfig(ctx context.Context) {
	if u.pushCfg == nil || u.h.opts.PushConfigStore == nil {
		return
	}
	cfg := *u.pushCfg
	cfg.TaskID = u.taskID
	if cfg.ID == "" {
		cfg.ID = u.h.newID()
	}
	if err := u.h.opts.PushConfigStore.Put(ctx, u.hub.scope, &cfg); err != nil {
		u.h.log.ErrorContext(ctx, "a2asrv: save inline push config", "task_id", u.taskID, "err", err)
	}
}

// run executes e and applies the end-of-execution rules. It owns the
// execution's hub reference.
func (h *Handler) run(ctx context.Context, e *execution, req *RequestContext) {
	defer h.wg.Done()
	defer h.hubs.release(e.upd.hub)
	err := h.callExecutor(ctx, req, e.upd)
	h.finish(ctx, e, err)
}

type panicError struct {
	value any
}

func (p *panicError) Error() string { return fmt.Sprintf("executor panicked: %v", p.value) }

func (h *Handler) callExecutor(ctx context.Context, req *RequestContext, u *updater) (err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.ErrorContext(ctx, "a2asrv: executor panicked", "task_id", u.taskID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = &panicError{value: r}
		}
	}()
	return h.exec.Execute(ctx, req, u)
}

func (h *Handler) finish(ctx context.Context, e *execution, err error) {
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
	defer h.settleWritesLocked(sctx, u)

	// Interrupted by CancelTask, a newer message or shutdown: whoever
	// interrupted owns the outcome.
	if errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrSuperseded) || errors.Is(cause, ErrShutdown) {
		return
	}
	if err == nil || revoked || u.replied {
		if err == nil && !u.created && !u.replied && !revoked {
			h.recordUntouched(sctx, u)
		}
		return
	}
	// Rule 2: the execution ended in a cancellation nobody asked for; the
	// task keeps its last state.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !u.created {
			h.recordUntouched(sctx, u)
		}
		return
	}
	var protoErr *a2a.Error
	if errors.As(err, &protoErr) && !u.wrote {
		hb.publishLocked(frame{err: protoErr})
		return
	}
	h.log.WarnContext(ctx, "a2asrv: execution failed", "task_id", u.taskID, "err", err)
	msg := &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(describeFailure(err))}}
	u.revoked = false
	if werr := u.writeLockedFailed(sctx, msg); werr != nil && !errors.Is(werr, ErrRevoked) {
		h.log.ErrorContext(ctx, "a2asrv: record failed task", "task_id", u.taskID, "err", werr)
	}
	u.revoked = true
}

func describeFailure(err error) string {
	var p *panicError
	if errors.As(err, &p) {
		return "internal error: the agent panicked"
	}
	return "execution failed: " + err.Error()
}

// writeLockedFailed records FAILED; the caller holds the hub lock.
func (u *updater) writeLockedFailed(ctx context.Context, msg *a2a.Message) error {
	msg = u.agentMessage(msg)
	return u.writeLocked(ctx, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: u.taskID, ContextID: u.contextID,
		Status: a2a.TaskStatus{State: a2a.TaskStateFailed, Message: msg, Timestamp: u.h.now()},
	}})
}

// settleWritesLocked stores what an ending execution left in the hub only;
// the caller holds the hub lock.
func (h *Handler) settleWritesLocked(ctx context.Context, u *updater) {
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
		h.log.ErrorContext(ctx, "a2asrv: store the execution's last writes", "task_id", u.taskID, "err", err)
	}
}

// recordUntouched stores a task the executor never wrote, so the caller's
// task id stays answerable; the caller holds the hub lock.
func (h *Handler) recordUntouched(ctx context.Context, u *updater) {
	if u.userMsg == nil || u.created {
		return
	}
	t := &a2a.Task{
		ID: u.taskID, ContextID: u.contextID,
		Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: h.now()},
		History: []a2a.Message{*u.userMsg},
	}
	if err := u.hub.createLocked(ctx, t); err != nil {
		h.log.ErrorContext(ctx, "a2asrv: record task", "task_id", u.taskID, "err", err)
		return
	}
	u.created = true
}

// logger returns a discard logger when none is configured.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
