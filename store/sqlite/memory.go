package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"novaos.dev/novaos/memory"
)

// The memory writes every write or forget makes, prepared once on the
// write connection (writer.exec).
const (
	insertMemorySQL = `INSERT INTO memories (tenant, id, scope, owner, content, type, tags, source, conversation_id,
		classification, confidence, custom, version, created_ms, updated_ms, expires_ms, write_event_id, model, vec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, id) DO NOTHING`
	insertFTSSQL = `INSERT INTO memory_fts (rowid, part, terms) VALUES (?, ?, ?)`
	deleteFTSSQL = `DELETE FROM memory_fts WHERE rowid = ?`
	findKeySQL   = `SELECT result_id, scope, event_id, count, durable, created_ms FROM memory_keys
		WHERE tenant = ? AND kind = ? AND key = ? AND created_ms > ?`
	appendedSQL = `INSERT INTO memory_partitions (tenant, scope, owner, appended) VALUES (?, ?, ?, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET appended = appended + 1`
	changedSQL = `INSERT INTO memory_partitions (tenant, scope, owner, changed) VALUES (?, ?, ?, 1)
		ON CONFLICT (tenant, scope, owner) DO UPDATE SET changed = changed + 1`
	putKeySQL = `INSERT OR REPLACE INTO memory_keys (tenant, kind, key, result_id, scope, event_id, count, durable, created_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// memoryWrites are the statements Open prepares for the memory store.
var memoryWrites = []string{insertMemorySQL, insertFTSSQL, deleteFTSSQL, putKeySQL, appendedSQL, changedSQL}

// memCols are the columns scanMemory reads, in its order.
const memCols = `m.seq, m.id, m.scope, m.owner, m.content, m.type, m.tags, m.source, m.conversation_id, m.classification,
	m.confidence, m.custom, m.version, m.created_ms, m.updated_ms, m.expires_ms, m.write_event_id`

// maxQueryTerms bounds the terms of one keyword search: a pasted document
// as a query would otherwise make an OR of thousands of terms.
const maxQueryTerms = 64

// MemoryStore returns the database's memory store.
func (db *DB) MemoryStore() *MemoryStore { return &MemoryStore{db} }

// MemoryStore keeps the memory service's data in the database (see
// memory.Store). Vector search scans the partition's vectors of the
// query's model in the database and keeps the best in process.
type MemoryStore struct{ db *DB }

var _ memory.Store = (*MemoryStore)(nil)

// partToken names a partition inside the full-text index: a hash, since a
// token must be one word whatever the tenant and owner ids hold. Two
// partitions sharing a token would only share candidates; the join on
// memories re-checks the real columns.
func partToken(tenant string, p memory.Partition) string {
	h := fnv.New128a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(p.Scope))
	h.Write([]byte{0})
	h.Write([]byte(p.Owner))
	return "p" + hex.EncodeToString(h.Sum(nil))
}

func indexTerms(m *memory.Memory) string {
	return strings.Join(memory.Terms(memory.EmbedText(m.Content, m.Tags)), " ")
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

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

// findKey returns the first result of an idempotency key still inside its
// window at now.
func findKey(tx *sql.Tx, tenant, kind, key string, now time.Time) (id, scope, event string, count int, durable bool, created time.Time, ok bool, err error) {
	var cms int64
	err = tx.QueryRow(findKeySQL, tenant, kind, key, ms(now.Add(-memory.IdempotencyWindow))).
		Scan(&id, &scope, &event, &count, &durable, &cms)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", 0, false, time.Time{}, false, nil
	}
	return id, scope, event, count, durable, fromMS(cms), err == nil, err
}

func (s *MemoryStore) insert(tx *sql.Tx, tenant string, m *memory.Memory) error {
	var model string
	var vec []byte
	if m.Embedding != nil {
		model, vec = m.Embedding.Model, memory.EncodeVector(m.Embedding.Vector)
	}
	res, err := s.db.wr.exec(tx, insertMemorySQL, tenant, m.ID, string(m.Partition.Scope), m.Partition.Owner, m.Content,
		string(m.Type), memory.JoinTags(m.Tags), m.Source, m.ConversationID, m.Classification, nullFloat(m.Confidence),
		nullBytes(m.Custom), m.Version, ms(m.CreatedAt), ms(m.UpdatedAt), ms(m.ExpiresAt), m.WriteEventID, model, vec)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return orSentinel(err, memory.ErrExists)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err = s.db.wr.exec(tx, insertFTSSQL, seq, partToken(tenant, m.Partition), indexTerms(m)); err != nil {
		return err
	}
	_, err = s.db.wr.exec(tx, appendedSQL, tenant, string(m.Partition.Scope), m.Partition.Owner)
	return err
}

func (s *MemoryStore) Put(ctx context.Context, tenant string, m *memory.Memory, key string) (memory.WriteResult, bool, error) {
	if m.Version == 0 {
		m.Version = 1
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	res, replayed := m.Result(), false
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, replayed = m.Result(), false
		if key != "" {
			id, scope, event, _, durable, created, ok, err := findKey(tx, tenant, "write", key, m.CreatedAt)
			if err != nil {
				return err
			}
			if ok {
				res = memory.WriteResult{MemoryID: id, Scope: memory.Scope(scope), WriteEventID: event, CreatedAt: created, Durable: durable}
				replayed = true
				return nil
			}
		}
		if err := s.insert(tx, tenant, m); err != nil {
			return err
		}
		if key == "" {
			return nil
		}
		_, err := s.db.wr.exec(tx, putKeySQL, tenant, "write", key, m.ID, string(m.Partition.Scope), m.WriteEventID, 0, true, ms(m.CreatedAt))
		return err
	})
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("sqlite: put memory %s: %w", m.ID, err)
	}
	return res, replayed, nil
}

func (s *MemoryStore) Get(ctx context.Context, tenant, id string, now time.Time) (*memory.Memory, error) {
	row := s.db.r.QueryRowContext(ctx, `SELECT `+memCols+` FROM memories m WHERE m.tenant = ? AND m.id = ?
		AND (m.expires_ms = 0 OR m.expires_ms > ?)`, tenant, id, ms(now))
	m, _, err := scanMemory(row)
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
		m, seq, err := scanMemory(tx.QueryRow(`SELECT `+memCols+` FROM memories m WHERE m.tenant = ? AND m.id = ?
			AND m.scope = ? AND m.owner = ? AND (m.expires_ms = 0 OR m.expires_ms > ?)`,
			tenant, id, string(p.Scope), p.Owner, ms(c.Now)))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if m.Version != version {
			return fmt.Errorf("version %d is not the current %d: %w", version, m.Version, memory.ErrConflict)
		}
		reindex := m.Apply(c)
		var model string
		var vec []byte
		if c.Embedding != nil {
			model, vec = c.Embedding.Model, memory.EncodeVector(c.Embedding.Vector)
		}
		if _, err := tx.Exec(`UPDATE memories SET content = ?, tags = ?, confidence = ?, custom = ?, version = ?,
			updated_ms = ?, model = CASE WHEN ? THEN ? ELSE model END, vec = CASE WHEN ? THEN ? ELSE vec END
			WHERE seq = ?`,
			m.Content, memory.JoinTags(m.Tags), nullFloat(m.Confidence), nullBytes(m.Custom), m.Version, ms(m.UpdatedAt),
			c.Embedding != nil, model, c.Embedding != nil, vec, seq); err != nil {
			return err
		}
		if c.Embedding != nil {
			if _, err := s.db.wr.exec(tx, changedSQL, tenant, string(p.Scope), p.Owner); err != nil {
				return err
			}
		}
		if reindex {
			if _, err := s.db.wr.exec(tx, deleteFTSSQL, seq); err != nil {
				return err
			}
			if _, err := s.db.wr.exec(tx, insertFTSSQL, seq, partToken(tenant, m.Partition), indexTerms(m)); err != nil {
				return err
			}
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
		if a.IdempotencyKey != "" {
			_, _, event, count, _, _, ok, err := findKey(tx, tenant, "forget", a.IdempotencyKey, a.At)
			if err != nil {
				return err
			}
			if ok {
				res, replayed = memory.ForgetResult{DeletedCount: count, DeleteEventID: event}, true
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
			if _, err := s.db.wr.exec(tx, deleteFTSSQL, seq); err != nil {
				return err
			}
			if _, err := s.db.wr.exec(tx, changedSQL, tenant, string(p.Scope), p.Owner); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO memory_audit (tenant, event_id, action, memory_id, scope, owner, actor, reason, at_ms)
				VALUES (?, ?, 'forget', ?, ?, ?, ?, ?, ?)`,
				tenant, a.EventID, id, string(p.Scope), p.Owner, a.Actor, a.Reason, ms(a.At)); err != nil {
				return err
			}
			res = memory.ForgetResult{DeletedCount: 1, DeleteEventID: a.EventID}
		}
		if a.IdempotencyKey == "" {
			return nil
		}
		_, err = s.db.wr.exec(tx, putKeySQL, tenant, "forget", a.IdempotencyKey, id, string(p.Scope), res.DeleteEventID,
			res.DeletedCount, true, ms(a.At))
		return err
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
	args := []any{tenant, string(f.Partition.Scope), f.Partition.Owner, ms(f.Now)}
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
		args = append(args, ms(f.After))
	}
	if !f.Before.IsZero() {
		b.WriteString(` AND m.created_ms < ?`)
		args = append(args, ms(f.Before))
	}
	if f.Classification != "" {
		b.WriteString(` AND m.classification = ?`)
		args = append(args, f.Classification)
	}
	return b.String(), args
}

