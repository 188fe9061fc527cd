package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/gateway"
)

// The execution gateway's records in the column layout both SQL stores
// share (their 0012_gateway migrations). What a store filters, orders or
// claims by is a column of its own; everything else about an instance or a
// run is its JSON encoding in body, so that a field the wire model gains
// is kept without a migration. The columns win over body when both hold a
// field. Bytes that must come back exactly as given (sealed secrets and
// headers, a run's pause and pending input, event payloads) have columns of
// their own too: encoding/json would reformat them inside body.

// InstanceCols are the columns of gateway_instances, in ScanInstance's
// order.
const InstanceCols = `id, tenant, name, version, created_us, updated_us, sealed_secrets, body`

// InstanceArgs are in's values in InstanceCols' order.
func InstanceArgs(in *gateway.Instance) ([]any, error) {
	body, err := instanceBody(in)
	if err != nil {
		return nil, err
	}
	return []any{in.ID, in.TenantID, in.Name, in.Version, Micros(in.CreatedAt), Micros(in.UpdatedAt), Raw(in.SealedSecrets), body}, nil
}

func instanceBody(in *gateway.Instance) ([]byte, error) {
	b := *in
	b.CreatedAt, b.UpdatedAt, b.SealedSecrets = time.Time{}, time.Time{}, nil
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode instance %s: %w", in.ID, err)
	}
	return body, nil
}

// ScanInstance reads a row of InstanceCols.
func ScanInstance(r Scanner) (gateway.Instance, error) {
	var (
		in               gateway.Instance
		id, tenant, name string
		version, cus, us int64
		sealed, body     []byte
	)
	if err := r.Scan(&id, &tenant, &name, &version, &cus, &us, &sealed, &body); err != nil {
		return gateway.Instance{}, err
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return gateway.Instance{}, fmt.Errorf("decode instance %s: %w", id, err)
	}
	in.ID, in.TenantID, in.Name, in.Version = id, tenant, name, version
	in.CreatedAt, in.UpdatedAt, in.SealedSecrets = FromMicros(cus), FromMicros(us), Raw(sealed)
	return in, nil
}

// PrepareInstance is gateway.PrepareInstance, with empty sealed secrets
// written as NULL.
func PrepareInstance(in *gateway.Instance, expect int64, now time.Time) error {
	if err := gateway.PrepareInstance(in, expect, now); err != nil {
		return err
	}
	in.SealedSecrets = Raw(in.SealedSecrets)
	return nil
}

// RunCols are the columns of gateway_runs, in ScanRun's order.
// debug_state (0019_run_debug) is the breakpoint state of the run's
// debugger, which claims pass over while it is paused.
const RunCols = `id, tenant, instance_id, user_id, thread_id, status, lease_owner, lease_until_us, not_before_us, last_seq,
	version, created_us, updated_us, started_us, ended_us, pause, pending_input, custom_headers, body, debug_state`

// RunArgs are r's values in RunCols' order.
func RunArgs(r *gateway.Run) ([]any, error) {
	b := *r
	b.Pause, b.PendingInput = nil, nil
	b.CreatedAt, b.UpdatedAt, b.StartedAt, b.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	return []any{r.ID, r.TenantID, r.InstanceID, r.Caller.UserID, r.ThreadID, string(r.Status), r.LeaseOwner, Micros(r.LeaseUntil),
		Micros(r.NotBefore), r.LastSequence, r.Version, Micros(r.CreatedAt), Micros(r.UpdatedAt), Micros(r.StartedAt),
		Micros(r.EndedAt), Raw(r.Pause), Raw(r.PendingInput), Raw(r.CustomHeaders), body, debugState(r)}, nil
}

func debugState(r *gateway.Run) string {
	if r.Debug == nil {
		return ""
	}
	return string(r.Debug.BreakpointState)
}

// RunSetCols are the columns a run write replaces, in RunSetArgs' order:
// all but the key, the creation time and the last sequence, which the
// write moves on by the events it appends.
const RunSetCols = `instance_id, user_id, thread_id, status, lease_owner, lease_until_us, not_before_us, version,
	updated_us, started_us, ended_us, pause, pending_input, custom_headers, body, debug_state`

// RunSetArgs are the values of RunSetCols among args, RunArgs' values.
func RunSetArgs(args []any) []any {
	return slices.Concat(args[2:9], args[10:11], args[12:])
}

