package a2asrv

import (
	"context"
	"errors"
	"time"

	"novaos.dev/novaos/a2a"
)

// Scope is who a request acts for. Stores enforce it on every path: a task
// created under one scope is invisible (not found) under any other.
type Scope struct {
	Tenant string
	Owner  string
}

// Version is a task's optimistic-concurrency version. It grows by one with
// every successful write, and doubles as the per-task sequence number of the
// stream frame that write produced.
type Version int64

// Store errors. Implementations return these (possibly wrapped) so callers
// can branch with errors.Is.
var (
	ErrNotFound               = errors.New("a2asrv: not found")
	ErrExists                 = errors.New("a2asrv: already exists")
	ErrConcurrentModification = errors.New("a2asrv: concurrent modification")
)

// TaskStore keeps tasks between the request that creates them and the ones
// that read, list, cancel or subscribe to them. Implementations must be safe
// for concurrent use and must check scope inside every operation.
type TaskStore interface {
	// Create stores a new task at version 1. It returns ErrExists when a
	// task with that id exists in any scope.
	Create(ctx context.Context, scope Scope, task *a2a.Task) (Version, error)
	// Get returns the task and its version, or ErrNotFound.
	Get(ctx context.Context, scope Scope, id string) (*a2a.Task, Version, error)
	// Update replaces the task (and any events appended to it) if its
	// stored version is prev, returning the new version, prev+1;
	// ErrConcurrentModification otherwise, ErrNotFound when there is no
	// such task in scope.
	Update(ctx context.Context, scope Scope, task *a2a.Task, prev Version) (Version, error)
	// Append records events written after version prev, each a write of its
	// own: the stored version becomes prev+len(events). Events are status
	// and artifact updates (the frames the writes produced); Get and List
	// return the task with them applied by [ApplyEvent], in order, and List
	// filters on the state and timestamp the last status update set. An
	// append must cost what its events weigh, not what the task weighs:
	// this is how a stream of many chunks stays linear in its output.
	//
	// compact, when not nil, is the task as it stands after the events
	// (the caller has applied them); the store keeps it as the task's body
	// in place of every event recorded so far, like Update does, but at
	// version prev+len(events). Errors are those of Update.
	Append(ctx context.Context, scope Scope, id string, prev Version, events []*a2a.StreamResponse, compact *a2a.Task) (Version, error)
	// List returns tasks in scope matching q, newest status first.
	List(ctx context.Context, scope Scope, q ListQuery) (*ListResult, error)
	// Delete removes a task; deleting a missing task is not an error.
	Delete(ctx context.Context, scope Scope, id string) error
}

// ListQuery filters and pages a TaskStore listing. Results are ordered by
// status timestamp descending, then id descending.
type ListQuery struct {
	ContextID   string
	State       a2a.TaskState // TaskStateUnspecified matches every state
	StatusAfter time.Time     // zero matches every time; otherwise timestamp >= StatusAfter
	PageSize    int           // 1..100; the store may assume the caller clamped it
	PageToken   string        // opaque, from a previous ListResult
}

// ListResult is one page of a listing. NextPageToken is "" on the last page.
type ListResult struct {
	Tasks         []*a2a.Task
	NextPageToken string
	TotalSize     int
}

// ErrBadPageToken is returned by List for a token it did not issue.
var ErrBadPageToken = errors.New("a2asrv: invalid page token")

// PushConfigStore keeps push-notification registrations. Without one, the
// four push-config methods answer PushNotificationNotSupported.
type PushConfigStore interface {
	// Put creates or replaces the config with cfg.ID under cfg.TaskID.
	Put(ctx context.Context, scope Scope, cfg *a2a.TaskPushNotificationConfig) error
	// Get returns one config or ErrNotFound.
	Get(ctx context.Context, scope Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error)
	// List returns a task's configs ordered by id, paged like ListQuery.
	List(ctx context.Context, scope Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error)
	// Delete removes a config; deleting a missing one is not an error.
	Delete(ctx context.Context, scope Scope, taskID, id string) error
}
