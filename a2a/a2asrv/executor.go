package a2asrv

import (
	"context"
	"errors"
	"net/http"

	"novaos.dev/novaos/a2a"
)

// Executor runs an agent for one SendMessage or SendStreamingMessage call. It
// reports progress through the Updater; the server persists every update,
// fans it out to subscribers and applies the interruption rules:
//
//   - CancelTask writes TASK_STATE_CANCELED first, then cancels ctx with cause
//     [ErrCanceled]; later writes through the updater fail with [ErrRevoked].
//   - An execution that ends in its own cancellation (it returns an error
//     matching context.Canceled that the server did not cause) writes
//     nothing more: the task keeps its last state and a stream closes with
//     no terminal frame.
//   - A caller that disconnects does not cancel ctx: the execution runs on,
//     detached, and SubscribeToTask re-attaches to it.
//   - A new SendMessage naming a task whose execution is live supersedes it:
//     ctx is cancelled with cause [ErrSuperseded] and its updater revoked.
//
// An execution that returns another error, or panics, fails the task with a
// described error, unless it already reached a terminal state.
type Executor interface {
	Execute(ctx context.Context, req *RequestContext, u Updater) error
}

// ExecutorFunc adapts a function to the Executor interface.
type ExecutorFunc func(ctx context.Context, req *RequestContext, u Updater) error

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, req *RequestContext, u Updater) error {
	return f(ctx, req, u)
}

// Causes the server attaches to an execution's cancelled context.
var (
	ErrCanceled   = errors.New("a2asrv: task canceled by CancelTask")
	ErrSuperseded = errors.New("a2asrv: execution superseded by a newer message")
	ErrRevoked    = errors.New("a2asrv: updater revoked")
	ErrShutdown   = errors.New("a2asrv: server shutting down")
)

// RequestContext is everything an executor knows about the call.
type RequestContext struct {
	// TaskID and ContextID identify the task this execution writes; for a new
	// task both are server-generated unless the message carried a contextId.
	TaskID    string
	ContextID string
	// Message is the caller's message, with TaskID and ContextID filled in.
	Message *a2a.Message
	// Task is the stored task the message continues, nil for a new task.
	Task *a2a.Task
	// ReferencedTasks are the message's referenceTaskIds that resolved in the
	// same context; Unresolved lists the ones that did not.
	ReferencedTasks      []*a2a.Task
	UnresolvedReferences []string
	// Metadata is the SendMessageRequest's metadata.
	Metadata      map[string]any
	Configuration *a2a.SendMessageConfiguration
	// Scope is the caller the task belongs to.
	Scope Scope
	// Extensions are the extension URIs in force for this request.
	Extensions []string
	// Header is the HTTP request's header, for executors that read
	// traceparent or custom headers. Treat it as read-only.
	Header http.Header
	// Streaming is true for SendStreamingMessage.
	Streaming bool
	// Identity is what Options.Identify learned of the caller
	// (Call.Identity); nil when it learned nothing.
	Identity any
}

// Updater is how an executor writes its task. Every call publishes the change
// to every stream on the task; a status update is stored before it returns,
// an artifact update within Options.ArtifactFlushInterval (see the package
// doc, Write path). After the task reaches a terminal state, or after the
// updater is revoked, writes fail with ErrRevoked or an *a2a.Error.
type Updater interface {
	TaskID() string
	ContextID() string
	// Task returns a snapshot of the task as stored (nil before the first
	// write of a new task).
	Task() *a2a.Task
	// UpdateStatus sets the task's state with an optional message; the
	// message it replaces moves into the history.
	UpdateStatus(ctx context.Context, state a2a.TaskState, msg *a2a.Message, metadata map[string]any) error
	// AddArtifact adds an artifact, or with appendChunk appends its parts to
	// the artifact of the same id; lastChunk marks the artifact complete.
	AddArtifact(ctx context.Context, art a2a.Artifact, appendChunk, lastChunk bool, metadata map[string]any) error
	// Reply answers with a message instead of a task. It is allowed only
	// before any other write of a new task; no task is stored.
	Reply(ctx context.Context, msg *a2a.Message) error
}