// ScanRun reads a row of RunCols.
func ScanRun(r Scanner) (gateway.Run, error) {
	var (
		run                                gateway.Run
		id, tenant, instance, user, thread string
		status, owner                      string
		until, notBefore, last, version    int64
		cus, us, started, ended            int64
		pause, pending, headers, body      []byte
		debug                              string
	)
	if err := r.Scan(&id, &tenant, &instance, &user, &thread, &status, &owner, &until, &notBefore, &last, &version,
		&cus, &us, &started, &ended, &pause, &pending, &headers, &body, &debug); err != nil {
		return gateway.Run{}, err
	}
	if err := json.Unmarshal(body, &run); err != nil {
		return gateway.Run{}, fmt.Errorf("decode run %s: %w", id, err)
	}
	if run.Debug != nil {
		run.Debug.BreakpointState = gateway.BreakpointState(debug)
	}
	run.ID, run.TenantID, run.InstanceID, run.Caller.UserID, run.ThreadID = id, tenant, instance, user, thread
	run.Status = gateway.Status(status)
	run.LeaseOwner, run.LeaseUntil, run.NotBefore = owner, FromMicros(until), FromMicros(notBefore)
	run.LastSequence, run.Version = last, version
	run.CreatedAt, run.UpdatedAt, run.StartedAt, run.EndedAt = FromMicros(cus), FromMicros(us), FromMicros(started), FromMicros(ended)
	run.Pause, run.PendingInput, run.CustomHeaders = Raw(pause), Raw(pending), Raw(headers)
	return run, nil
}

// PrepareRunWrite is gateway.PrepareRunWrite: the checks and settings
// every gateway store applies before a write.
func PrepareRunWrite(w *gateway.RunWrite, create bool) error {
	return gateway.PrepareRunWrite(w, create)
}

// Number gives events the sequences after the run's last one before the
// write, and returns the run's last sequence after it.
func Number(events []gateway.Event, before int64) int64 {
	for i := range events {
		events[i].Sequence = before + int64(i) + 1
	}
	return before + int64(len(events))
}

// EventCols are the columns of gateway_run_events, in ScanEvent's order;
// trace_id and span_id (0019_run_debug) are "" for an event recorded
// outside a trace.
const EventCols = `run_id, seq, type, payload, at_us, trace_id, span_id`

// ScanEvent reads a row of EventCols.
func ScanEvent(r Scanner) (gateway.Event, error) {
	var e gateway.Event
	var payload []byte
	var at int64
	if err := r.Scan(&e.RunID, &e.Sequence, &e.Type, &payload, &at, &e.TraceID, &e.SpanID); err != nil {
		return gateway.Event{}, err
	}
	e.Payload, e.At = Raw(payload), FromMicros(at)
	return e, nil
}

// ClaimableStatuses are the statuses ClaimRuns leases, as an SQL list;
// the claim index's predicate names the same ones.
const ClaimableStatuses = `('QUEUED', 'RUNNING')`

// NotHeld is the condition of a claim on the debugger: a run it holds
// (gateway.DebugSession.Holds) is not claimed.
const NotHeld = `debug_state <> '` + string(gateway.BreakpointPaused) + `'`

