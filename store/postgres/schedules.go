package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// ScheduleStore returns the database's store of heartbeat schedules (a
// heartbeat.Store). Any number of replicas may share it: a create is one
// insert under the one-config-per-instance constraint, and a claim locks
// the config's row, so of replicas racing for a tick exactly one claims
// it and the others find the config moved on.
func (db *DB) ScheduleStore() *ScheduleStore { return &ScheduleStore{db} }

// ScheduleStore keeps heartbeat configs and their fires in the database
// (see heartbeat.Store).
type ScheduleStore struct{ db *DB }

var _ heartbeat.Store = (*ScheduleStore)(nil)

const getHBSQL = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE id = $1 AND tenant = $2`

func (s *ScheduleStore) Create(ctx context.Context, r heartbeat.Record) (heartbeat.Record, error) {
	what := fmt.Sprintf("postgres: create heartbeat config %.40q", r.ID)
	if err := heartbeat.CheckRecord(&r); err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	r.Version, r.UpdatedAt = 1, r.CreatedAt
	args, err := sqlstore.HBConfigArgs(&r)
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	// Without a target, ON CONFLICT covers the id and the instance alike.
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO heartbeat_configs (`+sqlstore.HBConfigCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING`, args...)
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, heartbeat.ErrExists)
	}
	return r.Stored(), nil
}

func (s *ScheduleStore) Get(ctx context.Context, tenantID, id string) (heartbeat.Record, error) {
	what := fmt.Sprintf("postgres: get heartbeat config %.40q", id)
	if !a2astore.ValidText(tenantID, id) {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	r, err := sqlstore.ScanHBConfig(s.db.pool.QueryRow(ctx, getHBSQL, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = heartbeat.ErrNotFound
	}
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

func (s *ScheduleStore) List(ctx context.Context, tenantID, instanceID string) ([]heartbeat.Record, error) {
	if !a2astore.ValidText(tenantID, instanceID) {
		return []heartbeat.Record{}, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE tenant = $1 AND ($2 = '' OR instance_id = $2) ORDER BY created_us, id`, tenantID, instanceID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBConfig)
	if err != nil {
		return nil, fmt.Errorf("postgres: list heartbeat configs: %w", err)
	}
	if out == nil {
		out = []heartbeat.Record{}
	}
	return out, nil
}

func (s *ScheduleStore) SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, next, now time.Time) (heartbeat.Record, bool, error) {
	what := fmt.Sprintf("postgres: set status of heartbeat config %.40q", id)
	if !st.Valid() || (st == heartbeat.StatusActive && next.IsZero()) {
		return heartbeat.Record{}, false, fmt.Errorf("%s: %w: status %q with next run %v", what, heartbeat.ErrInvalid, st, next)
	}
	if !a2astore.ValidText(tenantID, id) {
		return heartbeat.Record{}, false, fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	if st == heartbeat.StatusPaused {
		next = time.Time{}
	}
	// The row lock orders concurrent changes; one that waited sees the
	// winner's status and changes nothing when it is the same.
	r, err := sqlstore.ScanHBConfig(s.db.pool.QueryRow(ctx, `UPDATE heartbeat_configs
		SET status = $3, next_run_us = $4, version = version + 1, updated_us = $5
		WHERE id = $1 AND tenant = $2 AND status <> $3 RETURNING `+sqlstore.HBConfigCols,
		id, tenantID, string(st), sqlstore.Micros(next), sqlstore.Micros(now)))
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return heartbeat.Record{}, false, fmt.Errorf("%s: %w", what, err)
	}
	r, err = s.Get(ctx, tenantID, id)
	if err != nil {
		return heartbeat.Record{}, false, err
	}
	return r, false, nil
}

