package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"novaos.dev/novaos/heartbeat"
)

// Heartbeat schedules in the column layout both SQL stores share (their
// 0018_schedules migrations): a config's key, instance, status, times and
// missed-tick counts are columns, the rest its JSON encoding in body; a
// fire is all columns. Times are in microseconds, 0 for none.

// HBConfigCols are the columns of heartbeat_configs, in ScanHBConfig's
// order.
const HBConfigCols = `id, tenant, instance_id, agent_id, status, next_run_us, last_run_us, missed_total, missed_count,
	missed_from_us, missed_to_us, missed_at_us, version, created_us, updated_us, body`

// HBFireCols are the columns of heartbeat_fires, in ScanHBFire's order.
const HBFireCols = `config_id, tick_us, tenant, outcome, run_id, reason, owner, lease_until_us, attempts, created_us, updated_us`

// hbBody is the part of a config kept as JSON.
type hbBody struct {
	Cron          string            `json:"cron"`
	Timezone      string            `json:"timezone"`
	TaskContent   string            `json:"task_content"`
	AgentImage    string            `json:"agent_image"`
	AgentImageTag string            `json:"agent_image_tag"`
	Budget        heartbeat.Budget  `json:"budget"`
	Creator       heartbeat.Creator `json:"creator"`
}

// HBConfigArgs are r's values in HBConfigCols' order.
func HBConfigArgs(r *heartbeat.Record) ([]any, error) {
	body, err := json.Marshal(hbBody{Cron: r.CronExpression, Timezone: r.Timezone, TaskContent: r.TaskContent,
		AgentImage: r.AgentImage, AgentImageTag: r.AgentImageTag, Budget: r.Budget, Creator: r.Creator})
	if err != nil {
		return nil, fmt.Errorf("encode heartbeat config %s: %w", r.ID, err)
	}
	return []any{r.ID, r.TenantID, r.InstanceID, r.AgentID, string(r.Status), Micros(r.NextRunAt), Micros(r.LastRunAt),
		r.Missed.Total, r.Missed.Count, Micros(r.Missed.From), Micros(r.Missed.To), Micros(r.Missed.DetectedAt),
		r.Version, Micros(r.CreatedAt), Micros(r.UpdatedAt), body}, nil
}

// ScanHBConfig reads a row of HBConfigCols.
func ScanHBConfig(s Scanner) (heartbeat.Record, error) {
	var (
		r                        heartbeat.Record
		status                   string
		next, last, from, to, at int64
		created, updated         int64
		body                     []byte
	)
	if err := s.Scan(&r.ID, &r.TenantID, &r.InstanceID, &r.AgentID, &status, &next, &last, &r.Missed.Total, &r.Missed.Count,
		&from, &to, &at, &r.Version, &created, &updated, &body); err != nil {
		return heartbeat.Record{}, err
	}
	var b hbBody
	if err := json.Unmarshal(body, &b); err != nil {
		return heartbeat.Record{}, fmt.Errorf("decode heartbeat config %s: %w", r.ID, err)
	}
	r.Status = heartbeat.Status(status)
	r.CronExpression, r.Timezone, r.TaskContent = b.Cron, b.Timezone, b.TaskContent
	r.AgentImage, r.AgentImageTag, r.Budget, r.Creator = b.AgentImage, b.AgentImageTag, b.Budget, b.Creator
	r.NextRunAt, r.LastRunAt = FromMicros(next), FromMicros(last)
	r.Missed.From, r.Missed.To, r.Missed.DetectedAt = FromMicros(from), FromMicros(to), FromMicros(at)
	r.CreatedAt, r.UpdatedAt = FromMicros(created), FromMicros(updated)
	return r, nil
}

// HBFireArgs are f's values in HBFireCols' order.
func HBFireArgs(f *heartbeat.Fire) []any {
	return []any{f.ConfigID, Micros(f.Tick), f.TenantID, string(f.Outcome), f.RunID, f.Reason, f.Owner,
		Micros(f.LeaseUntil), f.Attempts, Micros(f.CreatedAt), Micros(f.UpdatedAt)}
}

