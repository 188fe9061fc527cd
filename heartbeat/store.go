package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of a Store. Stores wrap them with context; callers branch with
// errors.Is.
var (
	ErrNotFound = errors.New("heartbeat: not found")
	// ErrExists: the instance has a config already (or the id is taken).
	ErrExists = errors.New("heartbeat: already exists")
	// ErrConflict: a claim or a settlement lost to another writer: the
	// config moved on, was paused, or the fire is no longer this owner's.
	ErrConflict = errors.New("heartbeat: conflict")
	// ErrInvalid: a record no store keeps (a required field missing, text
	// with NUL or invalid UTF-8, a value out of bounds).
	ErrInvalid = errors.New("heartbeat: invalid record")
)

// Outcome is what became of one tick of a schedule.
type Outcome string

const (
	// OutcomeClaimed: a server took the tick and is starting its run.
	OutcomeClaimed Outcome = "claimed"
	// OutcomeFired: the tick's run was started.
	OutcomeFired Outcome = "fired"
	// OutcomeSkippedBudget: the day's budget was spent; no run.
	OutcomeSkippedBudget Outcome = "skipped_budget"
	// OutcomeFailed: the run could not be started (Reason says why).
	OutcomeFailed Outcome = "failed"
)

// Valid reports whether o is one of the four outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeClaimed, OutcomeFired, OutcomeSkippedBudget, OutcomeFailed:
		return true
	}
	return false
}

// Creator is who created a config: its scheduled runs are started as them.
type Creator struct {
	Subject string `json:"subject,omitempty"`
	UserID  string `json:"user_id,omitempty"`
	// Service is set for the operator and service accounts.
	Service bool `json:"service,omitempty"`
}

