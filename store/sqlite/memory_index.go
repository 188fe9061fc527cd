package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// indexSource feeds the in-process memory index (store/internal/memindex)
// from the database: memory_partitions holds the counters it checks, the
// memories table the rows it loads.
type indexSource struct{ db *DB }

func (s indexSource) Counters(ctx context.Context, k memindex.Key) (memindex.Counters, bool, error) {
	var c memindex.Counters
	err := s.db.r.QueryRowContext(ctx, `SELECT appended, changed FROM memory_partitions WHERE tenant = ? AND scope = ? AND owner = ?`,
		k.Tenant, k.Scope, k.Owner).Scan(&c.Appended, &c.Changed)
	if err == sql.ErrNoRows {
		return c, false, nil
	}
	return c, err == nil, err
}

func (s indexSource) Load(ctx context.Context, k memindex.Key, after int64, add func(*memindex.Doc)) error {
	return s.load(ctx, `m.seq > ? ORDER BY m.seq`, []any{k.Tenant, k.Scope, k.Owner, after}, add)
}

func (s indexSource) LoadSeqs(ctx context.Context, k memindex.Key, seqs []int64, add func(*memindex.Doc)) error {
	const batch = 500 // well under SQLite's bound on parameters
	for len(seqs) > 0 {
		n := min(len(seqs), batch)
		args := []any{k.Tenant, k.Scope, k.Owner}
		for _, seq := range seqs[:n] {
			args = append(args, seq)
		}
		if err := s.load(ctx, `m.seq IN (`+strings.Repeat(",?", n)[1:]+`) ORDER BY m.seq`, args, add); err != nil {
			return err
		}
		seqs = seqs[n:]
	}
	return nil
}

func (s indexSource) Versions(ctx context.Context, k memindex.Key, fn func(seq int64, id string, version int64)) error {
	rows, err := s.db.r.QueryContext(ctx, `SELECT seq, id, version FROM memories WHERE tenant = ? AND scope = ? AND owner = ?`,
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
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+sqlstore.MemoryCols+`, m.model, m.vec FROM memories m
		WHERE m.tenant = ? AND m.scope = ? AND m.owner = ? AND `+cond, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var vec []byte
		m, seq, err := sqlstore.ScanMemory(rows, &model, &vec)
		if err != nil {
			return err
		}
		memindex.Vector(ctx, s.db.log, seq, m, model, vec)
		add(&memindex.Doc{Seq: seq, Memory: *m})
	}
	return rows.Err()
}
