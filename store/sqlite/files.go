package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// FileStore returns the database's store of the tool gateway's files (a
// tools.FileStore). Its writes go through the database's single writer,
// and a put reads the tenant's usage, the file's version and writes both
// in one step with no other write in between, in this process or in
// another using the file (whose write transaction waits for the file's
// lock): concurrent puts never take a tenant past its quota, and of
// concurrent conditional puts of one version one wins.
func (db *DB) FileStore() *FileStore { return &FileStore{db} }

// FileStore keeps the tool gateway's files in the database (see
// tools.FileStore).
type FileStore struct{ db *DB }

var _ tools.FileStore = (*FileStore)(nil)

const (
	getFileSQL = `SELECT ` + sqlstore.FileInfoCols + `, content FROM tool_files WHERE tenant = ? AND agent = ? AND path = ?`
	// upsertFileSQL writes a file; a replace keeps created_us.
	upsertFileSQL = `INSERT INTO tool_files (` + sqlstore.FileInfoCols + `, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, agent, path) DO UPDATE SET version = excluded.version, size = excluded.size,
			content_type = excluded.content_type, sha256 = excluded.sha256, updated_us = excluded.updated_us, content = excluded.content`
	upsertFileUsageSQL = `INSERT INTO tool_file_usage (tenant, bytes, files, last_version) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant) DO UPDATE SET bytes = excluded.bytes, files = excluded.files, last_version = excluded.last_version`
	fileUsageSQL = `SELECT bytes, files, last_version FROM tool_file_usage WHERE tenant = ?`
	fileStateSQL = `SELECT version, size, created_us FROM tool_files WHERE tenant = ? AND agent = ? AND path = ?`
)

// fileState is what a write reads of the file it changes.
type fileState struct {
	exists                 bool
	version, size, created int64
}

func readFileState(tx *sql.Tx, k tools.FileKey) (fileState, error) {
	var st fileState
	err := tx.QueryRow(fileStateSQL, k.Tenant, k.Agent, k.Path).Scan(&st.version, &st.size, &st.created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fileState{}, nil
	case err != nil:
		return fileState{}, err
	}
	st.exists = true
	return st, nil
}

func (s *FileStore) Put(ctx context.Context, p tools.FilePut) (tools.FileInfo, error) {
	what := fmt.Sprintf("sqlite: put file %q", p.Path)
	fi, err := sqlstore.PrepareFilePut(&p)
	if err != nil {
		return tools.FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The single writer runs these reads and the writes with no other
		// write in between: the checks and the put are one step.
		var before tools.FileUsage
		var last int64
		err := tx.QueryRow(fileUsageSQL, p.Tenant).Scan(&before.Bytes, &before.Files, &last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		old, err := readFileState(tx, p.FileKey)
		if err != nil {
			return err
		}
		if err := checkPutVersion(p.IfVersion, old); err != nil {
			return err
		}
		after := before
		after.Bytes += fi.Size
		if old.exists {
			after.Bytes -= old.size
			fi.CreatedAt = sqlstore.FromMicros(old.created)
		} else {
			after.Files++
		}
		if err := p.Quota.Check(p.Tenant, before, after); err != nil {
			return err
		}
		fi.Version = last + 1
		if _, err := tx.Exec(upsertFileSQL, fi.Tenant, fi.Agent, fi.Path, fi.Version, fi.Size, fi.ContentType, fi.SHA256,
			sqlstore.Micros(fi.CreatedAt), sqlstore.Micros(fi.UpdatedAt), sqlstore.FileContent(p.Content)); err != nil {
			return err
		}
		_, err = tx.Exec(upsertFileUsageSQL, p.Tenant, after.Bytes, after.Files, fi.Version)
		return err
	})
	if err != nil {
		return tools.FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}
	return fi, nil
}