// Record is a stored heartbeat config.
type Record struct {
	ID             string
	TenantID       string
	AgentID        string
	InstanceID     string
	Status         Status
	CronExpression string
	Timezone       string
	TaskContent    string
	AgentImage     string
	AgentImageTag  string
	Budget         Budget
	Creator        Creator
	// NextRunAt is the next tick to handle, zero while paused.
	NextRunAt time.Time
	// LastRunAt is the latest tick that was claimed to start a run.
	LastRunAt time.Time
	Missed    Missed

	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Fire is the record of one tick a server handled.
type Fire struct {
	TenantID string
	ConfigID string
	// Tick is the time the schedule named; with ConfigID it is the
	// fire's key, unique in a store.
	Tick    time.Time
	Outcome Outcome
	RunID   string
	Reason  string
	// Owner holds a claimed fire until LeaseUntil; a fire whose lease
	// lapsed is taken over (Stale, Reclaim). Attempts counts the owners.
	Owner      string
	LeaseUntil time.Time
	Attempts   int
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Info is the fire as the API shows it.
func (f *Fire) Info() *FireInfo {
	return &FireInfo{ScheduledAt: f.Tick, Outcome: f.Outcome, RunID: f.RunID, Reason: f.Reason}
}

// Claim is a server's step on a due config: it moves the config's next
// run from Expect to Next and records what became of the ticks in
// between, all at once, and only if the config is still active and at
// Expect. Of servers racing for one tick, exactly one claim succeeds.
type Claim struct {
	TenantID, ConfigID string
	// Expect is the config's NextRunAt the claim was worked out from.
	Expect time.Time
	// Next is the config's NextRunAt after the claim.
	Next time.Time
	// Tick is the tick handled (zero: none, every due tick was missed).
	// It is recorded claimed, for Owner until LeaseUntil, unless Skip
	// says otherwise or the budget is spent.
	Tick time.Time
	// Skip, when set, records Tick as skipped_budget with this reason.
	Skip string
	// MaxRuns is the day's run budget: when the config's fires claimed
	// or fired with a tick at or after Since number MaxRuns or more, Tick
	// is recorded skipped_budget instead. 0 checks nothing.
	MaxRuns int
	Since   time.Time
	// Missed are the ticks passed over before Tick; a Count of 0 means
	// none. The record's total grows by Count and its latest gap becomes
	// this one.
	Missed     Missed
	Owner      string
	LeaseUntil time.Time
	Now        time.Time
}

// Settlement ends a claimed fire: Outcome is fired or failed.
type Settlement struct {
	TenantID, ConfigID string
	Tick               time.Time
	// Owner must hold the fire (ErrConflict otherwise).
	Owner   string
	Outcome Outcome
	RunID   string
	Reason  string
	Now     time.Time
}

// FireFilter selects a config's fires.
type FireFilter struct {
	// Since keeps the fires whose tick is at or after it.
	Since time.Time
	// Newest lists newest first (default oldest first).
	Newest bool
	// Limit bounds the list (default and maximum MaxFirePage).
	Limit int
}

// MaxFirePage is the longest list of fires a Store returns.
const MaxFirePage = 2000

// Store keeps heartbeat configs and their fires. store/sqlite and
// store/postgres implement it, store/storetest is its contract suite,
// and NewMemoryStore keeps them in process. Every method is safe for
// concurrent use, by several processes where the database is shared.
type Store interface {
	// Create stores r with Version 1 and both times set to r.CreatedAt;
	// ErrExists when r.ID is taken or the tenant's instance has a config
	// already.
	Create(ctx context.Context, r Record) (Record, error)
	// Get returns a config of the tenant.
	Get(ctx context.Context, tenantID, id string) (Record, error)
	// List returns the tenant's configs of the instance ("": of every
	// instance), oldest first.
	List(ctx context.Context, tenantID, instanceID string) ([]Record, error)
	// SetStatus sets the config's status and NextRunAt (zero while
	// paused) unless its status is st already; changed says whether it
	// did. The version grows with every change.
	SetStatus(ctx context.Context, tenantID, id string, st Status, next, now time.Time) (r Record, changed bool, err error)
	// Delete removes a config and its fires.
	Delete(ctx context.Context, tenantID, id string) error
	// Count returns how many configs of every tenant have each status.
	Count(ctx context.Context) (map[Status]int64, error)

	// Due returns up to limit active configs, of any tenant, whose
	// NextRunAt is at or before now, earliest first.
	Due(ctx context.Context, now time.Time, limit int) ([]Record, error)
	// NextRun is the earliest NextRunAt of the active configs; false
	// when there is none.
	NextRun(ctx context.Context) (time.Time, bool, error)
	// Claim applies c (see Claim) and returns the fire it recorded (zero
	// when c.Tick is). ErrConflict when the config is paused or no longer
	// at c.Expect; ErrNotFound when it is gone.
	Claim(ctx context.Context, c Claim) (Fire, error)
	// Settle records the outcome of a claimed fire.
	Settle(ctx context.Context, s Settlement) error
	// Stale returns up to limit claimed fires whose lease lapsed by now,
	// oldest tick first.
	Stale(ctx context.Context, now time.Time, limit int) ([]Fire, error)
	// Reclaim takes over a claimed fire whose lease lapsed by now, for
	// owner until until, and counts an attempt; ErrConflict when it is
	// not (any more) claimed with a lapsed lease.
	Reclaim(ctx context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (Fire, error)
	// Fires lists the config's fires.
	Fires(ctx context.Context, tenantID, configID string, f FireFilter) ([]Fire, error)
}

// CheckRecord refuses a record no store keeps, with an error matching
// ErrInvalid: every Store calls it before it writes.
func CheckRecord(r *Record) error {
	var errs []string
	for name, v := range map[string]string{"id": r.ID, "tenant": r.TenantID, "agent": r.AgentID, "instance": r.InstanceID} {
		if v == "" || len(v) > MaxIDBytes || !Text(v) {
			errs = append(errs, name+" must be 1 to "+fmt.Sprint(MaxIDBytes)+" printable bytes")
		}
	}
	if !r.Status.Valid() {
		errs = append(errs, "status must be active or paused")
	}
	if r.Status == StatusActive && r.NextRunAt.IsZero() {
		errs = append(errs, "an active config needs its next run")
	}
	for name, v := range map[string]string{"cron expression": r.CronExpression, "time zone": r.Timezone,
		"agent image": r.AgentImage, "agent image tag": r.AgentImageTag, "creator subject": r.Creator.Subject, "creator user": r.Creator.UserID} {
		if len(v) > MaxImageBytes || !Text(v) {
			errs = append(errs, name+" must be printable text of at most "+fmt.Sprint(MaxImageBytes)+" bytes")
		}
	}
	if r.CronExpression == "" || r.Timezone == "" {
		errs = append(errs, "the cron expression and the time zone are required")
	}
	if !utf8.ValidString(r.TaskContent) || strings.ContainsRune(r.TaskContent, 0) || utf8.RuneCountInString(r.TaskContent) > MaxTaskContentChars {
		errs = append(errs, "task content must be UTF-8 without NUL, at most "+fmt.Sprint(MaxTaskContentChars)+" characters")
	}
	for _, fe := range r.Budget.Problems("budget ") {
		errs = append(errs, fe.Field+": "+fe.Message)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
}

// CheckReason refuses a fire's reason no store keeps.
func CheckReason(reason string) error {
	if len(reason) > MaxReasonBytes || !utf8.ValidString(reason) || strings.ContainsRune(reason, 0) {
		return fmt.Errorf("%w: a reason must be UTF-8 without NUL, at most %d bytes", ErrInvalid, MaxReasonBytes)
	}
	return nil
}

// CheckStatus refuses a change to status st with next run next that no
// store makes, and returns the next run the config keeps: none when st
// is paused.
func CheckStatus(st Status, next time.Time) (time.Time, error) {
	if !st.Valid() || (st == StatusActive && next.IsZero()) {
		return time.Time{}, fmt.Errorf("%w: status %q with next run %v", ErrInvalid, st, next)
	}
	if st == StatusPaused {
		return time.Time{}, nil
	}
	return next, nil
}

// CheckSettlement refuses a settlement no store keeps: its outcome is
// neither fired nor failed, or its reason is not one CheckReason passes.
func CheckSettlement(s *Settlement) error {
	if s.Outcome != OutcomeFired && s.Outcome != OutcomeFailed {
		return fmt.Errorf("%w: outcome %q", ErrInvalid, s.Outcome)
	}
	return CheckReason(s.Reason)
}

// CheckClaim refuses, with ErrConflict, a claim on r that r has moved
// past: r is no longer active, or no longer due at cl.Expect. A store
// calls it on the config as it holds it, in the step that moves it on.
func CheckClaim(r *Record, cl *Claim) error {
	if r.Status != StatusActive || !r.NextRunAt.Equal(Stored(cl.Expect)) {
		return fmt.Errorf("%w: the config is %s at %v", ErrConflict, r.Status, r.NextRunAt)
	}
	return nil
}

// ClipReason shortens a reason to what a store keeps, on a character
// boundary.
func ClipReason(reason string) string {
	reason = strings.ToValidUTF8(strings.ReplaceAll(reason, "\x00", ""), "\uFFFD")
	if len(reason) <= MaxReasonBytes {
		return reason
	}
	cut := MaxReasonBytes - len("…")
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + "…"
}

// FireLimit is f.Limit when it is in (0, MaxFirePage], else MaxFirePage.
func FireLimit(limit int) int {
	if limit <= 0 || limit > MaxFirePage {
		return MaxFirePage
	}
	return limit
}

// Config is the record as the API shows it, with last as its latest fire
// (nil: none yet).
func (r *Record) Config(last *Fire) Config {
	b := r.Budget
	c := Config{
		ConfigID: r.ID, InstanceID: r.InstanceID, AgentID: r.AgentID, Status: r.Status, Budget: &b,
		Triggers: []Trigger{{Type: TriggerCron, CronExpression: r.CronExpression, Timezone: r.Timezone,
			TaskContent: r.TaskContent, AgentImage: r.AgentImage, AgentImageTag: r.AgentImageTag}},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	s := Schedule{ScheduleID: ScheduleID(r.ID), TemporalScheduleID: ScheduleID(r.ID), Status: r.Status,
		CronExpression: r.CronExpression, Timezone: r.Timezone, NextRunAt: timePtr(r.NextRunAt), LastRunAt: timePtr(r.LastRunAt)}
	if last != nil {
		s.LastFire = last.Info()
	}
	if r.Missed.Total > 0 {
		m := r.Missed
		s.Missed = &m
	}
	c.Schedules = []Schedule{s}
	return c
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
