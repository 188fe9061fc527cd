package sqlstore

import (
	"encoding/json"
	"fmt"

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

// HBMovedArgs gives after the key's two: $3 onwards in PostgreSQL's
// numbering, in order in SQLite's.
const HBSetMoved = `next_run_us = ?, last_run_us = ?, missed_total = ?, missed_count = ?, missed_from_us = ?,
	missed_to_us = ?, missed_at_us = ?, version = ?, updated_us = ?`

// HBMovedArgs are the columns a claim changes, next_run_us to updated_us
// in HBConfigCols' order, for r.
func HBMovedArgs(r *heartbeat.Record) []any {
	return []any{Micros(r.NextRunAt), Micros(r.LastRunAt), r.Missed.Total, r.Missed.Count, Micros(r.Missed.From),
		Micros(r.Missed.To), Micros(r.Missed.DetectedAt), r.Version, Micros(r.UpdatedAt)}
}

// CountByStatus reads rows of (status, count).
func CountByStatus(rows Rows) (map[heartbeat.Status]int64, error) {
	out := map[heartbeat.Status]int64{}
	for rows.Next() {
		var (
			st string
			n  int64
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[heartbeat.Status(st)] = n
	}
	return out, rows.Err()
}