// ScanHBFire reads a row of HBFireCols.
func ScanHBFire(s Scanner) (heartbeat.Fire, error) {
	var (
		f                             heartbeat.Fire
		outcome                       string
		tick, lease, created, updated int64
	)
	if err := s.Scan(&f.ConfigID, &tick, &f.TenantID, &outcome, &f.RunID, &f.Reason, &f.Owner, &lease, &f.Attempts,
		&created, &updated); err != nil {
		return heartbeat.Fire{}, err
	}
	f.Outcome = heartbeat.Outcome(outcome)
	f.Tick, f.LeaseUntil, f.CreatedAt, f.UpdatedAt = FromMicros(tick), FromMicros(lease), FromMicros(created), FromMicros(updated)
	return f, nil
}

// HBRunsCounted are the outcomes a day's run budget counts, as an SQL
// list.
const HBRunsCounted = `('claimed', 'fired')`

// HBMovedArgs are the columns a claim changes, next_run_us to updated_us
// in HBConfigCols' order, for r.
func HBMovedArgs(r *heartbeat.Record) []any {
	return []any{Micros(r.NextRunAt), Micros(r.LastRunAt), r.Missed.Total, r.Missed.Count, Micros(r.Missed.From),
		Micros(r.Missed.To), Micros(r.Missed.DetectedAt), r.Version, Micros(r.UpdatedAt)}
}

// ScheduleSQL runs the statements of a ScheduleStore in one database's
// dialect. A read of one row returns the dialect's NoRows when there is
// none; times are in microseconds (Micros) and limits are bounded
// already.
type ScheduleSQL interface {
	// InsertConfig inserts a row of HBConfigArgs' values, and reports
	// false when its id, or a config of its instance, is taken.
	InsertConfig(ctx context.Context, args []any) (bool, error)
	// Config reads the tenant's config id.
	Config(ctx context.Context, tenantID, id string) (heartbeat.Record, error)
	// Configs lists the tenant's configs, only instanceID's unless it is
	// "", by creation time and id.
	Configs(ctx context.Context, tenantID, instanceID string) ([]heartbeat.Record, error)
	// SetStatus gives the config status st and next run nextUS as a new
	// version updated at nowUS, unless its status is st already, and
	// returns the config after it and whether it changed it.
	SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, nextUS, nowUS int64) (heartbeat.Record, bool, error)
	// DeleteConfig deletes the tenant's config id, and reports false when
	// there is none.
	DeleteConfig(ctx context.Context, tenantID, id string) (bool, error)
	// CountConfigs counts the configs by status.
	CountConfigs(ctx context.Context) (map[heartbeat.Status]int64, error)
	// Due lists up to limit active configs whose next run is at or before
	// nowUS, by next run and id.
	Due(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Record, error)
	// NextRun is the earliest next run of an active config, false when
	// there is none.
	NextRun(ctx context.Context) (int64, bool, error)
	// Claim runs step in one transaction, committed when step returns nil.
	Claim(ctx context.Context, step func(ClaimTx) error) error
	// Settle gives the fire st's outcome, run id and reason if it is
	// claimed by st.Owner, and reports whether it did; NoRows when the
	// tenant has no such fire.
	Settle(ctx context.Context, st *heartbeat.Settlement) (bool, error)
	// Stale lists up to limit claimed fires whose lease lapsed at or
	// before nowUS, by tick and config id.
	Stale(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Fire, error)
	// Reclaim leases the tenant's fire, if it is claimed with a lease that
	// lapsed at or before nowUS, to owner until untilUS, counting an
	// attempt, and returns it; NoRows when it is no such fire.
	Reclaim(ctx context.Context, tenantID, configID string, tickUS int64, owner string, nowUS, untilUS int64) (heartbeat.Fire, error)
	// Fires lists up to limit of the tenant's config's fires with a tick
	// at or after sinceUS, oldest first unless newest.
	Fires(ctx context.Context, tenantID, configID string, sinceUS int64, newest bool, limit int) ([]heartbeat.Fire, error)
}

