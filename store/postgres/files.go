package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// FileStore returns the database's store of the tool gateway's files (a
// tools.FileStore). Any number of replicas may share it. A put or delete
// is one transaction that first locks the tenant's usage row, then reads
// the file's version, checks the condition and the quota, writes the file
// and moves the tenant's totals: the row lock orders every writer of the
// tenant, on any replica, so concurrent puts never take a tenant past its
// quota, and of concurrent conditional puts of one version one wins. The
// statements of each step go in one round trip.
func (db *DB) FileStore() *FileStore { return &FileStore{db} }

// FileStore keeps the tool gateway's files in the database (see
// tools.FileStore).
type FileStore struct{ db *DB }

var _ tools.FileStore = (*FileStore)(nil)

const (
	// lockFileUsageSQL, after ensureFileUsageSQL, locks the tenant's row
	// until the transaction ends.
	ensureFileUsageSQL = `INSERT INTO tool_file_usage (tenant, bytes, files, last_version) VALUES ($1, 0, 0, 0)
		ON CONFLICT (tenant) DO NOTHING`
	lockFileUsageSQL = `SELECT bytes, files, last_version FROM tool_file_usage WHERE tenant = $1 FOR UPDATE`
	fileStateSQL     = `SELECT version, size, created_us FROM tool_files WHERE tenant = $1 AND agent = $2 AND path = $3`
	// upsertFileSQL writes a file; a replace keeps created_us.
	upsertFileSQL = `INSERT INTO tool_files (` + sqlstore.FileInfoCols + `, content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (tenant, agent, path) DO UPDATE SET version = excluded.version, size = excluded.size,
			content_type = excluded.content_type, sha256 = excluded.sha256, updated_us = excluded.updated_us, content = excluded.content`
	setFileUsageSQL = `UPDATE tool_file_usage SET bytes = $2, files = $3, last_version = $4 WHERE tenant = $1`
)

// fileState is what a write reads of the file it changes.
type fileState struct {
	exists                 bool
	version, size, created int64
}

// lockTenant locks the tenant's usage row in tx, creating it when create
// is set, and reads it and the state of the file k names, in one round
// trip. Every statement after the lock sees what the lock's previous
// holder committed (a READ COMMITTED statement takes its snapshot when it
// starts). Without create, a tenant with no row has no files: ok is
// false.
func lockTenant(ctx context.Context, tx pgx.Tx, k tools.FileKey, create bool) (u tools.FileUsage, last int64, old fileState, ok bool, err error) {
	b := &pgx.Batch{}
	if create {
		b.Queue(ensureFileUsageSQL, k.Tenant)
	}
	b.Queue(lockFileUsageSQL, k.Tenant)
	b.Queue(fileStateSQL, k.Tenant, k.Agent, k.Path)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if create {
		if _, err := br.Exec(); err != nil {
			return u, 0, old, false, err
		}
	}
	err = br.QueryRow().Scan(&u.Bytes, &u.Files, &last)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return u, 0, old, false, nil
	case err != nil:
		return u, 0, old, false, err
	}
	err = br.QueryRow().Scan(&old.version, &old.size, &old.created)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return u, 0, old, false, err
	default:
		old.exists = true
	}
	return u, last, old, true, br.Close()
}

func (s *FileStore) Put(ctx context.Context, p tools.FilePut) (tools.FileInfo, error) {
	what := fmt.Sprintf("postgres: put file %q", p.Path)
	fi, err := sqlstore.PrepareFilePut(&p)
	if err != nil {
		return tools.FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		before, last, old, _, err := lockTenant(ctx, tx, p.FileKey, true)
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
		b := &pgx.Batch{}
		b.Queue(upsertFileSQL, fi.Tenant, fi.Agent, fi.Path, fi.Version, fi.Size, fi.ContentType, fi.SHA256,
			sqlstore.Micros(fi.CreatedAt), sqlstore.Micros(fi.UpdatedAt), sqlstore.FileContent(p.Content))
		b.Queue(setFileUsageSQL, p.Tenant, after.Bytes, after.Files, fi.Version)
		return tx.SendBatch(ctx, b).Close()
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
	what := fmt.Sprintf("postgres: get file %q", k.Path)
	if err := k.Validate(); err != nil {
		return tools.File{}, fmt.Errorf("%s: %w", what, err)
	}
	var f tools.File
	var created, updated int64
	err := s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.FileInfoCols+`, content FROM tool_files WHERE tenant = $1 AND agent = $2 AND path = $3`,
		k.Tenant, k.Agent, k.Path).Scan(&f.Tenant, &f.Agent, &f.Path, &f.Version, &f.Size, &f.ContentType, &f.SHA256, &created, &updated, &f.Content)
	if errors.Is(err, pgx.ErrNoRows) {
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
	op := `>=`
	if after {
		op = `>`
	}
	q := `SELECT ` + sqlstore.FileInfoCols + ` FROM tool_files WHERE tenant = $1 AND agent = $2 AND path ` + op + ` $3`
	args := []any{f.Tenant, f.Agent, from}
	if bounded {
		q += ` AND path < $4`
		args = append(args, end)
	}
	args = append(args, sqlstore.Limit(f.Limit, tools.MaxFilePage))
	return q + fmt.Sprintf(` ORDER BY path LIMIT $%d`, len(args)), args
}

func (s *FileStore) List(ctx context.Context, f tools.FileFilter) ([]tools.FileInfo, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("postgres: list files: %w", err)
	}
	q, args := listFilesSQL(&f)
	rows, err := s.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list files: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanFileInfo)
	if err != nil {
		return nil, fmt.Errorf("postgres: list files: %w", err)
	}
	return out, nil
}

func (s *FileStore) Delete(ctx context.Context, k tools.FileKey, ifVersion int64) error {
	what := fmt.Sprintf("postgres: delete file %q", k.Path)
	if err := k.Validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ifVersion < 0 {
		return fmt.Errorf("%s: %w: expected version %d is negative", what, tools.ErrInvalidFile, ifVersion)
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		u, last, old, ok, err := lockTenant(ctx, tx, k, false)
		switch {
		case err != nil:
			return err
		case !ok || !old.exists:
			return tools.ErrFileNotFound
		case ifVersion != 0 && old.version != ifVersion:
			return fmt.Errorf("version %d is not the current %d: %w", ifVersion, old.version, tools.ErrFileConflict)
		}
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM tool_files WHERE tenant = $1 AND agent = $2 AND path = $3`, k.Tenant, k.Agent, k.Path)
		// The tenant's row stays, with its last version.
		b.Queue(setFileUsageSQL, k.Tenant, u.Bytes-old.size, u.Files-1, last)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *FileStore) Usage(ctx context.Context, tenant string) (tools.FileUsage, error) {
	if err := (&tools.FileFilter{Tenant: tenant}).Validate(); err != nil {
		return tools.FileUsage{}, fmt.Errorf("postgres: file usage: %w", err)
	}
	var u tools.FileUsage
	err := s.db.pool.QueryRow(ctx, `SELECT bytes, files FROM tool_file_usage WHERE tenant = $1`, tenant).Scan(&u.Bytes, &u.Files)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return tools.FileUsage{}, fmt.Errorf("postgres: file usage: %w", err)
	}
	return u, nil
}
