package sqlite

import (
	"context"
	"database/sql"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
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
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+memCols+`, m.model, m.vec FROM memories m
		WHERE m.tenant = ? AND m.scope = ? AND m.owner = ? AND m.seq > ? ORDER BY m.seq`, k.Tenant, k.Scope, k.Owner, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var vec []byte
		m, seq, err := scanMemory(rows, &model, &vec)
		if err != nil {
			return err
		}
		if model != "" {
			if v, err := memory.DecodeVector(vec); err == nil {
				m.Embedding = &memory.Embedding{Model: model, Vector: v}
			} else {
				s.db.log.WarnContext(ctx, "sqlite: a memory's vector is damaged; it is left out of vector search", "seq", seq)
			}
		}
		add(&memindex.Doc{Seq: seq, Memory: *m})
	}
	return rows.Err()
}