func (s *ScheduleStore) Delete(ctx context.Context, tenantID, id string) error {
	what := fmt.Sprintf("postgres: delete heartbeat config %.40q", id)
	if !a2astore.ValidText(tenantID, id) {
		return fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM heartbeat_configs WHERE id = $1 AND tenant = $2`, id, tenantID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	return nil
}

func (s *ScheduleStore) Count(ctx context.Context) (map[heartbeat.Status]int64, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT status, COUNT(*) FROM heartbeat_configs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("postgres: count heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.CountByStatus(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: count heartbeat configs: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) Due(ctx context.Context, now time.Time, limit int) ([]heartbeat.Record, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE status = 'active' AND next_run_us <= $1 ORDER BY next_run_us, id LIMIT $2`,
		sqlstore.Micros(now), sqlstore.Limit(limit, heartbeat.MaxFirePage))
	if err != nil {
		return nil, fmt.Errorf("postgres: due heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBConfig)
	if err != nil {
		return nil, fmt.Errorf("postgres: due heartbeat configs: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) NextRun(ctx context.Context) (time.Time, bool, error) {
	var next *int64
	if err := s.db.pool.QueryRow(ctx, `SELECT MIN(next_run_us) FROM heartbeat_configs WHERE status = 'active'`).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: next heartbeat run: %w", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return sqlstore.FromMicros(*next), true, nil
}

func (s *ScheduleStore) Claim(ctx context.Context, c heartbeat.Claim) (heartbeat.Fire, error) {
	what := fmt.Sprintf("postgres: claim heartbeat config %.40q", c.ConfigID)
	if err := heartbeat.CheckReason(c.Skip); err != nil {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	if !a2astore.ValidText(c.TenantID, c.ConfigID, c.Owner) {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	var f heartbeat.Fire
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// FOR UPDATE makes racing claims wait for each other; the one that
		// waited reads the winner's row and finds it moved on.
		r, err := sqlstore.ScanHBConfig(tx.QueryRow(ctx, getHBSQL+` FOR UPDATE`, c.ConfigID, c.TenantID))
		if errors.Is(err, pgx.ErrNoRows) {
			return heartbeat.ErrNotFound
		}
		if err != nil {
			return err
		}
		if r.Status != heartbeat.StatusActive || !r.NextRunAt.Equal(heartbeat.Stored(c.Expect)) {
			return fmt.Errorf("%w: the config is %s at %v", heartbeat.ErrConflict, r.Status, r.NextRunAt)
		}
		var countErr error
		f = heartbeat.PlanFire(&c, func() int {
			var n int
			countErr = tx.QueryRow(ctx, `SELECT COUNT(*) FROM heartbeat_fires WHERE config_id = $1 AND tick_us >= $2 AND outcome IN `+
				sqlstore.HBRunsCounted, c.ConfigID, sqlstore.Micros(c.Since)).Scan(&n)
			return n
		})
		if countErr != nil {
			return countErr
		}
		heartbeat.ApplyClaim(&r, &c, &f)
		if _, err := tx.Exec(ctx, `UPDATE heartbeat_configs SET next_run_us = $1, last_run_us = $2, missed_total = $3,
			missed_count = $4, missed_from_us = $5, missed_to_us = $6, missed_at_us = $7, version = $8, updated_us = $9
			WHERE id = $10`, append(sqlstore.HBMovedArgs(&r), r.ID)...); err != nil {
			return err
		}
		if f.Tick.IsZero() {
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO heartbeat_fires (`+sqlstore.HBFireCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`, sqlstore.HBFireArgs(&f)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: tick %v was handled already", heartbeat.ErrConflict, f.Tick)
		}
		return nil
	})
	if err != nil {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

func (s *ScheduleStore) Settle(ctx context.Context, st heartbeat.Settlement) error {
	what := fmt.Sprintf("postgres: settle heartbeat fire %.40q at %v", st.ConfigID, st.Tick)
	if st.Outcome != heartbeat.OutcomeFired && st.Outcome != heartbeat.OutcomeFailed {
		return fmt.Errorf("%s: %w: outcome %q", what, heartbeat.ErrInvalid, st.Outcome)
	}
	if err := heartbeat.CheckReason(st.Reason); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !a2astore.ValidText(st.TenantID, st.ConfigID, st.Owner, st.RunID) {
		return fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	}
	tag, err := s.db.pool.Exec(ctx, `UPDATE heartbeat_fires SET outcome = $1, run_id = $2, reason = $3, updated_us = $4
		WHERE config_id = $5 AND tick_us = $6 AND tenant = $7 AND outcome = 'claimed' AND owner = $8`,
		string(st.Outcome), st.RunID, st.Reason, sqlstore.Micros(st.Now), st.ConfigID, sqlstore.Micros(st.Tick), st.TenantID, st.Owner)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var one int
	err = s.db.pool.QueryRow(ctx, `SELECT 1 FROM heartbeat_fires WHERE config_id = $1 AND tick_us = $2 AND tenant = $3`,
		st.ConfigID, sqlstore.Micros(st.Tick), st.TenantID).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%s: %w", what, heartbeat.ErrNotFound)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: the fire is settled or another owner's", what, heartbeat.ErrConflict)
}

func (s *ScheduleStore) Stale(ctx context.Context, now time.Time, limit int) ([]heartbeat.Fire, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE outcome = 'claimed' AND lease_until_us <= $1 ORDER BY tick_us, config_id LIMIT $2`,
		sqlstore.Micros(now), sqlstore.Limit(limit, heartbeat.MaxFirePage))
	if err != nil {
		return nil, fmt.Errorf("postgres: stale heartbeat fires: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBFire)
	if err != nil {
		return nil, fmt.Errorf("postgres: stale heartbeat fires: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) Reclaim(ctx context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (heartbeat.Fire, error) {
	what := fmt.Sprintf("postgres: reclaim heartbeat fire %.40q at %v", configID, tick)
	if !a2astore.ValidText(tenantID, configID, owner) {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, heartbeat.ErrConflict)
	}
	// The row lock orders racing takeovers; one that waited finds the
	// lease renewed and updates nothing.
	f, err := sqlstore.ScanHBFire(s.db.pool.QueryRow(ctx, `UPDATE heartbeat_fires
		SET owner = $1, lease_until_us = $2, attempts = attempts + 1, updated_us = $3
		WHERE config_id = $4 AND tick_us = $5 AND tenant = $6 AND outcome = 'claimed' AND lease_until_us <= $3
		RETURNING `+sqlstore.HBFireCols,
		owner, sqlstore.Micros(until), sqlstore.Micros(now), configID, sqlstore.Micros(tick), tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = heartbeat.ErrConflict
	}
	if err != nil {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

func (s *ScheduleStore) Fires(ctx context.Context, tenantID, configID string, f heartbeat.FireFilter) ([]heartbeat.Fire, error) {
	if !a2astore.ValidText(tenantID, configID) {
		return []heartbeat.Fire{}, nil
	}
	order := "ASC"
	if f.Newest {
		order = "DESC"
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE config_id = $1 AND tenant = $2 AND tick_us >= $3 ORDER BY tick_us `+order+` LIMIT $4`,
		configID, tenantID, sqlstore.Micros(f.Since), heartbeat.FireLimit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: heartbeat fires: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBFire)
	if err != nil {
		return nil, fmt.Errorf("postgres: heartbeat fires: %w", err)
	}
	if out == nil {
		out = []heartbeat.Fire{}
	}
	return out, nil
}
