package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// indexSource feeds the in-process memory index (store/internal/memindex)
// from the database: memory_partitions holds the counters it checks, the
// memories table the rows it loads. With pgvector the vectors stay in the
// database, which searches them.
type indexSource struct{ db *DB }

func (s indexSource) Counters(ctx context.Context, k memindex.Key) (memindex.Counters, bool, error) {
	var c memindex.Counters
	err := s.db.pool.QueryRow(ctx, `SELECT appended, changed FROM memory_partitions WHERE tenant = $1 AND scope = $2 AND owner = $3`,
		k.Tenant, k.Scope, k.Owner).Scan(&c.Appended, &c.Changed)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

func (s indexSource) Load(ctx context.Context, k memindex.Key, after int64, add func(*memindex.Doc)) error {
	return s.load(ctx, `m.seq > $4 ORDER BY m.seq`, []any{k.Tenant, k.Scope, k.Owner, after}, add)
}

func (s indexSource) LoadSeqs(ctx context.Context, k memindex.Key, seqs []int64, add func(*memindex.Doc)) error {
	return s.load(ctx, `m.seq = ANY($4) ORDER BY m.seq`, []any{k.Tenant, k.Scope, k.Owner, seqs}, add)
}

func (s indexSource) Versions(ctx context.Context, k memindex.Key, fn func(seq int64, id string, version int64)) error {
	rows, err := s.db.pool.Query(ctx, `SELECT seq, id, version FROM memories WHERE tenant = $1 AND scope = $2 AND owner = $3`,
		k.Tenant, k.Scope, k.Owner)
	if err != nil {
		return err
	}
	defer rows.Close()
	return memindex.ScanVersions(rows, fn)
}

// load reads the partition's memories that cond (after the partition's
// three arguments) selects.
func (s indexSource) load(ctx context.Context, cond string, args []any, add func(*memindex.Doc)) error {
	// The vectors are loaded with pgvector too: a query it cannot take is
	// scored by the index.
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.MemoryCols+`, m.model, m.vec FROM memories m
		WHERE m.tenant = $1 AND m.scope = $2 AND m.owner = $3 AND `+cond, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var b []byte
		m, seq, err := sqlstore.ScanMemory(rows, &model, &b)
		if err != nil {
			return err
		}
		memindex.Vector(ctx, s.db.log, seq, m, model, b)
		add(&memindex.Doc{Seq: seq, Memory: *m})
	}
	return rows.Err()
}
