package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	x   *executions
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
		Status:   a2a.TaskStatus{State: state, Message: msg, Timestamp: u.x.clock.now()},
		Metadata: metadata,
	}})
}

func (u *updater) AddArtifact(ctx context.Context, art a2a.Artifact, appendChunk, lastChunk bool, metadata map[string]any) error {
	if art.ArtifactID == "" {
		art.ArtifactID = u.x.clock.newID()
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
		m.MessageID = u.x.clock.newID()
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
			Status:  a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: u.x.clock.now()},
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
			continueTask(t, u.userMsg, u.x.clock.now())
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
	if u.pushCfg == nil || u.x.push == nil {
		return
	}
	cfg := *u.pushCfg
	cfg.TaskID = u.taskID
	if cfg.ID == "" {
		cfg.ID = u.x.clock.newID()
	}
	if err := u.x.push.Put(ctx, u.hub.scope, &cfg); err != nil {
		u.x.log.ErrorContext(ctx, "a2asrv: save inline push config", "task_id", u.taskID, "err", err)
	}
}

type panicError struct {
	value any
}

func (p *panicError) Error() string { return fmt.Sprintf("executor panicked: %v", p.value) }

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
		Status: a2a.TaskStatus{State: a2a.TaskStateFailed, Message: msg, Timestamp: u.x.clock.now()},
	}})
}

// logger returns a discard logger when none is configured.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
