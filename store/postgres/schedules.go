package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// ScheduleStore returns the database's store of heartbeat schedules (a
// heartbeat.Store). Any number of replicas may share it: a create is one
// insert under the one-config-per-instance constraint, and a claim locks
// the config's row, so of replicas racing for a tick exactly one claims
// it and the others find the config moved on.
func (db *DB) ScheduleStore() *ScheduleStore {
	return &ScheduleStore{sqlstore.NewScheduleStore(dialect, scheduleSQL{db})}
}

// ScheduleStore keeps heartbeat configs and their fires in the database
// (see heartbeat.Store).
type ScheduleStore struct{ *scheduleStore }

// scheduleStore is the store both SQL databases share, over scheduleSQL.
type scheduleStore = sqlstore.ScheduleStore

var _ heartbeat.Store = (*ScheduleStore)(nil)

// scheduleSQL is the store's statements in this database's dialect.
type scheduleSQL struct{ db *DB }

const getHBSQL = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE id = $1 AND tenant = $2`

func (s scheduleSQL) InsertConfig(ctx context.Context, args []any) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the instance alike.
	return s.db.changeOne(ctx, `INSERT INTO heartbeat_configs (`+sqlstore.HBConfigCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING`, args...)
}

func (s scheduleSQL) Config(ctx context.Context, tenantID, id string) (heartbeat.Record, error) {
	return sqlstore.ScanHBConfig(s.db.pool.QueryRow(ctx, getHBSQL, id, tenantID))
}

func (s scheduleSQL) Configs(ctx context.Context, tenantID, instanceID string) ([]heartbeat.Record, error) {
	return queryAll(ctx, s.db.pool, sqlstore.ScanHBConfig, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE tenant = $1 AND ($2 = '' OR instance_id = $2) ORDER BY created_us, id`, tenantID, instanceID)
}

func (s scheduleSQL) SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, nextUS, nowUS int64) (heartbeat.Record, bool, error) {
	// The row lock orders concurrent changes; one that waited sees the
	// winner's status and changes nothing when it is the same.
	r, err := sqlstore.ScanHBConfig(s.db.pool.QueryRow(ctx, `UPDATE heartbeat_configs
		SET status = $3, next_run_us = $4, version = version + 1, updated_us = $5
		WHERE id = $1 AND tenant = $2 AND status <> $3 RETURNING `+sqlstore.HBConfigCols,
		id, tenantID, string(st), nextUS, nowUS))
	switch {
	case err == nil:
		return r, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return heartbeat.Record{}, false, err
	}
	r, err = s.Config(ctx, tenantID, id)
	return r, false, err
}

func (s scheduleSQL) DeleteConfig(ctx context.Context, tenantID, id string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM heartbeat_configs WHERE id = $1 AND tenant = $2`, id, tenantID)
}

func (s scheduleSQL) CountConfigs(ctx context.Context) (map[heartbeat.Status]int64, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT status, COUNT(*) FROM heartbeat_configs GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.CountBy[heartbeat.Status](rows)
}

