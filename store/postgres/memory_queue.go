package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Proposals, the hint queue, conversation messages and the sweep of the
// memory store.

func (s *MemoryStore) PutProposal(ctx context.Context, tenant string, p *memory.Proposal, key memory.Key) (memory.WriteResult, bool, error) {
	if !a2astore.ValidText(tenant, p.ID) || !validKey(key) {
		return memory.WriteResult{}, false, fmt.Errorf("postgres: put proposal: %w", errBadText)
	}
	body, err := memory.EncodeMemory(&p.Memory)
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("postgres: put proposal %s: %w", p.ID, err)
	}
	first := memory.WriteResult{MemoryID: p.ID, Scope: p.Memory.Partition.Scope, WriteEventID: p.Memory.WriteEventID, CreatedAt: p.CreatedAt}
	var res memory.WriteResult
	var replayed bool
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		res, replayed = first, false
		if key.Name != "" {
			own, err := claimKey(ctx, tx, tenant, "write", key, first, 0, p.CreatedAt)
			if err != nil {
				return err
			}
			if !own {
				res, _, err = firstResult(ctx, tx, tenant, "write", key)
				replayed = true
				return err
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO memory_proposals (tenant, id, status, body, created_ms) VALUES ($1, $2, 'pending', $3, $4)
			ON CONFLICT (tenant, id) DO NOTHING`, tenant, p.ID, body, sqlstore.Millis(p.CreatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return memory.ErrExists
		}
		return nil
	})
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("postgres: put proposal %s: %w", p.ID, err)
	}
	return res, replayed, nil
}

func (s *MemoryStore) Proposal(ctx context.Context, tenant, id string) (*memory.Proposal, error) {
	if !a2astore.ValidText(tenant, id) {
		return nil, fmt.Errorf("postgres: get proposal %s: %w", id, memory.ErrNotFound)
	}
	p, err := sqlstore.ScanProposal(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.ProposalCols+` FROM memory_proposals WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get proposal %s: %w", id, err)
	}
	return p, nil
}

func (s *MemoryStore) PendingProposals(ctx context.Context, limit int) ([]memory.Proposal, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.ProposalCols+` FROM memory_proposals
		WHERE status = 'pending' ORDER BY created_ms, tenant, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending proposals: %w", err)
	}
	defer rows.Close()
	var out []memory.Proposal
	for rows.Next() {
		p, err := sqlstore.ScanProposal(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: pending proposals: %w", err)
		}
		out = append(out, *p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: pending proposals: %w", err)
	}
	return out, nil
}

func (s *MemoryStore) ResolveProposal(ctx context.Context, tenant, id string, commit *memory.Memory, reason string, now time.Time) error {
	if !a2astore.ValidText(tenant, id) {
		return fmt.Errorf("postgres: resolve proposal %s: %w", id, memory.ErrNotFound)
	}
	if !a2astore.ValidText(reason) || commit != nil && !memText(commit) {
		return fmt.Errorf("postgres: resolve proposal %s: %w", id, errBadText)
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM memory_proposals WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != string(memory.ProposalPending) {
			return fmt.Errorf("proposal is %s: %w", status, memory.ErrConflict)
		}
		newStatus, memID := memory.ProposalRejected, ""
		if commit != nil {
			if err := insertMemory(ctx, tx, tenant, commit, s.db.vector.on); err != nil {
				return err
			}
			newStatus, memID, reason = memory.ProposalCommitted, commit.ID, ""
		}
		_, err = tx.Exec(ctx, `UPDATE memory_proposals SET status = $1, reason = $2, memory_id = $3, resolved_ms = $4
			WHERE tenant = $5 AND id = $6`, string(newStatus), reason, memID, sqlstore.Millis(now), tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: resolve proposal %s: %w", id, err)
	}
	if commit != nil {
		s.db.afterVectorWrite(ctx, commit.Embedding)
	}
	return nil
}

func (s *MemoryStore) EnqueueHint(ctx context.Context, tenant string, h *memory.Hint) error {
	if !a2astore.ValidText(tenant, h.ID, h.Agent, h.User, h.ConversationID, h.Text, h.Context, memory.JoinTags(h.Tags)) {
		return fmt.Errorf("postgres: enqueue hint: %w", errBadText)
	}
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO memory_hints (tenant, id, agent, user_id, conversation_id, text, priority, tags,
		context, status, submitted_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10) ON CONFLICT (tenant, id) DO NOTHING`,
		tenant, h.ID, h.Agent, h.User, h.ConversationID, h.Text, memory.PriorityRank(h.Priority), memory.JoinTags(h.Tags),
		h.Context, sqlstore.Millis(h.SubmittedAt))
	if err != nil {
		return fmt.Errorf("postgres: enqueue hint %s: %w", h.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: enqueue hint %s: %w", h.ID, memory.ErrExists)
	}
	return nil
}

