package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// RegistryStore returns the database's agent-registry store (a registry.Store):
// the records of the registry service, keyed by id with unique names.
func (db *DB) RegistryStore() *RegistryStore { return &RegistryStore{db} }

// RegistryStore keeps agent-registry records in the database.
type RegistryStore struct{ db *DB }

var _ registry.Store = (*RegistryStore)(nil)

// uniqueViolation is PostgreSQL's SQLSTATE for a unique constraint.
const uniqueViolation = "23505"

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == uniqueViolation
}

func (s *RegistryStore) Create(ctx context.Context, a *registry.Agent) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("postgres: create agent %s: %w", a.Name, err)
	}
	if !a2astore.ValidText(a.ID, a.Name) {
		return fmt.Errorf("postgres: create agent: id or name is not valid text: %w", registry.ErrInvalid)
	}
	_, err = s.db.pool.Exec(ctx, `INSERT INTO registry_agents (id, name, body) VALUES ($1, $2, $3)`, a.ID, a.Name, body)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: create agent %s: %w", a.Name, registry.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("postgres: create agent %s: %w", a.Name, err)
	}
	return nil
}

func (s *RegistryStore) Update(ctx context.Context, a *registry.Agent) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("postgres: update agent %s: %w", a.ID, err)
	}
	if !a2astore.ValidText(a.ID, a.Name) {
		return fmt.Errorf("postgres: update agent %s: %w", a.ID, registry.ErrNotFound)
	}
	tag, err := s.db.pool.Exec(ctx, `UPDATE registry_agents SET name = $2, body = $3 WHERE id = $1`, a.ID, a.Name, body)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: update agent %s: name %s: %w", a.ID, a.Name, registry.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("postgres: update agent %s: %w", a.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update agent %s: %w", a.ID, registry.ErrNotFound)
	}
	return nil
}

func (s *RegistryStore) Delete(ctx context.Context, id string) error {
	if !a2astore.ValidText(id) {
		return fmt.Errorf("postgres: delete agent %s: %w", id, registry.ErrNotFound)
	}
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM registry_agents WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete agent %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: delete agent %s: %w", id, registry.ErrNotFound)
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
	notFound := fmt.Errorf("postgres: get agent %s: %w", key, registry.ErrNotFound)
	if !a2astore.ValidText(key) {
		return nil, notFound
	}
	var body []byte
	err := s.db.pool.QueryRow(ctx, `SELECT body FROM registry_agents WHERE `+col+` = $1`, key).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get agent %s: %w", key, err)
	}
	a, err := sqlstore.DecodeAgent(body)
	if err != nil {
		return nil, fmt.Errorf("postgres: get agent %s: %w", key, err)
	}
	return a, nil
}

func (s *RegistryStore) List(ctx context.Context, after string, limit int) ([]*registry.Agent, error) {
	if !a2astore.ValidText(after) {
		return nil, fmt.Errorf("postgres: list agents: %w", registry.ErrBadPageToken)
	}
	rows, err := s.db.pool.Query(ctx,
		`SELECT body FROM registry_agents WHERE name > $1 ORDER BY name LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list agents: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanBodies(rows, sqlstore.DecodeAgent)
	if err != nil {
		return nil, fmt.Errorf("postgres: list agents: %w", err)
	}
	return out, nil
}

func (s *RegistryStore) Version(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.pool.QueryRow(ctx, `SELECT version FROM registry_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: registry version: %w", err)
	}
	return v, nil
}
