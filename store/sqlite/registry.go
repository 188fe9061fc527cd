package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// RegistryStore returns the database's agent-registry store (a registry.Store):
// the records of the registry service, keyed by id with unique names.
func (db *DB) RegistryStore() *RegistryStore { return &RegistryStore{db} }

// RegistryStore keeps agent-registry records in the database.
type RegistryStore struct{ db *DB }

var _ registry.Store = (*RegistryStore)(nil)

func (s *RegistryStore) Create(ctx context.Context, a *registry.Agent) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("sqlite: create agent %s: %w", a.Name, err)
	}
	err = s.db.wr.do(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM registry_agents WHERE id = ? OR name = ?`, a.ID, a.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return registry.ErrExists
		}
		_, err := tx.Exec(`INSERT INTO registry_agents (id, name, body) VALUES (?, ?, ?)`, a.ID, a.Name, body)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: create agent %s: %w", a.Name, err)
	}
	return nil
}

func (s *RegistryStore) Update(ctx context.Context, a *registry.Agent) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("sqlite: update agent %s: %w", a.ID, err)
	}
	err = s.db.wr.do(ctx, func(tx *sql.Tx) error {
		var other string
		err := tx.QueryRow(`SELECT id FROM registry_agents WHERE name = ? AND id <> ?`, a.Name, a.ID).Scan(&other)
		if err == nil {
			return fmt.Errorf("name %s: %w", a.Name, registry.ErrExists)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec(`UPDATE registry_agents SET name = ?, body = ? WHERE id = ?`, a.Name, body, a.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return registry.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: update agent %s: %w", a.ID, err)
	}
	return nil
}

func (s *RegistryStore) Delete(ctx context.Context, id string) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM registry_agents WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return registry.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete agent %s: %w", id, err)
	}
	return nil
}

func (s *RegistryStore) Get(ctx context.Context, id string) (*registry.Agent, error) {
	return s.getBy(ctx, "id", id)
}

func (s *RegistryStore) GetByName(ctx context.Context, name string) (*registry.Agent, error) {
	return s.getBy(ctx, "name", name)
}

func (s *RegistryStore) getBy(ctx context.Context, col, key string) (*registry.Agent, error) {
	var body []byte
	err := s.db.r.QueryRowContext(ctx, `SELECT body FROM registry_agents WHERE `+col+` = ?`, key).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get agent %s: %w", key, registry.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get agent %s: %w", key, err)
	}
	a, err := sqlstore.DecodeAgent(body)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get agent %s: %w", key, err)
	}
	return a, nil
}

func (s *RegistryStore) List(ctx context.Context, after string, limit int) ([]*registry.Agent, error) {
	rows, err := s.db.r.QueryContext(ctx,
		`SELECT body FROM registry_agents WHERE name > ? ORDER BY name LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanBodies(rows, sqlstore.DecodeAgent)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents: %w", err)
	}
	return out, nil
}

func (s *RegistryStore) Version(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.r.QueryRowContext(ctx, `SELECT version FROM registry_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: registry version: %w", err)
	}
	return v, nil
}