// ClaimHints skips hints another replica is claiming (SKIP LOCKED), so
// replicas sharing the database never hand out one hint twice.
func (s *MemoryStore) ClaimHints(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]memory.Hint, error) {
	rows, err := s.db.pool.Query(ctx, `UPDATE memory_hints h SET lease_ms = $1, attempts = h.attempts + 1
		FROM (SELECT tenant, id FROM memory_hints WHERE status = 'pending' AND lease_ms <= $2
			ORDER BY priority DESC, submitted_ms, tenant, id LIMIT $3 FOR UPDATE SKIP LOCKED) c
		WHERE h.tenant = c.tenant AND h.id = c.id
		RETURNING h.tenant, h.id, h.agent, h.user_id, h.conversation_id, h.text, h.priority, h.tags, h.context, h.status,
			h.attempts, h.submitted_ms, h.resolved_ms`, sqlstore.Millis(now.Add(lease)), sqlstore.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim hints: %w", err)
	}
	defer rows.Close()
	var out []memory.Hint
	for rows.Next() {
		h, err := sqlstore.ScanHint(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim hints: %w", err)
		}
		out = append(out, *h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim hints: %w", err)
	}
	memory.SortHints(out)
	return out, nil
}

func (s *MemoryStore) ResolveHint(ctx context.Context, tenant, id string, state memory.HintState, now time.Time) error {
	if state != memory.HintConsolidated && state != memory.HintDeadLettered {
		return fmt.Errorf("postgres: resolve hint %s: state %q is not final: %w", id, state, memory.ErrInvalid)
	}
	if !a2astore.ValidText(tenant, id) {
		return fmt.Errorf("postgres: resolve hint %s: %w", id, memory.ErrNotFound)
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM memory_hints WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != string(memory.HintPending) {
			return fmt.Errorf("hint is %s: %w", status, memory.ErrConflict)
		}
		_, err = tx.Exec(ctx, `UPDATE memory_hints SET status = $1, resolved_ms = $2 WHERE tenant = $3 AND id = $4`,
			string(state), sqlstore.Millis(now), tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: resolve hint %s: %w", id, err)
	}
	return nil
}

func (s *MemoryStore) Hint(ctx context.Context, tenant, id string) (*memory.Hint, error) {
	if !a2astore.ValidText(tenant, id) {
		return nil, fmt.Errorf("postgres: get hint %s: %w", id, memory.ErrNotFound)
	}
	h, err := sqlstore.ScanHint(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.HintCols+` FROM memory_hints WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get hint %s: %w", id, err)
	}
	return h, nil
}

func (s *MemoryStore) AppendMessage(ctx context.Context, tenant, conversation string, m memory.LiveMessage) error {
	if !a2astore.ValidText(tenant, conversation, m.MessageID, m.Role, m.Content) {
		return fmt.Errorf("postgres: append message: %w", errBadText)
	}
	if _, err := s.db.pool.Exec(ctx, `INSERT INTO memory_messages (tenant, conversation_id, message_id, role, content, at_ms)
		VALUES ($1, $2, $3, $4, $5, $6)`, tenant, conversation, m.MessageID, m.Role, m.Content, sqlstore.Millis(m.Timestamp)); err != nil {
		return fmt.Errorf("postgres: append message: %w", err)
	}
	return nil
}

func (s *MemoryStore) RecentMessages(ctx context.Context, tenant, conversation string, n int) ([]memory.LiveMessage, error) {
	if !a2astore.ValidText(tenant, conversation) {
		return nil, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT message_id, role, content, at_ms FROM (SELECT seq, message_id, role, content, at_ms
		FROM memory_messages WHERE tenant = $1 AND conversation_id = $2 ORDER BY seq DESC LIMIT $3) r ORDER BY seq`,
		tenant, conversation, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: recent messages: %w", err)
	}
	defer rows.Close()
	var out []memory.LiveMessage
	for rows.Next() {
		var m memory.LiveMessage
		var at int64
		if err := rows.Scan(&m.MessageID, &m.Role, &m.Content, &at); err != nil {
			return nil, fmt.Errorf("postgres: recent messages: %w", err)
		}
		m.Timestamp = sqlstore.FromMillis(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: recent messages: %w", err)
	}
	return out, nil
}

func (s *MemoryStore) Sweep(ctx context.Context, now time.Time, limit int) (memory.Swept, error) {
	var sw memory.Swept
	steps := []struct {
		n    *int
		sql  string
		args []any
	}{
		{&sw.Keys, `DELETE FROM memory_keys WHERE ctid IN (SELECT ctid FROM memory_keys WHERE created_ms <= $1 LIMIT $2)`,
			[]any{sqlstore.Millis(now.Add(-memory.IdempotencyWindow)), limit}},
		{&sw.HintsExpired, `UPDATE memory_hints SET status = 'expired', resolved_ms = $1 WHERE ctid IN (SELECT ctid FROM memory_hints
			WHERE status = 'pending' AND submitted_ms <= $2 LIMIT $3 FOR UPDATE SKIP LOCKED)`,
			[]any{sqlstore.Millis(now), sqlstore.Millis(now.Add(-memory.HintPendingLimit)), limit}},
		{&sw.Hints, `DELETE FROM memory_hints WHERE ctid IN (SELECT ctid FROM memory_hints WHERE status <> 'pending'
			AND resolved_ms <= $1 LIMIT $2)`, []any{sqlstore.Millis(now.Add(-memory.StatusRetention)), limit}},
		{&sw.Proposals, `DELETE FROM memory_proposals WHERE ctid IN (SELECT ctid FROM memory_proposals WHERE status <> 'pending'
			AND resolved_ms <= $1 LIMIT $2)`, []any{sqlstore.Millis(now.Add(-memory.StatusRetention)), limit}},
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var err error
		if sw.Memories, err = sweepMemories(ctx, tx, now, limit); err != nil {
			return err
		}
		for _, st := range steps {
			tag, err := tx.Exec(ctx, st.sql, st.args...)
			if err != nil {
				return err
			}
			*st.n = int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return memory.Swept{}, fmt.Errorf("postgres: sweep memory: %w", err)
	}
	return sw, nil
}

// sweepMemories deletes up to limit memories expired at now and bumps the
// changed counter of each partition they were in, in partition order so
// that two sweeps never wait on each other in a circle.
func sweepMemories(ctx context.Context, tx pgx.Tx, now time.Time, limit int) (int, error) {
	rows, err := tx.Query(ctx, `DELETE FROM memories WHERE seq IN (SELECT seq FROM memories WHERE expires_ms > 0 AND expires_ms <= $1
		ORDER BY expires_ms LIMIT $2) RETURNING tenant, scope, owner`, sqlstore.Millis(now), limit)
	if err != nil {
		return 0, err
	}
	n := 0
	parts := map[memindex.Key]bool{}
	for rows.Next() {
		var k memindex.Key
		if err := rows.Scan(&k.Tenant, &k.Scope, &k.Owner); err != nil {
			rows.Close()
			return 0, err
		}
		parts[k] = true
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	keys := slices.SortedFunc(maps.Keys(parts), func(a, b memindex.Key) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Owner, b.Owner))
	})
	for _, k := range keys {
		if err := bumpChanged(ctx, tx, k.Tenant, memory.Partition{Scope: memory.Scope(k.Scope), Owner: k.Owner}); err != nil {
			return 0, err
		}
	}
	return n, nil
}
