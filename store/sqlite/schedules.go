package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// ScheduleStore returns the database's store of heartbeat schedules (a
// heartbeat.Store). Its writes go through the database's single writer,
// whose transactions take the file's write lock first: a claim's check
// of the config and its update are one step, in this process or another
// using the file, so of servers racing for a tick exactly one claims it.
func (db *DB) ScheduleStore() *ScheduleStore { return &ScheduleStore{db} }

// ScheduleStore keeps heartbeat configs and their fires in the database
// (see heartbeat.Store).
type ScheduleStore struct{ db *DB }

var _ heartbeat.Store = (*ScheduleStore)(nil)

const (
	getHBSQL  = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE id = ? AND tenant = ?`
	dueHBSQL  = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE status = 'active' AND next_run_us <= ? ORDER BY next_run_us, id LIMIT ?`
	nextHBSQL = `SELECT MIN(next_run_us) FROM heartbeat_configs WHERE status = 'active'`
)

func (s *ScheduleStore) Create(ctx context.Context, r heartbeat.Record) (heartbeat.Record, error) {
	what := fmt.Sprintf("sqlite: create heartbeat config %.40q", r.ID)
	if err := heartbeat.CheckRecord(&r); err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	r.Version, r.UpdatedAt = 1, r.CreatedAt
	args, err := sqlstore.HBConfigArgs(&r)
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	err = s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO heartbeat_configs (`+sqlstore.HBConfigCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		// The id, or a config of the instance, exists.
		return heartbeat.ErrExists
	})
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	return r.Stored(), nil
}

func (s *ScheduleStore) Get(ctx context.Context, tenantID, id string) (heartbeat.Record, error) {
	r, err := sqlstore.ScanHBConfig(s.db.queryRow(ctx, getHBSQL, id, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		err = heartbeat.ErrNotFound
	}
	if err != nil {
		return heartbeat.Record{}, fmt.Errorf("sqlite: get heartbeat config %.40q: %w", id, err)
	}
	return r, nil
}

func (s *ScheduleStore) List(ctx context.Context, tenantID, instanceID string) ([]heartbeat.Record, error) {
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE tenant = ? AND (? = '' OR instance_id = ?) ORDER BY created_us, id`, tenantID, instanceID, instanceID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBConfig)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list heartbeat configs: %w", err)
	}
	if out == nil {
		out = []heartbeat.Record{}
	}
	return out, nil
}

func (s *ScheduleStore) SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, next, now time.Time) (heartbeat.Record, bool, error) {
	what := fmt.Sprintf("sqlite: set status of heartbeat config %.40q", id)
	if !st.Valid() || (st == heartbeat.StatusActive && next.IsZero()) {
		return heartbeat.Record{}, false, fmt.Errorf("%s: %w: status %q with next run %v", what, heartbeat.ErrInvalid, st, next)
	}
	if st == heartbeat.StatusPaused {
		next = time.Time{}
	}
	var (
		r       heartbeat.Record
		changed bool
	)
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE heartbeat_configs SET status = ?, next_run_us = ?, version = version + 1, updated_us = ?
			WHERE id = ? AND tenant = ? AND status <> ?`, string(st), sqlstore.Micros(next), sqlstore.Micros(now), id, tenantID, string(st))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		changed = n == 1
		r, err = sqlstore.ScanHBConfig(tx.QueryRow(getHBSQL, id, tenantID))
		if errors.Is(err, sql.ErrNoRows) {
			return heartbeat.ErrNotFound
		}
		return err
	})
	if err != nil {
		return heartbeat.Record{}, false, fmt.Errorf("%s: %w", what, err)
	}
	return r, changed, nil
}

func (s *ScheduleStore) Delete(ctx context.Context, tenantID, id string) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM heartbeat_configs WHERE id = ? AND tenant = ?`, id, tenantID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return heartbeat.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete heartbeat config %.40q: %w", id, err)
	}
	return nil
}

