package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// MemoryStore returns the database's memory store.
func (db *DB) MemoryStore() *MemoryStore { return &MemoryStore{db} }

// MemoryStore keeps the memory service's data in the database (see
// memory.Store). Keyword search, term statistics and conversation
// neighbours come from the in-process partition index
// (store/internal/memindex, kept exact by the memory_partitions counters),
// as in the SQLite store. Vector search goes through pgvector when the
// server has it (memory_vector.go); without it, the index scores the
// partition's vectors in the process.
type MemoryStore struct{ db *DB }

var (
	_ memory.Store         = (*MemoryStore)(nil)
	_ memory.IndexReporter = (*MemoryStore)(nil)
)

// errBadText: PostgreSQL text holds neither NUL nor invalid UTF-8, so such
// a value can name nothing stored and cannot be stored.
var errBadText = fmt.Errorf("text with NUL or invalid UTF-8: %w", memory.ErrInvalid)

func memText(m *memory.Memory) bool {
	return a2astore.ValidText(m.ID, m.Partition.Owner, m.Content, m.Source, m.ConversationID, m.Classification,
		m.WriteEventID, memory.JoinTags(m.Tags))
}

// claimKey takes an idempotency key for this transaction: true when the
// caller now owns it (new, or its previous use is past the window), false
// when a use inside the window holds it (a concurrent first use is waited
// for by the unique index).
func claimKey(ctx context.Context, tx pgx.Tx, tenant, kind string, k memory.Key, r memory.WriteResult, count int, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO memory_keys (tenant, kind, agent, run, key, request, result_id, scope, event_id,
			count, durable, created_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (tenant, kind, agent, run, key) DO UPDATE SET request = EXCLUDED.request,
			result_id = EXCLUDED.result_id, scope = EXCLUDED.scope, event_id = EXCLUDED.event_id,
			count = EXCLUDED.count, durable = EXCLUDED.durable, created_ms = EXCLUDED.created_ms
		WHERE memory_keys.created_ms <= $13`,
		tenant, kind, k.Agent, k.Run, k.Name, k.Request, r.MemoryID, string(r.Scope), r.WriteEventID, count, r.Durable,
		sqlstore.Millis(now), sqlstore.Millis(now.Add(-memory.IdempotencyWindow)))
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// firstResult returns the result of the use of k that holds it, or
// memory.ErrKeyReused when that use was for another request.
func firstResult(ctx context.Context, tx pgx.Tx, tenant, kind string, k memory.Key) (r memory.WriteResult, count int, err error) {
	var request, scope string
	var cms int64
	err = tx.QueryRow(ctx, `SELECT request, result_id, scope, event_id, count, durable, created_ms FROM memory_keys
		WHERE tenant = $1 AND kind = $2 AND agent = $3 AND run = $4 AND key = $5`, tenant, kind, k.Agent, k.Run, k.Name).
		Scan(&request, &r.MemoryID, &scope, &r.WriteEventID, &count, &r.Durable, &cms)
	if err != nil {
		return memory.WriteResult{}, 0, err
	}
	if request != k.Request {
		return memory.WriteResult{}, 0, memory.ErrKeyReused
	}
	r.Scope, r.CreatedAt = memory.Scope(scope), sqlstore.FromMillis(cms)
	return r, count, nil
}

// validKey reports whether k can be stored as PostgreSQL text.
func validKey(k memory.Key) bool { return a2astore.ValidText(k.Name, k.Agent, k.Run, k.Request) }

// insertMemory inserts m; withEmbedding says memories.embedding exists
// (pgvector) and is written too.
func insertMemory(ctx context.Context, tx pgx.Tx, tenant string, m *memory.Memory, withEmbedding bool) error {
	var model string
	var vec []byte
	if m.Embedding != nil {
		model, vec = m.Embedding.Model, memory.EncodeVector(m.Embedding.Vector)
	}
	var custom []byte
	if len(m.Custom) > 0 {
		custom = m.Custom
	}
	// The counter first: its row lock, held to commit, makes the
	// partition's appends take their seqs in commit order, which the
	// memory index relies on to load only what is new.
	if _, err := tx.Exec(ctx, `INSERT INTO memory_partitions (tenant, scope, owner, appended) VALUES ($1, $2, $3, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET appended = memory_partitions.appended + 1`,
		tenant, string(m.Partition.Scope), m.Partition.Owner); err != nil {
		return err
	}
	cols, vals := "", ""
	args := []any{tenant, m.ID, string(m.Partition.Scope), m.Partition.Owner, m.Content, string(m.Type), memory.JoinTags(m.Tags),
		m.Source, m.ConversationID, m.Classification, m.Confidence, custom, m.Version, sqlstore.Millis(m.CreatedAt), sqlstore.Millis(m.UpdatedAt),
		sqlstore.Millis(m.ExpiresAt), m.WriteEventID, model, vec}
	if withEmbedding {
		cols, vals = ", embedding", ", $20::text::vector"
		args = append(args, embeddingArg(m.Embedding))
	}
	tag, err := tx.Exec(ctx, `INSERT INTO memories (tenant, id, scope, owner, content, type, tags, source, conversation_id,
		classification, confidence, custom, version, created_ms, updated_ms, expires_ms, write_event_id, model, vec`+cols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19`+vals+`)
		ON CONFLICT (tenant, id) DO NOTHING`, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return memory.ErrExists
	}
	return nil
}

func (s *MemoryStore) Put(ctx context.Context, tenant string, m *memory.Memory, key memory.Key) (memory.WriteResult, bool, error) {
	if m.Version == 0 {
		m.Version = 1
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	if !memText(m) || !a2astore.ValidText(tenant) || !validKey(key) {
		return memory.WriteResult{}, false, fmt.Errorf("postgres: put memory: %w", errBadText)
	}
	var res memory.WriteResult
	var replayed bool
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		res, replayed = m.Result(), false
		if key.Name != "" {
			own, err := claimKey(ctx, tx, tenant, "write", key, res, 0, m.CreatedAt)
			if err != nil {
				return err
			}
			if !own {
				res, _, err = firstResult(ctx, tx, tenant, "write", key)
				replayed = true
				return err
			}
		}
		return insertMemory(ctx, tx, tenant, m, s.db.vector.on)
	})
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("postgres: put memory %s: %w", m.ID, err)
	}
	if !replayed {
		s.db.afterVectorWrite(ctx, m.Embedding)
	}
	return res, replayed, nil
}