// ClaimTx is a claim's transaction. What Config reads stays as read until
// the transaction ends (a row lock, or the only writer), so that of
// claims racing for one tick exactly one finds the config due.
type ClaimTx interface {
	// Config reads the tenant's config id.
	Config(ctx context.Context, tenantID, id string) (heartbeat.Record, error)
	// Runs counts the config's fires with a tick at or after sinceUS
	// whose outcome a day's run budget counts (HBRunsCounted).
	Runs(ctx context.Context, configID string, sinceUS int64) (int, error)
	// Move writes the columns a claim changes of config r (HBMovedArgs).
	Move(ctx context.Context, r *heartbeat.Record) error
	// InsertFire inserts a row of HBFireArgs' values, and reports false
	// when its tick has one.
	InsertFire(ctx context.Context, f *heartbeat.Fire) (bool, error)
}

// ScheduleStore is a heartbeat.Store on an SQL database: the checks, the
// steps between statements and the errors both SQL stores share, over
// the statements a ScheduleSQL runs.
type ScheduleStore struct {
	d  Dialect
	db ScheduleSQL
}

// NewScheduleStore returns the ScheduleStore of db, whose dialect is d.
func NewScheduleStore(d Dialect, db ScheduleSQL) *ScheduleStore { return &ScheduleStore{d: d, db: db} }

var _ heartbeat.Store = (*ScheduleStore)(nil)

func (s *ScheduleStore) Create(ctx context.Context, r heartbeat.Record) (_ heartbeat.Record, err error) {
	defer s.d.wrap(&err, "create heartbeat config %.40q", r.ID)
	if err := heartbeat.CheckRecord(&r); err != nil {
		return heartbeat.Record{}, err
	}
	r.Version, r.UpdatedAt = 1, r.CreatedAt
	args, err := HBConfigArgs(&r)
	if err != nil {
		return heartbeat.Record{}, err
	}
	switch created, err := s.db.InsertConfig(ctx, args); {
	case err != nil:
		return heartbeat.Record{}, err
	case !created:
		return heartbeat.Record{}, heartbeat.ErrExists
	}
	return r.Stored(), nil
}

func (s *ScheduleStore) Get(ctx context.Context, tenantID, id string) (_ heartbeat.Record, err error) {
	defer s.d.wrap(&err, "get heartbeat config %.40q", id)
	if !s.d.Holds(tenantID, id) {
		return heartbeat.Record{}, heartbeat.ErrNotFound
	}
	r, err := s.db.Config(ctx, tenantID, id)
	return r, s.d.Missing(err, heartbeat.ErrNotFound)
}

func (s *ScheduleStore) List(ctx context.Context, tenantID, instanceID string) (_ []heartbeat.Record, err error) {
	defer s.d.wrap(&err, "list heartbeat configs")
	if !s.d.Holds(tenantID, instanceID) {
		return []heartbeat.Record{}, nil
	}
	return s.db.Configs(ctx, tenantID, instanceID)
}

func (s *ScheduleStore) SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, next, now time.Time) (_ heartbeat.Record, _ bool, err error) {
	defer s.d.wrap(&err, "set status of heartbeat config %.40q", id)
	next, err = heartbeat.CheckStatus(st, next)
	if err != nil {
		return heartbeat.Record{}, false, err
	}
	if !s.d.Holds(tenantID, id) {
		return heartbeat.Record{}, false, heartbeat.ErrNotFound
	}
	r, changed, err := s.db.SetStatus(ctx, tenantID, id, st, Micros(next), Micros(now))
	if err != nil {
		return heartbeat.Record{}, false, s.d.Missing(err, heartbeat.ErrNotFound)
	}
	return r, changed, nil
}

func (s *ScheduleStore) Delete(ctx context.Context, tenantID, id string) (err error) {
	defer s.d.wrap(&err, "delete heartbeat config %.40q", id)
	if !s.d.Holds(tenantID, id) {
		return heartbeat.ErrNotFound
	}
	switch deleted, err := s.db.DeleteConfig(ctx, tenantID, id); {
	case err != nil:
		return err
	case !deleted:
		return heartbeat.ErrNotFound
	}
	return nil
}

func (s *ScheduleStore) Count(ctx context.Context) (_ map[heartbeat.Status]int64, err error) {
	defer s.d.wrap(&err, "count heartbeat configs")
	return s.db.CountConfigs(ctx)
}

func (s *ScheduleStore) Due(ctx context.Context, now time.Time, limit int) (_ []heartbeat.Record, err error) {
	defer s.d.wrap(&err, "due heartbeat configs")
	return s.db.Due(ctx, Micros(now), Limit(limit, heartbeat.MaxFirePage))
}

