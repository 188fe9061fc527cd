package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// The memory writes every write or forget makes, prepared once on the
// write connection (writer.exec).
const (
	insertMemorySQL = `INSERT INTO memories (tenant, id, scope, owner, content, type, tags, source, conversation_id,
		classification, confidence, custom, version, created_ms, updated_ms, expires_ms, write_event_id, model, vec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, id) DO NOTHING`
	findKeySQL = `SELECT request, result_id, scope, event_id, count, durable, created_ms FROM memory_keys
		WHERE tenant = ? AND kind = ? AND agent = ? AND run = ? AND key = ? AND created_ms > ?`
	appendedSQL = `INSERT INTO memory_partitions (tenant, scope, owner, appended) VALUES (?, ?, ?, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET appended = appended + 1`
	changedSQL = `INSERT INTO memory_partitions (tenant, scope, owner, changed) VALUES (?, ?, ?, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET changed = changed + 1`
	putKeySQL = `INSERT OR REPLACE INTO memory_keys (tenant, kind, agent, run, key, request, result_id, scope, event_id,
		count, durable, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// memoryWrites are the statements Open prepares for the memory store.
var memoryWrites = []string{insertMemorySQL, putKeySQL, appendedSQL, changedSQL}

// MemoryStore returns the database's memory store.
func (db *DB) MemoryStore() *MemoryStore { return &MemoryStore{db} }

// MemoryStore keeps the memory service's data in the database (see
// memory.Store). Vector search scans the partition's vectors of the
// query's model in the database and keeps the best in process.
type MemoryStore struct{ db *DB }

var (
	_ memory.Store         = (*MemoryStore)(nil)
	_ memory.IndexReporter = (*MemoryStore)(nil)
)

func nullFloat(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// keyUse is the first use of an idempotency key.
type keyUse struct {
	res   memory.WriteResult
	count int
}

// findKey returns the first use of an idempotency key still inside its
// window at now; ok is false when there is none. A use for another
// request is memory.ErrKeyReused.
func findKey(tx *sql.Tx, tenant, kind string, k memory.Key, now time.Time) (u keyUse, ok bool, err error) {
	var request, scope string
	var cms int64
	err = tx.QueryRow(findKeySQL, tenant, kind, k.Agent, k.Run, k.Name, sqlstore.Millis(now.Add(-memory.IdempotencyWindow))).
		Scan(&request, &u.res.MemoryID, &scope, &u.res.WriteEventID, &u.count, &u.res.Durable, &cms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return keyUse{}, false, nil
	case err != nil:
		return keyUse{}, false, err
	case request != k.Request:
		return keyUse{}, false, memory.ErrKeyReused
	}
	u.res.Scope, u.res.CreatedAt = memory.Scope(scope), sqlstore.FromMillis(cms)
	return u, true, nil
}

// putKey records the first use of an idempotency key.
func (s *MemoryStore) putKey(tx *sql.Tx, tenant, kind string, k memory.Key, res memory.WriteResult, count int, at time.Time) error {
	_, err := s.db.wr.exec(tx, putKeySQL, tenant, kind, k.Agent, k.Run, k.Name, k.Request, res.MemoryID, string(res.Scope),
		res.WriteEventID, count, res.Durable, sqlstore.Millis(at))
	return err
}

func (s *MemoryStore) insert(tx *sql.Tx, tenant string, m *memory.Memory) error {
	var model string
	var vec []byte
	if m.Embedding != nil {
		model, vec = m.Embedding.Model, memory.EncodeVector(m.Embedding.Vector)
	}
	res, err := s.db.wr.exec(tx, insertMemorySQL, tenant, m.ID, string(m.Partition.Scope), m.Partition.Owner, m.Content,
		string(m.Type), memory.JoinTags(m.Tags), m.Source, m.ConversationID, m.Classification, nullFloat(m.Confidence),
		nullBytes(m.Custom), m.Version, sqlstore.Millis(m.CreatedAt), sqlstore.Millis(m.UpdatedAt), sqlstore.Millis(m.ExpiresAt), m.WriteEventID, model, vec)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return orSentinel(err, memory.ErrExists)
	}
	_, err = s.db.wr.exec(tx, appendedSQL, tenant, string(m.Partition.Scope), m.Partition.Owner)
	return err
}

func (s *MemoryStore) Put(ctx context.Context, tenant string, m *memory.Memory, key memory.Key) (memory.WriteResult, bool, error) {
	if m.Version == 0 {
		m.Version = 1
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	res, replayed := m.Result(), false
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, replayed = m.Result(), false
		if key.Name != "" {
			u, ok, err := findKey(tx, tenant, "write", key, m.CreatedAt)
			if err != nil {
				return err
			}
			if ok {
				res, replayed = u.res, true
				return nil
			}
		}
		if err := s.insert(tx, tenant, m); err != nil {
			return err
		}
		if key.Name == "" {
			return nil
		}
		return s.putKey(tx, tenant, "write", key, res, 0, m.CreatedAt)
	})
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("sqlite: put memory %s: %w", m.ID, err)
	}
	return res, replayed, nil
}

func (s *MemoryStore) Get(ctx context.Context, tenant, id string, now time.Time) (*memory.Memory, error) {
	row := s.db.r.QueryRowContext(ctx, `SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE m.tenant = ? AND m.id = ?
		AND (m.expires_ms = 0 OR m.expires_ms > ?)`, tenant, id, sqlstore.Millis(now))
	m, _, err := sqlstore.ScanMemory(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get memory %s: %w", id, err)
	}
	return m, nil
}

func (s *MemoryStore) Update(ctx context.Context, tenant string, p memory.Partition, id string, version int64, c memory.Change) (*memory.Memory, error) {
	var out *memory.Memory
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		m, seq, err := sqlstore.ScanMemory(tx.QueryRow(`SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE m.tenant = ? AND m.id = ?
			AND m.scope = ? AND m.owner = ? AND (m.expires_ms = 0 OR m.expires_ms > ?)`,
			tenant, id, string(p.Scope), p.Owner, sqlstore.Millis(c.Now)))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if m.Version != version {
			return fmt.Errorf("version %d is not the current %d: %w", version, m.Version, memory.ErrConflict)
		}
		m.Apply(c)
		var model string
		var vec []byte
		if c.Embedding != nil {
			model, vec = c.Embedding.Model, memory.EncodeVector(c.Embedding.Vector)
		}
		if _, err := tx.Exec(`UPDATE memories SET content = ?, tags = ?, confidence = ?, custom = ?, version = ?,
			updated_ms = ?, model = CASE WHEN ? THEN ? ELSE model END, vec = CASE WHEN ? THEN ? ELSE vec END
			WHERE seq = ?`,
			m.Content, memory.JoinTags(m.Tags), nullFloat(m.Confidence), nullBytes(m.Custom), m.Version, sqlstore.Millis(m.UpdatedAt),
			c.Embedding != nil, model, c.Embedding != nil, vec, seq); err != nil {
			return err
		}
		// Searches return the stored memory from the index: any change
		// to it must reach the index, not only a new vector.
		if _, err := s.db.wr.exec(tx, changedSQL, tenant, string(p.Scope), p.Owner); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: update memory %s: %w", id, err)
	}
	return out, nil
}

func (s *MemoryStore) Forget(ctx context.Context, tenant string, p memory.Partition, id string, a memory.Audit) (memory.ForgetResult, bool, error) {
	var res memory.ForgetResult
	var replayed bool
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, replayed = memory.ForgetResult{}, false
		if a.Key.Name != "" {
			u, ok, err := findKey(tx, tenant, "forget", a.Key, a.At)
			if err != nil {
				return err
			}
			if ok {
				res, replayed = memory.ForgetResult{DeletedCount: u.count, DeleteEventID: u.res.WriteEventID}, true
				return nil
			}
		}
		var seq int64
		err := tx.QueryRow(`SELECT seq FROM memories WHERE tenant = ? AND id = ? AND scope = ? AND owner = ?`,
			tenant, id, string(p.Scope), p.Owner).Scan(&seq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if _, err := tx.Exec(`DELETE FROM memories WHERE seq = ?`, seq); err != nil {
				return err
			}
			if _, err := s.db.wr.exec(tx, changedSQL, tenant, string(p.Scope), p.Owner); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO memory_audit (tenant, event_id, action, memory_id, scope, owner, actor, reason, at_ms)
				VALUES (?, ?, 'forget', ?, ?, ?, ?, ?, ?)`,
				tenant, a.EventID, id, string(p.Scope), p.Owner, a.Actor, a.Reason, sqlstore.Millis(a.At)); err != nil {
				return err
			}
			res = memory.ForgetResult{DeletedCount: 1, DeleteEventID: a.EventID}
		}
		if a.Key.Name == "" {
			return nil
		}
		return s.putKey(tx, tenant, "forget", a.Key,
			memory.WriteResult{MemoryID: id, Scope: p.Scope, WriteEventID: res.DeleteEventID, Durable: true}, res.DeletedCount, a.At)
	})
	if err != nil {
		return memory.ForgetResult{}, false, fmt.Errorf("sqlite: forget memory %s: %w", id, err)
	}
	return res, replayed, nil
}