func (s *MemoryStore) Get(ctx context.Context, tenant, id string, now time.Time) (*memory.Memory, error) {
	if !a2astore.ValidText(tenant, id) {
		return nil, fmt.Errorf("postgres: get memory %s: %w", id, memory.ErrNotFound)
	}
	m, _, err := sqlstore.ScanMemory(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE m.tenant = $1 AND m.id = $2
		AND (m.expires_ms = 0 OR m.expires_ms > $3)`, tenant, id, sqlstore.Millis(now)))
	if errors.Is(err, pgx.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get memory %s: %w", id, err)
	}
	return m, nil
}

func (s *MemoryStore) Update(ctx context.Context, tenant string, p memory.Partition, id string, version int64, c memory.Change) (*memory.Memory, error) {
	if !a2astore.ValidText(tenant, id, p.Owner) {
		return nil, fmt.Errorf("postgres: update memory %s: %w", id, memory.ErrNotFound)
	}
	var out *memory.Memory
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		m, seq, err := sqlstore.ScanMemory(tx.QueryRow(ctx, `SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE m.tenant = $1 AND m.id = $2
			AND m.scope = $3 AND m.owner = $4 AND (m.expires_ms = 0 OR m.expires_ms > $5) FOR UPDATE`,
			tenant, id, string(p.Scope), p.Owner, sqlstore.Millis(c.Now)))
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if m.Version != version {
			return fmt.Errorf("version %d is not the current %d: %w", version, m.Version, memory.ErrConflict)
		}
		m.Apply(c)
		if !memText(m) {
			return errBadText
		}
		var model string
		var vec []byte
		if c.Embedding != nil {
			model, vec = c.Embedding.Model, memory.EncodeVector(c.Embedding.Vector)
		}
		var custom []byte
		if len(m.Custom) > 0 {
			custom = m.Custom
		}
		set := ""
		args := []any{m.Content, memory.JoinTags(m.Tags), m.Confidence, custom, m.Version, sqlstore.Millis(m.UpdatedAt),
			c.Embedding != nil, model, vec, seq}
		if s.db.vector.on {
			set = `, embedding = CASE WHEN $7 THEN $11::text::vector ELSE embedding END`
			args = append(args, embeddingArg(c.Embedding))
		}
		if _, err = tx.Exec(ctx, `UPDATE memories SET content = $1, tags = $2, confidence = $3, custom = $4, version = $5,
			updated_ms = $6, model = CASE WHEN $7 THEN $8 ELSE model END, vec = CASE WHEN $7 THEN $9 ELSE vec END`+set+`
			WHERE seq = $10`, args...); err != nil {
			return err
		}
		out = m
		return bumpChanged(ctx, tx, tenant, p)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: update memory %s: %w", id, err)
	}
	s.db.afterVectorWrite(ctx, c.Embedding)
	return out, nil
}

func (s *MemoryStore) Forget(ctx context.Context, tenant string, p memory.Partition, id string, a memory.Audit) (memory.ForgetResult, bool, error) {
	if !a2astore.ValidText(tenant, id, p.Owner) || !validKey(a.Key) {
		return memory.ForgetResult{}, false, nil // names nothing stored
	}
	if !a2astore.ValidText(a.EventID, a.Actor, a.Reason) {
		return memory.ForgetResult{}, false, fmt.Errorf("postgres: forget memory %s: %w", id, errBadText)
	}
	var res memory.ForgetResult
	var replayed bool
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		res, replayed = memory.ForgetResult{}, false
		if a.Key.Name != "" {
			own, err := claimKey(ctx, tx, tenant, "forget", a.Key,
				memory.WriteResult{MemoryID: id, Scope: p.Scope, Durable: true}, 0, a.At)
			if err != nil {
				return err
			}
			if !own {
				first, count, err := firstResult(ctx, tx, tenant, "forget", a.Key)
				res, replayed = memory.ForgetResult{DeletedCount: count, DeleteEventID: first.WriteEventID}, true
				return err
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM memories WHERE tenant = $1 AND id = $2 AND scope = $3 AND owner = $4`,
			tenant, id, string(p.Scope), p.Owner)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if _, err := tx.Exec(ctx, `INSERT INTO memory_audit (tenant, event_id, action, memory_id, scope, owner, actor, reason, at_ms)
				VALUES ($1, $2, 'forget', $3, $4, $5, $6, $7, $8)`,
				tenant, a.EventID, id, string(p.Scope), p.Owner, a.Actor, a.Reason, sqlstore.Millis(a.At)); err != nil {
				return err
			}
			if err := bumpChanged(ctx, tx, tenant, p); err != nil {
				return err
			}
			res = memory.ForgetResult{DeletedCount: 1, DeleteEventID: a.EventID}
		}
		if a.Key.Name == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE memory_keys SET count = $6, event_id = $7
			WHERE tenant = $1 AND kind = 'forget' AND agent = $2 AND run = $3 AND key = $4 AND result_id = $5`,
			tenant, a.Key.Agent, a.Key.Run, a.Key.Name, id, res.DeletedCount, res.DeleteEventID)
		return err
	})
	if err != nil {
		return memory.ForgetResult{}, false, fmt.Errorf("postgres: forget memory %s: %w", id, err)
	}
	return res, replayed, nil
}

// filterSQL is the WHERE clause selecting f's memories of tenant (on alias
// m), its placeholders numbered from next, and its arguments.
func filterSQL(tenant string, f memory.Filter, next int) (string, []any) {
	var b strings.Builder
	args := []any{}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(next+len(args)-1)
	}
	b.WriteString(`m.tenant = ` + arg(tenant) + ` AND m.scope = ` + arg(string(f.Partition.Scope)) +
		` AND m.owner = ` + arg(f.Partition.Owner))
	b.WriteString(` AND (m.expires_ms = 0 OR m.expires_ms > ` + arg(sqlstore.Millis(f.Now)) + `)`)
	if f.Type != "" {
		b.WriteString(` AND m.type = ` + arg(string(f.Type)))
	}
	if f.ConversationID != "" {
		b.WriteString(` AND m.conversation_id = ` + arg(f.ConversationID))
	}
	for _, t := range f.Tags {
		b.WriteString(` AND strpos(m.tags, ` + arg(memory.TagPattern(t)) + `) > 0`)
	}
	if !f.After.IsZero() {
		b.WriteString(` AND m.created_ms > ` + arg(sqlstore.Millis(f.After)))
	}
	if !f.Before.IsZero() {
		b.WriteString(` AND m.created_ms < ` + arg(sqlstore.Millis(f.Before)))
	}
	if f.Classification != "" {
		b.WriteString(` AND m.classification = ` + arg(f.Classification))
	}
	return b.String(), args
}

func filterText(tenant string, f memory.Filter) bool {
	return a2astore.ValidText(append([]string{tenant, f.Partition.Owner, f.ConversationID, f.Classification}, f.Tags...)...)
}

func (s *MemoryStore) List(ctx context.Context, tenant string, f memory.Filter, limit int) ([]memory.Memory, error) {
	if !filterText(tenant, f) {
		return nil, nil
	}
	where, args := filterSQL(tenant, f, 1)
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.MemoryCols+` FROM memories m WHERE `+where+
		` ORDER BY m.created_ms DESC, m.seq DESC LIMIT $`+strconv.Itoa(len(args)+1), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list memories: %w", err)
	}
	defer rows.Close()
	var out []memory.Memory
	for rows.Next() {
		m, _, err := sqlstore.ScanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list memories: %w", err)
		}
		out = append(out, *m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list memories: %w", err)
	}
	return out, nil
}

func (s *MemoryStore) SearchKeyword(ctx context.Context, tenant string, f memory.Filter, terms []string, limit int) ([]memory.Hit, error) {
	if len(terms) == 0 || limit <= 0 || !filterText(tenant, f) {
		return nil, nil
	}
	hits, err := s.db.index.Keyword(ctx, memindex.KeyOf(tenant, f.Partition), f, terms, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: keyword search: %w", err)
	}
	return hits, nil
}

func (s *MemoryStore) SearchVector(ctx context.Context, tenant string, f memory.Filter, q memory.Embedding, limit int) ([]memory.Hit, error) {
	if limit <= 0 || len(q.Vector) == 0 || !filterText(tenant, f) || !a2astore.ValidText(q.Model) {
		return nil, nil
	}
	if s.db.usePGVector(q.Vector) {
		return s.searchPGVector(ctx, tenant, f, q, limit)
	}
	hits, err := s.db.index.Vector(ctx, memindex.KeyOf(tenant, f.Partition), f, q, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: vector search: %w", err)
	}
	return hits, nil
}

// IndexStats implements memory.IndexReporter: what the process's memory
// index holds, shared by every handle on this database.
func (s *MemoryStore) IndexStats() memory.IndexStats {
	st := s.db.index.Stats()
	return memory.IndexStats{Partitions: st.Partitions, Memories: st.Memories, Bytes: st.Bytes}
}

func (s *MemoryStore) TermStats(ctx context.Context, tenant string, p memory.Partition, terms []string) (int, map[string]int, error) {
	if !a2astore.ValidText(tenant, p.Owner) {
		return 0, map[string]int{}, nil
	}
	docs, df, err := s.db.index.TermStats(ctx, memindex.KeyOf(tenant, p), terms)
	if err != nil {
		return 0, nil, fmt.Errorf("postgres: term statistics: %w", err)
	}
	return docs, df, nil
}

func (s *MemoryStore) Adjacent(ctx context.Context, tenant string, f memory.Filter, ids []string) (map[string][]memory.Memory, error) {
	if len(ids) == 0 || !filterText(tenant, f) {
		return map[string][]memory.Memory{}, nil
	}
	near, err := s.db.index.Adjacent(ctx, memindex.KeyOf(tenant, f.Partition), f, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: adjacent memories: %w", err)
	}
	return near, nil
}

// bumpChanged tells every process's memory index that a memory of
// partition p changed or went.
func bumpChanged(ctx context.Context, tx pgx.Tx, tenant string, p memory.Partition) error {
	_, err := tx.Exec(ctx, `INSERT INTO memory_partitions (tenant, scope, owner, changed) VALUES ($1, $2, $3, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET changed = memory_partitions.changed + 1`, tenant, string(p.Scope), p.Owner)
	return err
}
