package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// PushConfigStore returns the database's push-notification config store.
// Configs are keyed by scope, task id and config id.
func (db *DB) PushConfigStore() a2asrv.PushConfigStore { return &pushConfigStore{db} }

type pushConfigStore struct{ db *DB }

var _ a2asrv.PushConfigStore = (*pushConfigStore)(nil)

func (s *pushConfigStore) Put(ctx context.Context, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) error {
	body, err := a2astore.EncodeConfig(scope.Tenant, scope.Owner, cfg)
	if err != nil {
		return fmt.Errorf("sqlite: put push config: %w", err)
	}
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error { return s.put(tx, scope, cfg, body) })
	if err != nil {
		return fmt.Errorf("sqlite: put push config %s/%s: %w", cfg.TaskID, cfg.ID, err)
	}
	return nil
}

func (s *pushConfigStore) Get(ctx context.Context, scope a2asrv.Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	var body []byte
	err := s.db.r.QueryRowContext(ctx, `
		SELECT body FROM a2a_push_configs WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?`,
		scope.Tenant, scope.Owner, taskID, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get push config %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get push config %s/%s: %w", taskID, id, err)
	}
	c, err := a2astore.DecodeConfig(body)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get push config %s/%s: %w", taskID, id, err)
	}
	return c, nil
}

func (s *pushConfigStore) List(ctx context.Context, scope a2asrv.Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	after := ""
	if pageToken != "" {
		id, err := a2astore.ParseID(pageToken)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: list push configs: %w", a2asrv.ErrBadPageToken)
		}
		after = id
	}
	limit := a2astore.Limit(pageSize)
	rows, err := s.db.r.QueryContext(ctx, `
		SELECT body FROM a2a_push_configs
		WHERE tenant = ? AND owner = ? AND task_id = ? AND id > ?
		ORDER BY id LIMIT ?`,
		scope.Tenant, scope.Owner, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list push configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanBodies(rows, a2astore.DecodeConfig)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list push configs: %w", err)
	}
	// One row more than the page was asked for: its presence says there
	// is a next page, which starts after the last config kept.
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = a2astore.IDToken(out[limit-1].ID)
	}
	return out, next, nil
}

func (s *pushConfigStore) Delete(ctx context.Context, scope a2asrv.Scope, taskID, id string) error {
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM a2a_push_configs WHERE tenant = ? AND owner = ? AND task_id = ? AND id = ?`,
			scope.Tenant, scope.Owner, taskID, id); err != nil {
			return err
		}
		return dropStream(s.db.wr, tx, scope, taskID, id)
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete push config %s/%s: %w", taskID, id, err)
	}
	return nil
}