// filterSQL is the WHERE clause selecting f's memories of tenant (on
// alias m) and its arguments.
func filterSQL(tenant string, f memory.Filter) (string, []any) {
	var b strings.Builder
	// The unary + keeps the planner from answering the OR with the
	// expiry index (a union of two searches, then a sort), which turned
	// a neighbour lookup into a sort of the whole partition.
	b.WriteString(`m.tenant = ? AND m.scope = ? AND m.owner = ? AND (+m.expires_ms = 0 OR +m.expires_ms > ?)`)
	args := []any{tenant, string(f.Partition.Scope), f.Partition.Owner, sqlstore.Millis(f.Now)}
	if f.Type != "" {
		b.WriteString(` AND m.type = ?`)
		args = append(args, string(f.Type))
	}
	if f.ConversationID != "" {
		b.WriteString(` AND m.conversation_id = ?`)
		args = append(args, f.ConversationID)
	}
	for _, t := range f.Tags {
		b.WriteString(` AND instr(m.tags, ?) > 0`)
		args = append(args, memory.TagPattern(t))
	}
	if !f.After.IsZero() {
		b.WriteString(` AND m.created_ms > ?`)
		args = append(args, sqlstore.Millis(f.After))
	}
	if !f.Before.IsZero() {
		b.WriteString(` AND m.created_ms < ?`)
		args = append(args, sqlstore.Millis(f.Before))
	}
	if f.Classification != "" {
		b.WriteString(` AND m.classification = ?`)
		args = append(args, f.Classification)
	}
	return b.String(), args
}