func (s *ScheduleStore) NextRun(ctx context.Context) (_ time.Time, _ bool, err error) {
	defer s.d.wrap(&err, "next heartbeat run")
	next, ok, err := s.db.NextRun(ctx)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return FromMicros(next), true, nil
}

func (s *ScheduleStore) Claim(ctx context.Context, c heartbeat.Claim) (_ heartbeat.Fire, err error) {
	defer s.d.wrap(&err, "claim heartbeat config %.40q", c.ConfigID)
	if err := heartbeat.CheckReason(c.Skip); err != nil {
		return heartbeat.Fire{}, err
	}
	if !s.d.Holds(c.TenantID, c.ConfigID, c.Owner) {
		return heartbeat.Fire{}, heartbeat.ErrNotFound
	}
	var f heartbeat.Fire
	err = s.db.Claim(ctx, func(tx ClaimTx) error {
		r, err := tx.Config(ctx, c.TenantID, c.ConfigID)
		if err != nil {
			return s.d.Missing(err, heartbeat.ErrNotFound)
		}
		if err := heartbeat.CheckClaim(&r, &c); err != nil {
			return err
		}
		var countErr error
		f = heartbeat.PlanFire(&c, func() int {
			var n int
			n, countErr = tx.Runs(ctx, c.ConfigID, Micros(c.Since))
			return n
		})
		if countErr != nil {
			return countErr
		}
		heartbeat.ApplyClaim(&r, &c, &f)
		if err := tx.Move(ctx, &r); err != nil {
			return err
		}
		if f.Tick.IsZero() {
			return nil
		}
		switch inserted, err := tx.InsertFire(ctx, &f); {
		case err != nil:
			return err
		case !inserted:
			return fmt.Errorf("%w: tick %v was handled already", heartbeat.ErrConflict, f.Tick)
		}
		return nil
	})
	if err != nil {
		return heartbeat.Fire{}, err
	}
	return f, nil
}

func (s *ScheduleStore) Settle(ctx context.Context, st heartbeat.Settlement) (err error) {
	defer s.d.wrap(&err, "settle heartbeat fire %.40q at %v", st.ConfigID, st.Tick)
	if err := heartbeat.CheckSettlement(&st); err != nil {
		return err
	}
	if !s.d.Holds(st.TenantID, st.ConfigID, st.Owner, st.RunID) {
		return heartbeat.ErrNotFound
	}
	switch settled, err := s.db.Settle(ctx, &st); {
	case err != nil:
		return s.d.Missing(err, heartbeat.ErrNotFound)
	case !settled:
		return fmt.Errorf("%w: the fire is settled or another owner's", heartbeat.ErrConflict)
	}
	return nil
}

func (s *ScheduleStore) Stale(ctx context.Context, now time.Time, limit int) (_ []heartbeat.Fire, err error) {
	defer s.d.wrap(&err, "stale heartbeat fires")
	return s.db.Stale(ctx, Micros(now), Limit(limit, heartbeat.MaxFirePage))
}

func (s *ScheduleStore) Reclaim(ctx context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (_ heartbeat.Fire, err error) {
	defer s.d.wrap(&err, "reclaim heartbeat fire %.40q at %v", configID, tick)
	if !s.d.Holds(tenantID, configID, owner) {
		return heartbeat.Fire{}, heartbeat.ErrConflict
	}
	f, err := s.db.Reclaim(ctx, tenantID, configID, Micros(tick), owner, Micros(now), Micros(until))
	if err != nil {
		return heartbeat.Fire{}, s.d.Missing(err, heartbeat.ErrConflict)
	}
	return f, nil
}

func (s *ScheduleStore) Fires(ctx context.Context, tenantID, configID string, f heartbeat.FireFilter) (_ []heartbeat.Fire, err error) {
	defer s.d.wrap(&err, "heartbeat fires")
	if !s.d.Holds(tenantID, configID) {
		return []heartbeat.Fire{}, nil
	}
	return s.db.Fires(ctx, tenantID, configID, Micros(f.Since), f.Newest, heartbeat.FireLimit(f.Limit))
}
