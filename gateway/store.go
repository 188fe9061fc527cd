package gateway

import (
	"context"
	"errors"
	"time"
)

// Errors of a Store. Stores wrap them with context; callers branch with
// errors.Is.
var (
	// ErrNotFound: no such instance or run (in the tenant asked about).
	ErrNotFound = errors.New("gateway: not found")
	// ErrConflict: a write named a version that is no longer current.
	ErrConflict = errors.New("gateway: version conflict")
	// ErrExists: an instance or run with that id, or an instance with
	// that name in the tenant, exists already.
	ErrExists = errors.New("gateway: already exists")
)

// Store keeps instances, runs and their events. Every method is safe for
// concurrent use, by several processes where the database is shared.
type Store interface {
	// CreateInstance stores a new instance with Version 1 and both times
	// set to now.
	CreateInstance(ctx context.Context, in Instance, now time.Time) (Instance, error)
	// GetInstance returns an instance of the tenant.
	GetInstance(ctx context.Context, tenantID, id string) (Instance, error)
	// ListInstances returns a tenant's instances by name.
	ListInstances(ctx context.Context, f InstanceFilter) ([]Instance, error)
	// UpdateInstance replaces the instance whose stored version is
	// expectVersion (ErrConflict if it is not), incrementing the version.
	UpdateInstance(ctx context.Context, in Instance, expectVersion int64, now time.Time) (Instance, error)
	// DeleteInstance removes an instance; its runs stay.
	DeleteInstance(ctx context.Context, tenantID, id string) error

	// CreateRun stores w.Run (ExpectVersion must be 0) with Version 1 and
	// appends w.Events from sequence 1, in one transaction.
	CreateRun(ctx context.Context, w RunWrite) (Run, []Event, error)
	// GetRun returns a run; tenantID "" finds it in any tenant.
	GetRun(ctx context.Context, tenantID, id string) (Run, error)
	// ListRuns returns runs newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// WriteRun replaces the run whose stored version is w.ExpectVersion
	// and appends w.Events after its last event, in one transaction: the
	// events are numbered on from the stored LastSequence, which becomes
	// the last new one. It returns the run and the events as stored.
	WriteRun(ctx context.Context, w RunWrite) (Run, []Event, error)
	// Events returns up to limit of a run's events with a sequence
	// greater than after, in order, each with the trace context it was
	// appended with.
	Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error)

	// CountRuns returns how many runs are in each status, over every
	// tenant; a status no run is in is absent. An operator's metrics read
	// it at every scrape.
	CountRuns(ctx context.Context) (map[Status]int64, error)

	// ClaimRuns leases to owner, until until, up to limit runs that are
	// QUEUED or RUNNING, whose lease lapsed (or that have none), whose
	// NotBefore has passed at now and that their debugger does not hold
	// (Run.Debug.Holds), oldest first; each claim increments the run's
	// version. Two owners never hold one run's lease at once.
	ClaimRuns(ctx context.Context, owner string, now, until time.Time, limit int) ([]Run, error)

	// WatchEvents calls fn, until ctx ends, after every commit that
	// appends events to a run — in this process or, where the database
	// is shared, in another — with the run's id and its last sequence.
	// fn("", 0) says notifications may have been lost (a reconnection):
	// every watcher should read the store again. fn must not block.
	WatchEvents(ctx context.Context, fn func(runID string, last int64)) error
}

// RunWrite is one durable step of a run: its new record and the events
// recorded with it.
type RunWrite struct {
	Run Run
	// ExpectVersion is the stored version the write replaces; 0 creates.
	ExpectVersion int64
	// Events are appended in order; their RunID and Sequence are set by
	// the store, At defaults to Now.
	Events []Event
	// Now is the write's time: UpdatedAt (and CreatedAt on creation).
	Now time.Time
}

// InstanceFilter selects instances.
type InstanceFilter struct {
	TenantID string // required
	// AfterName continues a listing after this name.
	AfterName string
	Limit     int // default and maximum 500
}

// RunFilter selects runs, newest first.
type RunFilter struct {
	TenantID   string // empty: every tenant
	UserID     string // only runs this user started
	InstanceID string
	// ThreadID selects the runs of one conversation thread.
	ThreadID string
	Statuses []Status
	// AfterCreated and AfterID continue a listing after the last run of
	// the previous page.
	AfterCreated time.Time
	AfterID      string
	Limit        int // default and maximum 500
}

// MaxPage is the longest page a Store returns.
const MaxPage = 500