// checkPutVersion checks a put's condition against the file's state.
func checkPutVersion(ifVersion *int64, old fileState) error {
	switch {
	case ifVersion == nil:
		return nil
	case *ifVersion == 0 && old.exists:
		return fmt.Errorf("it exists, at version %d: %w", old.version, tools.ErrFileConflict)
	case *ifVersion != 0 && !old.exists:
		return fmt.Errorf("expected version %d, but it does not exist: %w", *ifVersion, tools.ErrFileConflict)
	case *ifVersion != 0 && old.version != *ifVersion:
		return fmt.Errorf("version %d is not the current %d: %w", *ifVersion, old.version, tools.ErrFileConflict)
	}
	return nil
}

func (s *FileStore) Get(ctx context.Context, k tools.FileKey) (tools.File, error) {
	what := fmt.Sprintf("sqlite: get file %q", k.Path)
	if err := k.Validate(); err != nil {
		return tools.File{}, fmt.Errorf("%s: %w", what, err)
	}
	var f tools.File
	var created, updated int64
	err := s.db.queryRow(ctx, getFileSQL, k.Tenant, k.Agent, k.Path).Scan(&f.Tenant, &f.Agent, &f.Path, &f.Version, &f.Size,
		&f.ContentType, &f.SHA256, &created, &updated, &f.Content)
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrFileNotFound
	}
	if err != nil {
		return tools.File{}, fmt.Errorf("%s: %w", what, err)
	}
	f.CreatedAt, f.UpdatedAt = sqlstore.FromMicros(created), sqlstore.FromMicros(updated)
	f.Content = sqlstore.FileContent(f.Content)
	return f, nil
}

// listFilesSQL is List's statement and arguments for f, which is valid:
// a range of the primary key, read in order.
func listFilesSQL(f *tools.FileFilter) (string, []any) {
	from, after, end, bounded := sqlstore.FilePage(f)
	q := `SELECT ` + sqlstore.FileInfoCols + ` FROM tool_files WHERE tenant = ? AND agent = ? AND path >= ?`
	if after {
		q = `SELECT ` + sqlstore.FileInfoCols + ` FROM tool_files WHERE tenant = ? AND agent = ? AND path > ?`
	}
	args := []any{f.Tenant, f.Agent, from}
	if bounded {
		q += ` AND path < ?`
		args = append(args, end)
	}
	return q + ` ORDER BY path LIMIT ?`, append(args, sqlstore.Limit(f.Limit, tools.MaxFilePage))
}

func (s *FileStore) List(ctx context.Context, f tools.FileFilter) ([]tools.FileInfo, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("sqlite: list files: %w", err)
	}
	q, args := listFilesSQL(&f)
	rows, err := s.db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list files: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanFileInfo)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list files: %w", err)
	}
	return out, nil
}

func (s *FileStore) Delete(ctx context.Context, k tools.FileKey, ifVersion int64) error {
	what := fmt.Sprintf("sqlite: delete file %q", k.Path)
	if err := k.Validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ifVersion < 0 {
		return fmt.Errorf("%s: %w: expected version %d is negative", what, tools.ErrInvalidFile, ifVersion)
	}
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		old, err := readFileState(tx, k)
		switch {
		case err != nil:
			return err
		case !old.exists:
			return tools.ErrFileNotFound
		case ifVersion != 0 && old.version != ifVersion:
			return fmt.Errorf("version %d is not the current %d: %w", ifVersion, old.version, tools.ErrFileConflict)
		}
		if _, err := tx.Exec(`DELETE FROM tool_files WHERE tenant = ? AND agent = ? AND path = ?`, k.Tenant, k.Agent, k.Path); err != nil {
			return err
		}
		// The tenant's row stays, with its last version.
		_, err = tx.Exec(`UPDATE tool_file_usage SET bytes = bytes - ?, files = files - 1 WHERE tenant = ?`, old.size, k.Tenant)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *FileStore) Usage(ctx context.Context, tenant string) (tools.FileUsage, error) {
	if err := (&tools.FileFilter{Tenant: tenant}).Validate(); err != nil {
		return tools.FileUsage{}, fmt.Errorf("sqlite: file usage: %w", err)
	}
	var u tools.FileUsage
	var last int64
	err := s.db.queryRow(ctx, fileUsageSQL, tenant).Scan(&u.Bytes, &u.Files, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return tools.FileUsage{}, fmt.Errorf("sqlite: file usage: %w", err)
	}
	return u, nil
}