// SortClaimed puts claimed runs in ClaimRuns' order, oldest first: an
// UPDATE … RETURNING returns its rows in no particular order.
func SortClaimed(runs []gateway.Run) {
	slices.SortFunc(runs, func(a, b gateway.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// EventWatchers are the callbacks of a store's WatchEvents: the fan-out of
// one process. Announce is the hot path of every write and takes no lock:
// it reads a copy-on-write list.
type EventWatchers struct {
	mu   sync.Mutex // serializes changes to list
	list atomic.Pointer[[]*eventWatcher]
}

type eventWatcher struct {
	ctx context.Context
	fn  func(runID string, last int64)
}

// Watch calls fn for every Announce until ctx ends.
func (ws *EventWatchers) Watch(ctx context.Context, fn func(runID string, last int64)) error {
	if fn == nil {
		return errors.New("watch events: fn is nil")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &eventWatcher{ctx: ctx, fn: fn}
	ws.change(func(l []*eventWatcher) []*eventWatcher { return append(l, w) })
	context.AfterFunc(ctx, func() {
		ws.change(func(l []*eventWatcher) []*eventWatcher {
			return slices.DeleteFunc(l, func(x *eventWatcher) bool { return x == w })
		})
	})
	return nil
}

func (ws *EventWatchers) change(f func([]*eventWatcher) []*eventWatcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var old []*eventWatcher
	if p := ws.list.Load(); p != nil {
		old = *p
	}
	next := f(slices.Clone(old))
	ws.list.Store(&next)
}

// Announce calls every watcher whose context has not ended with runID and
// last.
func (ws *EventWatchers) Announce(runID string, last int64) {
	p := ws.list.Load()
	if p == nil {
		return
	}
	for _, w := range *p {
		if w.ctx.Err() == nil {
			w.fn(runID, last)
		}
	}
}

// Lost tells every watcher that notifications may have been lost.
func (ws *EventWatchers) Lost() { ws.Announce("", 0) }

// Len is the number of watchers, for tests.
func (ws *EventWatchers) Len() int {
	if p := ws.list.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// GatewaySQL runs the statements of a GatewayStore in one database's
// dialect. A read of one row returns the dialect's NoRows when there is
// none; times are in microseconds (Micros) and limits are bounded
// already.
type GatewaySQL interface {
	// InsertInstance inserts a row of InstanceArgs' values, and reports
	// false when its id, or its name in the tenant, is taken.
	InsertInstance(ctx context.Context, args []any) (bool, error)
	// Instance reads the tenant's instance id.
	Instance(ctx context.Context, tenantID, id string) (gateway.Instance, error)
	// Instances lists up to limit of the tenant's instances named after
	// afterName, by name.
	Instances(ctx context.Context, tenantID, afterName string, limit int) ([]gateway.Instance, error)
	// UpdateInstance replaces the row of in, whose values args are
	// (InstanceArgs'), if its version is expect, and returns its creation
	// time. It fails with gateway.ErrExists when another of the tenant's
	// instances has in's name, with NoRows when in has no row, and with
	// VersionConflict's error when its row is at another version.
	UpdateInstance(ctx context.Context, in *gateway.Instance, args []any, expect int64) (int64, error)
	// DeleteInstance deletes the tenant's instance id, and reports false
	// when there is none.
	DeleteInstance(ctx context.Context, tenantID, id string) (bool, error)
	// CreateRun inserts w's run, whose values args are (RunArgs'), with
	// w's events, numbered already, and reports false when its id is
	// taken.
	CreateRun(ctx context.Context, w *gateway.RunWrite, args []any) (bool, error)
	// CountRuns counts the runs by status.
	CountRuns(ctx context.Context) (map[gateway.Status]int64, error)
	// Run reads run id, the tenant's unless tenantID is "".
	Run(ctx context.Context, tenantID, id string) (gateway.Run, error)
	// Runs lists the runs f selects, newest first.
	Runs(ctx context.Context, f gateway.RunFilter) ([]gateway.Run, error)
	// WriteRun replaces w's run if its version is w.ExpectVersion and
	// appends w's events after its last sequence, numbering them; it
	// returns the run's last sequence and creation time after the write.
	// args are RunSetArgs' values, the number of events, the run's id,
	// its tenant and the version expected. It fails with NoRows when the
	// run has no row, and with VersionConflict's error when its row is at
	// another version.
	WriteRun(ctx context.Context, w *gateway.RunWrite, args []any) (last, created int64, err error)
	// Events lists up to limit of the run's events after sequence after.
	Events(ctx context.Context, runID string, after int64, limit int) ([]gateway.Event, error)
	// ClaimRuns leases up to limit runs ClaimRuns may lease at nowUS to
	// owner until untilUS, and returns them.
	ClaimRuns(ctx context.Context, owner string, nowUS, untilUS int64, limit int) ([]gateway.Run, error)
}

// VersionConflict is a gateway write's error when it expected version
// expect of a row at version stored.
func VersionConflict(expect, stored int64) error {
	return fmt.Errorf("version %d is not the current %d: %w", expect, stored, gateway.ErrConflict)
}

// errGatewayText: a database whose text holds neither NUL nor invalid
// UTF-8 cannot keep a record with such text in a column.
var errGatewayText = errors.New("text with NUL or invalid UTF-8")

// GatewayStore is a gateway.Store on an SQL database: the checks, the
// steps between statements and the errors both SQL stores share, over
// the statements a GatewaySQL runs. It announces its appends to
// watchers, which may hear of other writers' too.
type GatewayStore struct {
	d        Dialect
	db       GatewaySQL
	watchers *EventWatchers
}

// NewGatewayStore returns the GatewayStore of db, whose dialect is d,
// announcing appends to watchers.
func NewGatewayStore(d Dialect, db GatewaySQL, watchers *EventWatchers) *GatewayStore {
	return &GatewayStore{d: d, db: db, watchers: watchers}
}

var _ gateway.Store = (*GatewayStore)(nil)

func (g *GatewayStore) instanceHeld(in *gateway.Instance) bool {
	return g.d.Holds(in.ID, in.TenantID, in.Name)
}

func (g *GatewayStore) writeHeld(w *gateway.RunWrite) bool {
	r := &w.Run
	if !g.d.Holds(r.ID, r.TenantID, r.InstanceID, r.Caller.UserID, r.ThreadID, r.LeaseOwner) {
		return false
	}
	for _, e := range w.Events {
		if !g.d.Holds(e.Type, e.TraceID, e.SpanID) {
			return false
		}
	}
	return true
}

func (g *GatewayStore) CreateInstance(ctx context.Context, in gateway.Instance, now time.Time) (_ gateway.Instance, err error) {
	defer g.d.wrap(&err, "create gateway instance %s", in.ID)
	if err := PrepareInstance(&in, 0, now); err != nil {
		return gateway.Instance{}, err
	}
	if !g.instanceHeld(&in) {
		return gateway.Instance{}, errGatewayText
	}
	args, err := InstanceArgs(&in)
	if err != nil {
		return gateway.Instance{}, err
	}
	switch created, err := g.db.InsertInstance(ctx, args); {
	case err != nil:
		return gateway.Instance{}, err
	case !created:
		return gateway.Instance{}, gateway.ErrExists
	}
	return in, nil
}

func (g *GatewayStore) GetInstance(ctx context.Context, tenantID, id string) (_ gateway.Instance, err error) {
	defer g.d.wrap(&err, "get gateway instance %s", id)
	if !g.d.Holds(tenantID, id) {
		return gateway.Instance{}, gateway.ErrNotFound
	}
	in, err := g.db.Instance(ctx, tenantID, id)
	return in, g.d.Missing(err, gateway.ErrNotFound)
}

func (g *GatewayStore) ListInstances(ctx context.Context, f gateway.InstanceFilter) (_ []gateway.Instance, err error) {
	defer g.d.wrap(&err, "list gateway instances")
	if !g.d.Holds(f.TenantID, f.AfterName) {
		return []gateway.Instance{}, nil
	}
	return g.db.Instances(ctx, f.TenantID, f.AfterName, Limit(f.Limit, gateway.MaxPage))
}

func (g *GatewayStore) UpdateInstance(ctx context.Context, in gateway.Instance, expectVersion int64, now time.Time) (_ gateway.Instance, err error) {
	defer g.d.wrap(&err, "update gateway instance %s", in.ID)
	if expectVersion <= 0 {
		return gateway.Instance{}, fmt.Errorf("an update needs the version it replaces, not %d", expectVersion)
	}
	if err := PrepareInstance(&in, expectVersion, now); err != nil {
		return gateway.Instance{}, err
	}
	if !g.instanceHeld(&in) {
		return gateway.Instance{}, errGatewayText
	}
	args, err := InstanceArgs(&in)
	if err != nil {
		return gateway.Instance{}, err
	}
	created, err := g.db.UpdateInstance(ctx, &in, args, expectVersion)
	switch {
	case errors.Is(err, gateway.ErrExists):
		return gateway.Instance{}, fmt.Errorf("name %q: %w", in.Name, err)
	case err != nil:
		return gateway.Instance{}, g.d.Missing(err, gateway.ErrNotFound)
	}
	in.CreatedAt = FromMicros(created)
	return in, nil
}

func (g *GatewayStore) DeleteInstance(ctx context.Context, tenantID, id string) (err error) {
	defer g.d.wrap(&err, "delete gateway instance %s", id)
	if !g.d.Holds(tenantID, id) {
		return gateway.ErrNotFound
	}
	switch deleted, err := g.db.DeleteInstance(ctx, tenantID, id); {
	case err != nil:
		return err
	case !deleted:
		return gateway.ErrNotFound
	}
	return nil
}

func (g *GatewayStore) CreateRun(ctx context.Context, w gateway.RunWrite) (_ gateway.Run, _ []gateway.Event, err error) {
	defer g.d.wrap(&err, "create gateway run %s", w.Run.ID)
	if err := PrepareRunWrite(&w, true); err != nil {
		return gateway.Run{}, nil, err
	}
	if !g.writeHeld(&w) {
		return gateway.Run{}, nil, errGatewayText
	}
	w.Run.LastSequence = Number(w.Events, 0)
	args, err := RunArgs(&w.Run)
	if err != nil {
		return gateway.Run{}, nil, err
	}
	switch created, err := g.db.CreateRun(ctx, &w, args); {
	case err != nil:
		return gateway.Run{}, nil, err
	case !created:
		return gateway.Run{}, nil, gateway.ErrExists
	}
	if len(w.Events) > 0 {
		g.watchers.Announce(w.Run.ID, w.Run.LastSequence)
	}
	return w.Run, w.Events, nil
}

func (g *GatewayStore) CountRuns(ctx context.Context) (_ map[gateway.Status]int64, err error) {
	defer g.d.wrap(&err, "count gateway runs")
	return g.db.CountRuns(ctx)
}

func (g *GatewayStore) GetRun(ctx context.Context, tenantID, id string) (_ gateway.Run, err error) {
	defer g.d.wrap(&err, "get gateway run %s", id)
	if !g.d.Holds(tenantID, id) {
		return gateway.Run{}, gateway.ErrNotFound
	}
	r, err := g.db.Run(ctx, tenantID, id)
	return r, g.d.Missing(err, gateway.ErrNotFound)
}

func (g *GatewayStore) ListRuns(ctx context.Context, f gateway.RunFilter) (_ []gateway.Run, err error) {
	defer g.d.wrap(&err, "list gateway runs")
	if !g.d.Holds(f.TenantID, f.UserID, f.InstanceID, f.ThreadID, f.AfterID) {
		return []gateway.Run{}, nil
	}
	for _, s := range f.Statuses {
		if !g.d.Holds(string(s)) {
			return []gateway.Run{}, nil
		}
	}
	return g.db.Runs(ctx, f)
}

func (g *GatewayStore) WriteRun(ctx context.Context, w gateway.RunWrite) (_ gateway.Run, _ []gateway.Event, err error) {
	defer g.d.wrap(&err, "write gateway run %s", w.Run.ID)
	if err := PrepareRunWrite(&w, false); err != nil {
		return gateway.Run{}, nil, err
	}
	if !g.writeHeld(&w) {
		return gateway.Run{}, nil, errGatewayText
	}
	args, err := RunArgs(&w.Run)
	if err != nil {
		return gateway.Run{}, nil, err
	}
	args = append(RunSetArgs(args), int64(len(w.Events)), w.Run.ID, w.Run.TenantID, w.ExpectVersion)
	last, created, err := g.db.WriteRun(ctx, &w, args)
	if err != nil {
		return gateway.Run{}, nil, g.d.Missing(err, gateway.ErrNotFound)
	}
	w.Run.LastSequence, w.Run.CreatedAt = last, FromMicros(created)
	if len(w.Events) > 0 {
		g.watchers.Announce(w.Run.ID, last)
	}
	return w.Run, w.Events, nil
}

func (g *GatewayStore) Events(ctx context.Context, runID string, after int64, limit int) (_ []gateway.Event, err error) {
	defer g.d.wrap(&err, "gateway run %s events", runID)
	if !g.d.Holds(runID) {
		return []gateway.Event{}, nil
	}
	return g.db.Events(ctx, runID, after, Limit(limit, gateway.MaxPage))
}

func (g *GatewayStore) ClaimRuns(ctx context.Context, owner string, now, until time.Time, limit int) (_ []gateway.Run, err error) {
	defer g.d.wrap(&err, "claim gateway runs")
	switch {
	case owner == "":
		return nil, errors.New("no owner")
	case !g.d.Holds(owner):
		return nil, fmt.Errorf("owner: %w", errGatewayText)
	}
	out, err := g.db.ClaimRuns(ctx, owner, Micros(now), Micros(until), Limit(limit, gateway.MaxPage))
	if err != nil {
		return nil, err
	}
	SortClaimed(out)
	return out, nil
}

func (g *GatewayStore) WatchEvents(ctx context.Context, fn func(runID string, last int64)) (err error) {
	defer g.d.wrap(&err, "watch gateway events")
	return g.watchers.Watch(ctx, fn)
}
