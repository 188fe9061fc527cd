package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2astore"
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

// Push-notification delivery. A store that keeps tasks and push configs
// together can also keep the notifications a task write owes its configs
// (an outbox), written in the same transaction as the task: then no update
// is lost between the write and its delivery, even across a crash. The
// in-memory stores do the same in memory (MemoryTaskStore.PushConfigStore),
// without surviving a restart. A deliverer (package a2a/a2apush) drains it.
//
// What a write queues, for every active config of the task: Update queues
// the task as written (a StreamResponse with "task"); Append
// queues each event as it was appended ("statusUpdate", "artifactUpdate"),
// compacted or not. PushConfigStore.Put starts a config's stream afresh:
// its pending notifications are dropped, it is made active again, and the
// task as it stands is queued first, so a receiver always starts from a
// whole task. Deleting a config drops what it had pending; deleting a task
// deletes its configs with what they had pending. Create queues nothing: a
// task being created has no configs, since Put needs the task and a
// deleted task's configs went with it.
//
// A config's notifications form one stream, delivered one at a time in the
// order they were written: only a stream's oldest pending notification (its
// head) is ever handed out, and only to one claimer at a time.

// PushOutbox hands out due notifications to deliverers. Several deliverers
// (replicas on one database) may share it: a claim leases a stream, and
// another claim sees it again only after the lease ran out.
type PushOutbox interface {
	// ClaimPush leases up to max streams whose head is due at now, for
	// lease, and returns their heads, the longest-waiting first.
	ClaimPush(ctx context.Context, now time.Time, max int, lease time.Duration) ([]*PushDelivery, error)
	// SettlePush records the outcome of delivering d. It returns an
	// error matching ErrPushLeaseLost, and changes nothing, when the
	// stream's lease is no longer d's (it ran out and another claim took
	// the stream, or the config was replaced or deleted meanwhile).
	//
	// When d was delivered and s.Continue is positive, the stream's next
	// notification, if one is pending, stays leased to the caller, now
	// for s.Continue, and is returned: the deliverer goes on with the
	// stream without a claim of its own. Otherwise it returns nil.
	SettlePush(ctx context.Context, d *PushDelivery, s PushSettlement) (*PushDelivery, error)
}

// PushQueue is a PushOutbox that says how much waits in it, for an
// operator's metrics; the outboxes of this module implement it.
type PushQueue interface {
	// PushQueued returns how many notifications wait to be delivered
	// (in flight included), over every config.
	PushQueued(ctx context.Context) (int64, error)
}

// PushDelivery is the head of one stream, leased to a deliverer.
type PushDelivery struct {
	Scope Scope
	// Config is the config as the store holds it (secrets as stored); its
	// TaskID and ID name the stream.
	Config *a2a.TaskPushNotificationConfig
	// Seq orders the stream's notifications; it grows with every one
	// queued in the store.
	Seq int64
	// Body is the StreamResponse to POST, as encoded when it was queued.
	Body []byte
	// Queued is when the notification was queued; Attempts how many times
	// delivering it has failed so far.
	Queued   time.Time
	Attempts int
	// Lease identifies the claim; SettlePush checks it.
	Lease string
}

// PushOutcome is what became of one delivery attempt.
type PushOutcome int

const (
	// PushDelivered: the receiver took the notification; the stream's
	// next one is due at once.
	PushDelivered PushOutcome = iota + 1
	// PushRetry: the attempt failed; the head is due again at Next.
	PushRetry
	// PushDead: the stream is given up. Its pending notifications are
	// dropped, and none is queued for it until its config is put again.
	PushDead
)

// PushSettlement is the outcome of one attempt, for SettlePush.
type PushSettlement struct {
	Outcome PushOutcome
	At      time.Time // when the attempt ended
	Next    time.Time // PushRetry: when the head is due again
	// Error says why the attempt failed: kept as the stream's last error,
	// which GetTaskPushNotificationConfig may show, so it must carry no
	// secret (no URL query, no credentials).
	Error string
	// Continue, for PushDelivered, asks for the stream's next
	// notification under a lease this long (see SettlePush).
	Continue time.Duration
}

// ErrPushLeaseLost is returned by SettlePush for a lease that is no longer
// the stream's.
var ErrPushLeaseLost = errors.New("a2asrv: push delivery lease lost")

// Delivery states of a config's stream.
const (
	PushStateActive = a2a.PushStateActive
	PushStateDead   = a2a.PushStateDead
)

// PushDeliveryStore reads the delivery state of a config: a PushConfigStore
// whose store keeps an outbox implements it.
type PushDeliveryStore interface {
	// PushDeliveryState returns the state of one config's stream, or
	// ErrNotFound.
	PushDeliveryState(ctx context.Context, scope Scope, taskID, id string) (*PushDeliveryState, error)
}

// PushDeliveryState is how delivery to one config stands; the push-config
// methods answer it beside the config (a2a.TaskPushNotificationConfig's
// Delivery).
type PushDeliveryState = a2a.PushDeliveryState

// MaxPushError bounds the last error a store keeps for a stream.
const MaxPushError = 512

// Normalize checks a settlement before a store records it, and cuts its
// Error to MaxPushError bytes (on a rune boundary; text a store cannot
// hold is replaced).
func (s PushSettlement) Normalize() (PushSettlement, error) {
	switch {
	case s.Outcome < PushDelivered || s.Outcome > PushDead:
		return s, fmt.Errorf("a2asrv: push settlement: outcome %d", s.Outcome)
	case s.At.IsZero():
		return s, errors.New("a2asrv: push settlement: no attempt time")
	case s.Outcome == PushRetry && s.Next.IsZero():
		return s, errors.New("a2asrv: push settlement: a retry without a time")
	case s.Continue < 0:
		return s, errors.New("a2asrv: push settlement: a negative lease")
	}
	if s.Outcome != PushDelivered {
		s.Continue = 0
	}
	if len(s.Error) > MaxPushError {
		cut := MaxPushError
		for cut > 0 && !utf8.RuneStart(s.Error[cut]) {
			cut--
		}
		s.Error = s.Error[:cut]
	}
	if !a2astore.ValidText(s.Error) {
		s.Error = "(unprintable error)"
	}
	return s, nil
}