func (s *MemoryStore) List(ctx context.Context, tenant string, f memory.Filter, limit int) ([]memory.Memory, error) {
	where, args := filterSQL(tenant, f)
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+memCols+` FROM memories m WHERE `+where+
		` ORDER BY m.created_ms DESC, m.seq DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories: %w", err)
	}
	hits, err := scanHits(rows, false)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories: %w", err)
	}
	out := make([]memory.Memory, len(hits))
	for i := range hits {
		out[i] = hits[i].Memory
	}
	return out, nil
}

// ftsQuery is the FTS5 query for terms inside the partition token part:
// the partition AND any term. Terms are letters and digits only
// (memory.Terms), so quoting them is all the escaping they need.
func ftsQuery(part string, terms []string) string {
	var b strings.Builder
	b.WriteString(`part : "` + part + `" AND terms : (`)
	seen := map[string]bool{}
	for _, t := range terms {
		if seen[t] || len(seen) == maxQueryTerms {
			continue
		}
		if len(seen) > 0 {
			b.WriteString(" OR ")
		}
		seen[t] = true
		b.WriteString(`"` + t + `"`)
	}
	b.WriteString(")")
	return b.String()
}

func (s *MemoryStore) SearchKeyword(ctx context.Context, tenant string, f memory.Filter, terms []string, limit int) ([]memory.Hit, error) {
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	where, args := filterSQL(tenant, f)
	match := ftsQuery(partToken(tenant, f.Partition), terms)
	// bm25's weights zero the partition column: every candidate holds
	// its token, which says nothing about relevance.
	if plainFilter(f) {
		// Rank inside the index first and join only the best: a common
		// word matches most of a partition, and joining every match to
		// its row costs more than ranking it. Only expiry can drop a
		// ranked row here; a short page (few matches, or expired ones
		// among the best) runs the query whole below, which is cheap
		// when there are few matches.
		inner := limit*2 + 16
		q := `SELECT ` + memCols + `, r.rank FROM (SELECT rowid, bm25(memory_fts, 0.0, 1.0) AS rank FROM memory_fts
			WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?) r JOIN memories m ON m.seq = r.rowid
			WHERE ` + where + ` ORDER BY r.rank, m.seq LIMIT ?`
		hits, err := s.keywordQuery(ctx, q, slices.Concat([]any{match, inner}, args, []any{limit}))
		if err != nil || len(hits) == limit {
			return hits, err
		}
	}
	q := `SELECT ` + memCols + `, bm25(memory_fts, 0.0, 1.0) AS rank FROM memory_fts
		JOIN memories m ON m.seq = memory_fts.rowid
		WHERE memory_fts MATCH ? AND ` + where + ` ORDER BY rank, m.seq LIMIT ?`
	return s.keywordQuery(ctx, q, slices.Concat([]any{match}, args, []any{limit}))
}

// plainFilter reports whether f selects a whole partition (but for
// expiry).
func plainFilter(f memory.Filter) bool {
	return f.Type == "" && f.ConversationID == "" && len(f.Tags) == 0 && f.After.IsZero() && f.Before.IsZero() && f.Classification == ""
}

func (s *MemoryStore) keywordQuery(ctx context.Context, q string, args []any) ([]memory.Hit, error) {
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: keyword search: %w", err)
	}
	hits, err := scanHits(rows, true)
	if err != nil {
		return nil, fmt.Errorf("sqlite: keyword search: %w", err)
	}
	return hits, nil
}

func (s *MemoryStore) SearchVector(ctx context.Context, tenant string, f memory.Filter, q memory.Embedding, limit int) ([]memory.Hit, error) {
	if limit <= 0 || len(q.Vector) == 0 {
		return nil, nil
	}
	top := memory.NewTopK[int64](limit)
	if plainFilter(f) {
		if err := s.db.vecs.search(ctx, s.db, tenant, f, q, top); err != nil {
			return nil, fmt.Errorf("sqlite: vector search: %w", err)
		}
		return s.topHits(ctx, top)
	}
	where, args := filterSQL(tenant, f)
	rows, err := s.db.r.QueryContext(ctx, `SELECT m.seq, m.vec FROM memories m WHERE `+where+` AND m.model = ?`,
		append(args, q.Model)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var b []byte
			if err := rows.Scan(&seq, &b); err != nil {
				return err
			}
			v, err := memory.DecodeVector(b)
			if err != nil {
				s.db.log.WarnContext(ctx, "sqlite: a memory's vector is damaged; it is left out of vector search", "seq", seq)
				continue
			}
			top.Offer(seq, memory.Cosine(q.Vector, v))
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	return s.topHits(ctx, top)
}

// topHits reads the memories top kept, best first.
func (s *MemoryStore) topHits(ctx context.Context, top *memory.TopK[int64]) ([]memory.Hit, error) {
	seqs, scores := top.Sorted()
	if len(seqs) == 0 {
		return nil, nil
	}
	byseq, err := s.bySeq(ctx, seqs)
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	out := make([]memory.Hit, 0, len(seqs))
	for i, seq := range seqs {
		if m, ok := byseq[seq]; ok { // gone between the two reads: left out
			out = append(out, memory.Hit{Memory: *m, Score: scores[i]})
		}
	}
	return out, nil
}

func (s *MemoryStore) bySeq(ctx context.Context, seqs []int64) (map[int64]*memory.Memory, error) {
	ph := strings.Repeat(",?", len(seqs))[1:]
	args := make([]any, len(seqs))
	for i, v := range seqs {
		args[i] = v
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+memCols+` FROM memories m WHERE m.seq IN (`+ph+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]*memory.Memory, len(seqs))
	for rows.Next() {
		m, seq, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		out[seq] = m
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

func scanMemory(r scanner, extra ...any) (*memory.Memory, int64, error) {
	var (
		m                           memory.Memory
		seq, version, cms, ums, ems int64
		scope, typ, tags            string
		confidence                  sql.NullFloat64
		custom                      []byte
		dest                        []any
	)
	dest = append(dest, &seq, &m.ID, &scope, &m.Partition.Owner, &m.Content, &typ, &tags, &m.Source, &m.ConversationID,
		&m.Classification, &confidence, &custom, &version, &cms, &ums, &ems, &m.WriteEventID)
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, 0, err
	}
	m.Partition.Scope, m.Type, m.Tags = memory.Scope(scope), memory.Type(typ), memory.SplitTags(tags)
	if confidence.Valid {
		c := confidence.Float64
		m.Confidence = &c
	}
	if len(custom) > 0 {
		m.Custom = custom
	}
	m.Version, m.CreatedAt, m.UpdatedAt, m.ExpiresAt = version, fromMS(cms), fromMS(ums), fromMS(ems)
	return &m, seq, nil
}

func scanHits(rows *sql.Rows, ranked bool) ([]memory.Hit, error) {
	defer rows.Close()
	var out []memory.Hit
	for rows.Next() {
		var rank float64
		var extra []any
		if ranked {
			extra = []any{&rank}
		}
		m, _, err := scanMemory(rows, extra...)
		if err != nil {
			return nil, err
		}
		// FTS5's bm25 is lower for better matches; a Hit's score is
		// higher for better.
		out = append(out, memory.Hit{Memory: *m, Score: -rank})
	}
	return out, rows.Err()
}

func (s *MemoryStore) TermStats(ctx context.Context, tenant string, p memory.Partition, terms []string) (int, map[string]int, error) {
	var docs int
	if err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE tenant = ? AND scope = ? AND owner = ?`,
		tenant, string(p.Scope), p.Owner).Scan(&docs); err != nil {
		return 0, nil, fmt.Errorf("sqlite: term statistics: %w", err)
	}
	df := map[string]int{}
	part := partToken(tenant, p)
	for _, t := range terms {
		if _, done := df[t]; done || len(df) == maxQueryTerms {
			continue
		}
		var n int
		// The count is of index entries of the partition token, which
		// may (rarely) be shared with another partition of the tenant:
		// a weight, never an answer.
		if err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?`,
			ftsQuery(part, []string{t})).Scan(&n); err != nil {
			return 0, nil, fmt.Errorf("sqlite: term statistics: %w", err)
		}
		df[t] = n
	}
	return docs, df, nil
}

func (s *MemoryStore) Adjacent(ctx context.Context, tenant string, f memory.Filter, ids []string) (map[string][]memory.Memory, error) {
	out := map[string][]memory.Memory{}
	if len(ids) == 0 {
		return out, nil
	}
	// One statement finds both neighbours of every anchor (two index
	// seeks each); a second reads them. Compiling a statement per anchor
	// would cost more than the seeks.
	where, fargs := filterSQL(tenant, f)
	near := func(cmp, order string) string {
		return `(SELECT m.seq FROM memories m INDEXED BY memories_conversation WHERE ` + where + `
			AND m.conversation_id <> '' AND m.conversation_id = a.conversation_id
			AND (m.created_ms, m.seq) ` + cmp + ` (a.created_ms, a.seq) ORDER BY m.created_ms ` + order + `, m.seq ` + order + ` LIMIT 1)`
	}
	args := slices.Concat(fargs, fargs, []any{tenant, string(f.Partition.Scope), f.Partition.Owner})
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT a.id, `+near("<", "DESC")+`, `+near(">", "ASC")+` FROM memories a
		WHERE a.tenant = ? AND a.scope = ? AND a.owner = ? AND a.conversation_id <> '' AND a.id IN (`+
		strings.Repeat(",?", len(ids))[1:]+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: adjacent memories: %w", err)
	}
	pairs := map[string][2]sql.NullInt64{}
	var seqs []int64
	for rows.Next() {
		var id string
		var p [2]sql.NullInt64
		if err := rows.Scan(&id, &p[0], &p[1]); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: adjacent memories: %w", err)
		}
		pairs[id] = p
		for _, n := range p {
			if n.Valid {
				seqs = append(seqs, n.Int64)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: adjacent memories: %w", err)
	}
	if len(seqs) == 0 {
		return out, nil
	}
	byseq, err := s.bySeq(ctx, seqs)
	if err != nil {
		return nil, fmt.Errorf("sqlite: adjacent memories: %w", err)
	}
	for id, p := range pairs {
		for _, n := range p {
			if m, ok := byseq[n.Int64]; n.Valid && ok {
				out[id] = append(out[id], *m)
			}
		}
	}
	return out, nil
}