func (s scheduleSQL) Due(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Record, error) {
	return queryAll(ctx, s.db.pool, sqlstore.ScanHBConfig, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE status = 'active' AND next_run_us <= $1 ORDER BY next_run_us, id LIMIT $2`, nowUS, limit)
}

func (s scheduleSQL) NextRun(ctx context.Context) (int64, bool, error) {
	var next *int64
	if err := s.db.pool.QueryRow(ctx, `SELECT MIN(next_run_us) FROM heartbeat_configs WHERE status = 'active'`).Scan(&next); err != nil || next == nil {
		return 0, false, err
	}
	return *next, true, nil
}

func (s scheduleSQL) Claim(ctx context.Context, step func(sqlstore.ClaimTx) error) error {
	return pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error { return step(claimTx{tx}) })
}

// claimTx is a claim's transaction.
type claimTx struct{ tx pgx.Tx }

func (t claimTx) Config(ctx context.Context, tenantID, id string) (heartbeat.Record, error) {
	// FOR UPDATE makes racing claims wait for each other; the one that
	// waited reads the winner's row and finds it moved on.
	return sqlstore.ScanHBConfig(t.tx.QueryRow(ctx, getHBSQL+` FOR UPDATE`, id, tenantID))
}

func (t claimTx) Runs(ctx context.Context, configID string, sinceUS int64) (int, error) {
	var n int
	err := t.tx.QueryRow(ctx, `SELECT COUNT(*) FROM heartbeat_fires WHERE config_id = $1 AND tick_us >= $2 AND outcome IN `+
		sqlstore.HBRunsCounted, configID, sinceUS).Scan(&n)
	return n, err
}

func (t claimTx) Move(ctx context.Context, r *heartbeat.Record) error {
	_, err := t.tx.Exec(ctx, `UPDATE heartbeat_configs SET next_run_us = $1, last_run_us = $2, missed_total = $3,
		missed_count = $4, missed_from_us = $5, missed_to_us = $6, missed_at_us = $7, version = $8, updated_us = $9
		WHERE id = $10`, append(sqlstore.HBMovedArgs(r), r.ID)...)
	return err
}

func (t claimTx) InsertFire(ctx context.Context, f *heartbeat.Fire) (bool, error) {
	tag, err := t.tx.Exec(ctx, `INSERT INTO heartbeat_fires (`+sqlstore.HBFireCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`, sqlstore.HBFireArgs(f)...)
	return tag.RowsAffected() == 1, err
}

func (s scheduleSQL) Settle(ctx context.Context, st *heartbeat.Settlement) (bool, error) {
	tick := sqlstore.Micros(st.Tick)
	tag, err := s.db.pool.Exec(ctx, `UPDATE heartbeat_fires SET outcome = $1, run_id = $2, reason = $3, updated_us = $4
		WHERE config_id = $5 AND tick_us = $6 AND tenant = $7 AND outcome = 'claimed' AND owner = $8`,
		string(st.Outcome), st.RunID, st.Reason, sqlstore.Micros(st.Now), st.ConfigID, tick, st.TenantID, st.Owner)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var one int
	return false, s.db.pool.QueryRow(ctx, `SELECT 1 FROM heartbeat_fires WHERE config_id = $1 AND tick_us = $2 AND tenant = $3`,
		st.ConfigID, tick, st.TenantID).Scan(&one)
}

func (s scheduleSQL) Stale(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Fire, error) {
	return queryAll(ctx, s.db.pool, sqlstore.ScanHBFire, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE outcome = 'claimed' AND lease_until_us <= $1 ORDER BY tick_us, config_id LIMIT $2`, nowUS, limit)
}

func (s scheduleSQL) Reclaim(ctx context.Context, tenantID, configID string, tickUS int64, owner string, nowUS, untilUS int64) (heartbeat.Fire, error) {
	// The row lock orders racing takeovers; one that waited finds the
	// lease renewed and updates nothing.
	return sqlstore.ScanHBFire(s.db.pool.QueryRow(ctx, `UPDATE heartbeat_fires
		SET owner = $1, lease_until_us = $2, attempts = attempts + 1, updated_us = $3
		WHERE config_id = $4 AND tick_us = $5 AND tenant = $6 AND outcome = 'claimed' AND lease_until_us <= $3
		RETURNING `+sqlstore.HBFireCols,
		owner, untilUS, nowUS, configID, tickUS, tenantID))
}

func (s scheduleSQL) Fires(ctx context.Context, tenantID, configID string, sinceUS int64, newest bool, limit int) ([]heartbeat.Fire, error) {
	order := "ASC"
	if newest {
		order = "DESC"
	}
	return queryAll(ctx, s.db.pool, sqlstore.ScanHBFire, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE config_id = $1 AND tenant = $2 AND tick_us >= $3 ORDER BY tick_us `+order+` LIMIT $4`,
		configID, tenantID, sinceUS, limit)
}
