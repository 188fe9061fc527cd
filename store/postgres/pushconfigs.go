package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
		return fmt.Errorf("postgres: put push config: %w", err)
	}
	if err := s.put(ctx, scope, cfg, body); err != nil {
		return fmt.Errorf("postgres: put push config %s/%s: %w", cfg.TaskID, cfg.ID, err)
	}
	return nil
}

func (s *pushConfigStore) Get(ctx context.Context, scope a2asrv.Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	notFound := fmt.Errorf("postgres: get push config %s/%s: %w", taskID, id, a2asrv.ErrNotFound)
	if !a2astore.ValidText(scope.Tenant, scope.Owner, taskID, id) {
		return nil, notFound
	}
	var body []byte
	err := s.db.pool.QueryRow(ctx, `
		SELECT body FROM a2a_push_configs WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4`,
		scope.Tenant, scope.Owner, taskID, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get push config %s/%s: %w", taskID, id, err)
	}
	c, err := a2astore.DecodeConfig(body)
	if err != nil {
		return nil, fmt.Errorf("postgres: get push config %s/%s: %w", taskID, id, err)
	}
	return c, nil
}

func (s *pushConfigStore) List(ctx context.Context, scope a2asrv.Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	after := ""
	if pageToken != "" {
		id, err := a2astore.ParseID(pageToken)
		if err != nil {
			return nil, "", fmt.Errorf("postgres: list push configs: %w", a2asrv.ErrBadPageToken)
		}
		after = id
	}
	if !a2astore.ValidText(scope.Tenant, scope.Owner, taskID) {
		return nil, "", nil
	}
	limit := a2astore.Limit(pageSize)
	rows, err := s.db.pool.Query(ctx, `
		SELECT body FROM a2a_push_configs
		WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id > $4
		ORDER BY id LIMIT $5`,
		scope.Tenant, scope.Owner, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list push configs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanBodies(rows, a2astore.DecodeConfig)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list push configs: %w", err)
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
	if !a2astore.ValidText(scope.Tenant, scope.Owner, taskID, id) {
		return nil
	}
	// As for a task, the notifications go in a statement of their own.
	err := s.db.batch(ctx, func(b *pgx.Batch) {
		b.Queue(`DELETE FROM a2a_push_configs WHERE tenant = $1 AND owner = $2 AND task_id = $3 AND id = $4`,
			scope.Tenant, scope.Owner, taskID, id)
		b.Queue(dropStreamSQL, taskID, scope.Tenant, scope.Owner, id)
	})
	if err != nil {
		return fmt.Errorf("postgres: delete push config %s/%s: %w", taskID, id, err)
	}
	return nil
}