func (s *MemoryStore) List(ctx context.Context, tenant string, f memory.Filter, limit int) ([]memory.Memory, error) {
	where, args := filterSQL(tenant, f)
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE `+where+
		` ORDER BY m.created_ms DESC, m.seq DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories: %w", err)
	}
	out, err := scanMemories(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories: %w", err)
	}
	return out, nil
}

func (s *MemoryStore) SearchKeyword(ctx context.Context, tenant string, f memory.Filter, terms []string, limit int) ([]memory.Hit, error) {
	hits, err := s.db.index.Keyword(ctx, memindex.KeyOf(tenant, f.Partition), f, terms, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: keyword search: %w", err)
	}
	return hits, nil
}

func (s *MemoryStore) SearchVector(ctx context.Context, tenant string, f memory.Filter, q memory.Embedding, limit int) ([]memory.Hit, error) {
	hits, err := s.db.index.Vector(ctx, memindex.KeyOf(tenant, f.Partition), f, q, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	return hits, nil
}

func scanMemories(rows *sql.Rows) ([]memory.Memory, error) {
	defer rows.Close()
	var out []memory.Memory
	for rows.Next() {
		m, _, err := sqlstore.ScanMemory(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, rows.Err()
}

// IndexStats implements memory.IndexReporter: what the process's memory
// index holds, shared by every handle on this database.
func (s *MemoryStore) IndexStats() memory.IndexStats {
	st := s.db.index.Stats()
	return memory.IndexStats{Partitions: st.Partitions, Memories: st.Memories, Bytes: st.Bytes}
}

func (s *MemoryStore) TermStats(ctx context.Context, tenant string, p memory.Partition, terms []string) (int, map[string]int, error) {
	docs, df, err := s.db.index.TermStats(ctx, memindex.KeyOf(tenant, p), terms)
	if err != nil {
		return 0, nil, fmt.Errorf("sqlite: term statistics: %w", err)
	}
	return docs, df, nil
}

func (s *MemoryStore) Adjacent(ctx context.Context, tenant string, f memory.Filter, ids []string) (map[string][]memory.Memory, error) {
	near, err := s.db.index.Adjacent(ctx, memindex.KeyOf(tenant, f.Partition), f, ids)
	if err != nil {
		return nil, fmt.Errorf("sqlite: adjacent memories: %w", err)
	}
	return near, nil
}
