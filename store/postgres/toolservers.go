package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// ToolServerStore returns the database's store of the tool gateway's
// upstream MCP servers (a tools.ServerStore). Any number of replicas may
// share it: a put is one conditional statement, so of the puts that name
// one stored version exactly one succeeds, on any replica.
func (db *DB) ToolServerStore() *ToolServerStore { return &ToolServerStore{db} }

// ToolServerStore keeps upstream MCP servers in the database (see
// tools.ServerStore).
type ToolServerStore struct{ db *DB }

var _ tools.ServerStore = (*ToolServerStore)(nil)

func (s *ToolServerStore) PutServer(ctx context.Context, srv tools.UpstreamServer, expectVersion int64) (tools.UpstreamServer, error) {
	what := "postgres: put tool server " + srv.Name
	if err := tools.PrepareServer(&srv, expectVersion); err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	if !a2astore.ValidText(srv.TenantID) {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w: the tenant holds NUL or invalid UTF-8", what, tools.ErrInvalidServer)
	}
	args, err := sqlstore.ToolServerArgs(&srv)
	if err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	var created int64
	if expectVersion == 0 {
		// A create that finds the key taken inserts nothing.
		err = s.db.pool.QueryRow(ctx, `INSERT INTO tool_servers (`+sqlstore.ToolServerCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant, name) DO NOTHING RETURNING created_us`, args...).Scan(&created)
	} else {
		// args are in ToolServerCols' order: tenant, name, version,
		// created_us, updated_us, sealed_credentials, body. The row lock
		// taken here orders concurrent puts; one that waited checks the
		// version again against the winner's row and updates nothing.
		err = s.db.pool.QueryRow(ctx, `UPDATE tool_servers SET version = $3, updated_us = $4, sealed_credentials = $5, body = $6
			WHERE tenant = $1 AND name = $2 AND version = $7 RETURNING created_us`,
			args[0], args[1], args[2], args[4], args[5], args[6], expectVersion).Scan(&created)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return tools.UpstreamServer{}, fmt.Errorf("%s: version %d is not the stored one: %w", what, expectVersion, tools.ErrConflict)
	case err != nil:
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	srv.CreatedAt = sqlstore.FromMicros(created)
	srv.SealedCredentials = sqlstore.Raw(srv.SealedCredentials)
	return srv, nil
}

func (s *ToolServerStore) GetServer(ctx context.Context, tenantID, name string) (tools.UpstreamServer, error) {
	what := fmt.Sprintf("postgres: get tool server %.40q", name)
	if !a2astore.ValidText(tenantID, name) {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	srv, err := sqlstore.ScanToolServer(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.ToolServerCols+` FROM tool_servers
		WHERE tenant = $1 AND name = $2`, tenantID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrNotFound
	}
	if err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	return srv, nil
}

func (s *ToolServerStore) ListServers(ctx context.Context, tenantID string) ([]tools.UpstreamServer, error) {
	if !a2astore.ValidText(tenantID) {
		return []tools.UpstreamServer{}, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.ToolServerCols+` FROM tool_servers WHERE tenant = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tool servers: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanToolServer)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tool servers: %w", err)
	}
	return out, nil
}

func (s *ToolServerStore) DeleteServer(ctx context.Context, tenantID, name string) error {
	what := fmt.Sprintf("postgres: delete tool server %.40q", name)
	if !a2astore.ValidText(tenantID, name) {
		return fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM tool_servers WHERE tenant = $1 AND name = $2`, tenantID, name)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, tools.ErrNotFound)
	}
	return nil
}