func (s *ScheduleStore) Count(ctx context.Context) (map[heartbeat.Status]int64, error) {
	rows, err := s.db.query(ctx, `SELECT status, COUNT(*) FROM heartbeat_configs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.CountByStatus(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count heartbeat configs: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) Due(ctx context.Context, now time.Time, limit int) ([]heartbeat.Record, error) {
	rows, err := s.db.query(ctx, dueHBSQL, sqlstore.Micros(now), sqlstore.Limit(limit, heartbeat.MaxFirePage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: due heartbeat configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBConfig)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due heartbeat configs: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) NextRun(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := s.db.queryRow(ctx, nextHBSQL).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next heartbeat run: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return sqlstore.FromMicros(next.Int64), true, nil
}

func (s *ScheduleStore) Claim(ctx context.Context, c heartbeat.Claim) (heartbeat.Fire, error) {
	what := fmt.Sprintf("sqlite: claim heartbeat config %.40q", c.ConfigID)
	if err := heartbeat.CheckReason(c.Skip); err != nil {
		return heartbeat.Fire{}, fmt.Errorf("%s: %w", what, err)
	}
	var f heartbeat.Fire
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The writer's transaction holds the write lock: nothing changes
		// the row between this read and the update.
		r, err := sqlstore.ScanHBConfig(tx.QueryRow(getHBSQL, c.ConfigID, c.TenantID))
		if errors.Is(err, sql.ErrNoRows) {
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
			countErr = tx.QueryRow(`SELECT COUNT(*) FROM heartbeat_fires WHERE config_id = ? AND tick_us >= ? AND outcome IN `+
				sqlstore.HBRunsCounted, c.ConfigID, sqlstore.Micros(c.Since)).Scan(&n)
			return n
		})
		if countErr != nil {
			return countErr
		}
		heartbeat.ApplyClaim(&r, &c, &f)
		if _, err := tx.Exec(`UPDATE heartbeat_configs SET next_run_us = ?, last_run_us = ?, missed_total = ?, missed_count = ?,
			missed_from_us = ?, missed_to_us = ?, missed_at_us = ?, version = ?, updated_us = ? WHERE id = ?`,
			append(sqlstore.HBMovedArgs(&r), r.ID)...); err != nil {
			return err
		}
		if f.Tick.IsZero() {
			return nil
		}
		res, err := tx.Exec(`INSERT INTO heartbeat_fires (`+sqlstore.HBFireCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, sqlstore.HBFireArgs(&f)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
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
	what := fmt.Sprintf("sqlite: settle heartbeat fire %.40q at %v", st.ConfigID, st.Tick)
	if st.Outcome != heartbeat.OutcomeFired && st.Outcome != heartbeat.OutcomeFailed {
		return fmt.Errorf("%s: %w: outcome %q", what, heartbeat.ErrInvalid, st.Outcome)
	}
	if err := heartbeat.CheckReason(st.Reason); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE heartbeat_fires SET outcome = ?, run_id = ?, reason = ?, updated_us = ?
			WHERE config_id = ? AND tick_us = ? AND tenant = ? AND outcome = 'claimed' AND owner = ?`,
			string(st.Outcome), st.RunID, st.Reason, sqlstore.Micros(st.Now), st.ConfigID, sqlstore.Micros(st.Tick), st.TenantID, st.Owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRow(`SELECT 1 FROM heartbeat_fires WHERE config_id = ? AND tick_us = ? AND tenant = ?`,
			st.ConfigID, sqlstore.Micros(st.Tick), st.TenantID).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return heartbeat.ErrNotFound
		case err != nil:
			return err
		}
		return fmt.Errorf("%w: the fire is settled or another owner's", heartbeat.ErrConflict)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *ScheduleStore) Stale(ctx context.Context, now time.Time, limit int) ([]heartbeat.Fire, error) {
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE outcome = 'claimed' AND lease_until_us <= ? ORDER BY tick_us, config_id LIMIT ?`,
		sqlstore.Micros(now), sqlstore.Limit(limit, heartbeat.MaxFirePage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: stale heartbeat fires: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBFire)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stale heartbeat fires: %w", err)
	}
	return out, nil
}

func (s *ScheduleStore) Reclaim(ctx context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (heartbeat.Fire, error) {
	var f heartbeat.Fire
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE heartbeat_fires SET owner = ?, lease_until_us = ?, attempts = attempts + 1, updated_us = ?
			WHERE config_id = ? AND tick_us = ? AND tenant = ? AND outcome = 'claimed' AND lease_until_us <= ?`,
			owner, sqlstore.Micros(until), sqlstore.Micros(now), configID, sqlstore.Micros(tick), tenantID, sqlstore.Micros(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return heartbeat.ErrConflict
		}
		f, err = sqlstore.ScanHBFire(tx.QueryRow(`SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires WHERE config_id = ? AND tick_us = ?`,
			configID, sqlstore.Micros(tick)))
		return err
	})
	if err != nil {
		return heartbeat.Fire{}, fmt.Errorf("sqlite: reclaim heartbeat fire %.40q at %v: %w", configID, tick, err)
	}
	return f, nil
}

func (s *ScheduleStore) Fires(ctx context.Context, tenantID, configID string, f heartbeat.FireFilter) ([]heartbeat.Fire, error) {
	order := "ASC"
	if f.Newest {
		order = "DESC"
	}
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE config_id = ? AND tenant = ? AND tick_us >= ? ORDER BY tick_us `+order+` LIMIT ?`,
		configID, tenantID, sqlstore.Micros(f.Since), heartbeat.FireLimit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: heartbeat fires: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanHBFire)
	if err != nil {
		return nil, fmt.Errorf("sqlite: heartbeat fires: %w", err)
	}
	if out == nil {
		out = []heartbeat.Fire{}
	}
	return out, nil
}
