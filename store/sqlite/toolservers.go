package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// ToolServerStore returns the database's store of the tool gateway's
// upstream MCP servers (a tools.ServerStore). Its writes go through the
// database's single writer, so a put's compare of the stored version and
// its write are one step, in this process or another using the file.
func (db *DB) ToolServerStore() *ToolServerStore { return &ToolServerStore{db} }

// ToolServerStore keeps upstream MCP servers in the database (see
// tools.ServerStore).
type ToolServerStore struct{ db *DB }

var _ tools.ServerStore = (*ToolServerStore)(nil)

const getToolServerSQL = `SELECT ` + sqlstore.ToolServerCols + ` FROM tool_servers WHERE tenant = ? AND name = ?`

func (s *ToolServerStore) PutServer(ctx context.Context, srv tools.UpstreamServer, expectVersion int64) (tools.UpstreamServer, error) {
	what := "sqlite: put tool server " + srv.Name
	if err := tools.PrepareServer(&srv, expectVersion); err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		// The single writer runs this read and the write with no other
		// write in between: the compare and the set are one step.
		var stored, created int64
		err := tx.QueryRow(`SELECT version, created_us FROM tool_servers WHERE tenant = ? AND name = ?`, srv.TenantID, srv.Name).
			Scan(&stored, &created)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if stored != expectVersion {
			return fmt.Errorf("version %d is not the stored %d: %w", expectVersion, stored, tools.ErrConflict)
		}
		if expectVersion > 0 {
			srv.CreatedAt = sqlstore.FromMicros(created)
		}
		args, err := sqlstore.ToolServerArgs(&srv)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO tool_servers (`+sqlstore.ToolServerCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version, updated_us = excluded.updated_us,
			sealed_credentials = excluded.sealed_credentials, body = excluded.body`, args...)
		return err
	})
	if err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	srv.SealedCredentials = sqlstore.Raw(srv.SealedCredentials)
	return srv, nil
}

func (s *ToolServerStore) GetServer(ctx context.Context, tenantID, name string) (tools.UpstreamServer, error) {
	srv, err := sqlstore.ScanToolServer(s.db.queryRow(ctx, getToolServerSQL, tenantID, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrNotFound
	}
	if err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("sqlite: get tool server %.40q: %w", name, err)
	}
	return srv, nil
}

func (s *ToolServerStore) ListServers(ctx context.Context, tenantID string) ([]tools.UpstreamServer, error) {
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.ToolServerCols+` FROM tool_servers WHERE tenant = ? ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tool servers: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanToolServer)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tool servers: %w", err)
	}
	return out, nil
}

func (s *ToolServerStore) DeleteServer(ctx context.Context, tenantID, name string) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM tool_servers WHERE tenant = ? AND name = ?`, tenantID, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return tools.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete tool server %.40q: %w", name, err)
	}
	return nil
}
