package sqlite

import (
	"context"
	"database/sql"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// ScheduleStore returns the database's store of heartbeat schedules (a
// heartbeat.Store). Its writes go through the database's single writer,
// whose transactions take the file's write lock first: a claim's check
// of the config and its update are one step, in this process or another
// using the file, so of servers racing for a tick exactly one claims it.
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

const (
	getHBSQL  = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE id = ? AND tenant = ?`
	dueHBSQL  = `SELECT ` + sqlstore.HBConfigCols + ` FROM heartbeat_configs WHERE status = 'active' AND next_run_us <= ? ORDER BY next_run_us, id LIMIT ?`
	nextHBSQL = `SELECT MIN(next_run_us) FROM heartbeat_configs WHERE status = 'active'`
)

func (s scheduleSQL) InsertConfig(ctx context.Context, args []any) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the instance alike.
	return s.db.changeOne(ctx, `INSERT INTO heartbeat_configs (`+sqlstore.HBConfigCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, args...)
}

func (s scheduleSQL) Config(ctx context.Context, tenantID, id string) (heartbeat.Record, error) {
	return sqlstore.ScanHBConfig(s.db.queryRow(ctx, getHBSQL, id, tenantID))
}

func (s scheduleSQL) Configs(ctx context.Context, tenantID, instanceID string) ([]heartbeat.Record, error) {
	return queryAll(ctx, s.db.query, sqlstore.ScanHBConfig, `SELECT `+sqlstore.HBConfigCols+` FROM heartbeat_configs
		WHERE tenant = ? AND (? = '' OR instance_id = ?) ORDER BY created_us, id`, tenantID, instanceID, instanceID)
}

func (s scheduleSQL) SetStatus(ctx context.Context, tenantID, id string, st heartbeat.Status, nextUS, nowUS int64) (heartbeat.Record, bool, error) {
	var (
		r       heartbeat.Record
		changed bool
	)
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) (err error) {
		changed, err = affected(tx.Exec(`UPDATE heartbeat_configs SET status = ?, next_run_us = ?, version = version + 1, updated_us = ?
			WHERE id = ? AND tenant = ? AND status <> ?`, string(st), nextUS, nowUS, id, tenantID, string(st)))
		if err != nil {
			return err
		}
		r, err = sqlstore.ScanHBConfig(tx.QueryRow(getHBSQL, id, tenantID))
		return err
	})
	return r, changed, err
}

func (s scheduleSQL) DeleteConfig(ctx context.Context, tenantID, id string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM heartbeat_configs WHERE id = ? AND tenant = ?`, id, tenantID)
}

func (s scheduleSQL) CountConfigs(ctx context.Context) (map[heartbeat.Status]int64, error) {
	rows, err := s.db.query(ctx, `SELECT status, COUNT(*) FROM heartbeat_configs GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.CountBy[heartbeat.Status](rows)
}

func (s scheduleSQL) Due(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Record, error) {
	return queryAll(ctx, s.db.query, sqlstore.ScanHBConfig, dueHBSQL, nowUS, limit)
}

func (s scheduleSQL) NextRun(ctx context.Context) (int64, bool, error) {
	var next sql.NullInt64
	err := s.db.queryRow(ctx, nextHBSQL).Scan(&next)
	return next.Int64, next.Valid, err
}

func (s scheduleSQL) Claim(ctx context.Context, step func(sqlstore.ClaimTx) error) error {
	// The writer's transaction holds the write lock: nothing changes the
	// config between the step's read and its update.
	return s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error { return step(claimTx{tx}) })
}

// claimTx is a claim's transaction.
type claimTx struct{ tx *sql.Tx }

func (t claimTx) Config(_ context.Context, tenantID, id string) (heartbeat.Record, error) {
	return sqlstore.ScanHBConfig(t.tx.QueryRow(getHBSQL, id, tenantID))
}

func (t claimTx) Runs(_ context.Context, configID string, sinceUS int64) (int, error) {
	var n int
	err := t.tx.QueryRow(`SELECT COUNT(*) FROM heartbeat_fires WHERE config_id = ? AND tick_us >= ? AND outcome IN `+
		sqlstore.HBRunsCounted, configID, sinceUS).Scan(&n)
	return n, err
}

func (t claimTx) Move(_ context.Context, r *heartbeat.Record) error {
	_, err := t.tx.Exec(`UPDATE heartbeat_configs SET next_run_us = ?, last_run_us = ?, missed_total = ?, missed_count = ?,
		missed_from_us = ?, missed_to_us = ?, missed_at_us = ?, version = ?, updated_us = ? WHERE id = ?`,
		append(sqlstore.HBMovedArgs(r), r.ID)...)
	return err
}

func (t claimTx) InsertFire(_ context.Context, f *heartbeat.Fire) (bool, error) {
	return affected(t.tx.Exec(`INSERT INTO heartbeat_fires (`+sqlstore.HBFireCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, sqlstore.HBFireArgs(f)...))
}

func (s scheduleSQL) Settle(ctx context.Context, st *heartbeat.Settlement) (bool, error) {
	var settled bool
	tick := sqlstore.Micros(st.Tick)
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) (err error) {
		settled, err = affected(tx.Exec(`UPDATE heartbeat_fires SET outcome = ?, run_id = ?, reason = ?, updated_us = ?
			WHERE config_id = ? AND tick_us = ? AND tenant = ? AND outcome = 'claimed' AND owner = ?`,
			string(st.Outcome), st.RunID, st.Reason, sqlstore.Micros(st.Now), st.ConfigID, tick, st.TenantID, st.Owner))
		if err != nil || settled {
			return err
		}
		var one int
		return tx.QueryRow(`SELECT 1 FROM heartbeat_fires WHERE config_id = ? AND tick_us = ? AND tenant = ?`,
			st.ConfigID, tick, st.TenantID).Scan(&one)
	})
	return settled, err
}

func (s scheduleSQL) Stale(ctx context.Context, nowUS int64, limit int) ([]heartbeat.Fire, error) {
	return queryAll(ctx, s.db.query, sqlstore.ScanHBFire, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE outcome = 'claimed' AND lease_until_us <= ? ORDER BY tick_us, config_id LIMIT ?`, nowUS, limit)
}

func (s scheduleSQL) Reclaim(ctx context.Context, tenantID, configID string, tickUS int64, owner string, nowUS, untilUS int64) (heartbeat.Fire, error) {
	var f heartbeat.Fire
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		switch taken, err := affected(tx.Exec(`UPDATE heartbeat_fires SET owner = ?, lease_until_us = ?, attempts = attempts + 1, updated_us = ?
			WHERE config_id = ? AND tick_us = ? AND tenant = ? AND outcome = 'claimed' AND lease_until_us <= ?`,
			owner, untilUS, nowUS, configID, tickUS, tenantID, nowUS)); {
		case err != nil:
			return err
		case !taken:
			return sql.ErrNoRows
		}
		var err error
		f, err = sqlstore.ScanHBFire(tx.QueryRow(`SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires WHERE config_id = ? AND tick_us = ?`,
			configID, tickUS))
		return err
	})
	return f, err
}

func (s scheduleSQL) Fires(ctx context.Context, tenantID, configID string, sinceUS int64, newest bool, limit int) ([]heartbeat.Fire, error) {
	order := "ASC"
	if newest {
		order = "DESC"
	}
	return queryAll(ctx, s.db.query, sqlstore.ScanHBFire, `SELECT `+sqlstore.HBFireCols+` FROM heartbeat_fires
		WHERE config_id = ? AND tenant = ? AND tick_us >= ? ORDER BY tick_us `+order+` LIMIT ?`,
		configID, tenantID, sinceUS, limit)
}
