package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Proposals, the hint queue, conversation messages and the sweep of the
// memory store.

func (s *MemoryStore) PutProposal(ctx context.Context, tenant string, p *memory.Proposal, key memory.Key) (memory.WriteResult, bool, error) {
	body, err := memory.EncodeMemory(&p.Memory)
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("sqlite: put proposal %s: %w", p.ID, err)
	}
	first := memory.WriteResult{MemoryID: p.ID, Scope: p.Memory.Partition.Scope, WriteEventID: p.Memory.WriteEventID, CreatedAt: p.CreatedAt}
	res, replayed := first, false
	err = s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, replayed = first, false
		if key.Name != "" {
			u, ok, err := findKey(tx, tenant, "write", key, p.CreatedAt)
			if err != nil {
				return err
			}
			if ok {
				res, replayed = u.res, true
				return nil
			}
		}
		r, err := tx.Exec(`INSERT INTO memory_proposals (tenant, id, status, body, created_ms) VALUES (?, ?, 'pending', ?, ?)
			ON CONFLICT (tenant, id) DO NOTHING`, tenant, p.ID, body, sqlstore.Millis(p.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, memory.ErrExists)
		}
		if key.Name == "" {
			return nil
		}
		return s.putKey(tx, tenant, "write", key, first, 0, p.CreatedAt)
	})
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("sqlite: put proposal %s: %w", p.ID, err)
	}
	return res, replayed, nil
}

func (s *MemoryStore) Proposal(ctx context.Context, tenant, id string) (*memory.Proposal, error) {
	p, err := sqlstore.ScanProposal(s.db.r.QueryRowContext(ctx,
		`SELECT `+sqlstore.ProposalCols+` FROM memory_proposals WHERE tenant = ? AND id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get proposal %s: %w", id, err)
	}
	return p, nil
}

func (s *MemoryStore) PendingProposals(ctx context.Context, limit int) ([]memory.Proposal, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+sqlstore.ProposalCols+` FROM memory_proposals
		WHERE status = 'pending' ORDER BY created_ms, tenant, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending proposals: %w", err)
	}
	defer rows.Close()
	var out []memory.Proposal
	for rows.Next() {
		p, err := sqlstore.ScanProposal(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: pending proposals: %w", err)
		}
		out = append(out, *p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: pending proposals: %w", err)
	}
	return out, nil
}

func (s *MemoryStore) ResolveProposal(ctx context.Context, tenant, id string, commit *memory.Memory, reason string, now time.Time) error {
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRow(`SELECT status FROM memory_proposals WHERE tenant = ? AND id = ?`, tenant, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
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
			if err := s.insert(tx, tenant, commit); err != nil {
				return err
			}
			newStatus, memID, reason = memory.ProposalCommitted, commit.ID, ""
		}
		_, err = tx.Exec(`UPDATE memory_proposals SET status = ?, reason = ?, memory_id = ?, resolved_ms = ?
			WHERE tenant = ? AND id = ?`, string(newStatus), reason, memID, sqlstore.Millis(now), tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: resolve proposal %s: %w", id, err)
	}
	return nil
}

func (s *MemoryStore) EnqueueHint(ctx context.Context, tenant string, h *memory.Hint) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		r, err := tx.Exec(`INSERT INTO memory_hints (tenant, id, agent, user_id, conversation_id, text, priority, tags, context,
			status, submitted_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (tenant, id) DO NOTHING`,
			tenant, h.ID, h.Agent, h.User, h.ConversationID, h.Text, memory.PriorityRank(h.Priority), memory.JoinTags(h.Tags),
			h.Context, sqlstore.Millis(h.SubmittedAt))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, memory.ErrExists)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: enqueue hint %s: %w", h.ID, err)
	}
	return nil
}

func (s *MemoryStore) ClaimHints(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]memory.Hint, error) {
	var out []memory.Hint
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.Query(`UPDATE memory_hints SET lease_ms = ?, attempts = attempts + 1
			WHERE rowid IN (SELECT rowid FROM memory_hints WHERE status = 'pending' AND lease_ms <= ?
				ORDER BY priority DESC, submitted_ms, tenant, id LIMIT ?)
			RETURNING `+sqlstore.HintCols, sqlstore.Millis(now.Add(lease)), sqlstore.Millis(now), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h, err := sqlstore.ScanHint(rows)
			if err != nil {
				return err
			}
			out = append(out, *h)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim hints: %w", err)
	}
	// RETURNING gives rows in no promised order.
	memory.SortHints(out)
	return out, nil
}

func (s *MemoryStore) ResolveHint(ctx context.Context, tenant, id string, state memory.HintState, now time.Time) error {
	if state != memory.HintConsolidated && state != memory.HintDeadLettered {
		return fmt.Errorf("sqlite: resolve hint %s: state %q is not final: %w", id, state, memory.ErrInvalid)
	}
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRow(`SELECT status FROM memory_hints WHERE tenant = ? AND id = ?`, tenant, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != string(memory.HintPending) {
			return fmt.Errorf("hint is %s: %w", status, memory.ErrConflict)
		}
		_, err = tx.Exec(`UPDATE memory_hints SET status = ?, resolved_ms = ? WHERE tenant = ? AND id = ?`,
			string(state), sqlstore.Millis(now), tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: resolve hint %s: %w", id, err)
	}
	return nil
}

func (s *MemoryStore) Hint(ctx context.Context, tenant, id string) (*memory.Hint, error) {
	h, err := sqlstore.ScanHint(s.db.r.QueryRowContext(ctx, `SELECT `+sqlstore.HintCols+` FROM memory_hints WHERE tenant = ? AND id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = memory.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get hint %s: %w", id, err)
	}
	return h, nil
}

func (s *MemoryStore) AppendMessage(ctx context.Context, tenant, conversation string, m memory.LiveMessage) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO memory_messages (tenant, conversation_id, message_id, role, content, at_ms)
			VALUES (?, ?, ?, ?, ?, ?)`, tenant, conversation, m.MessageID, m.Role, m.Content, sqlstore.Millis(m.Timestamp))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: append message: %w", err)
	}
	return nil
}

func (s *MemoryStore) RecentMessages(ctx context.Context, tenant, conversation string, n int) ([]memory.LiveMessage, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT message_id, role, content, at_ms FROM memory_messages
		WHERE tenant = ? AND conversation_id = ? ORDER BY seq DESC LIMIT ?`, tenant, conversation, n)
	if err != nil {
		return nil, fmt.Errorf("sqlite: recent messages: %w", err)
	}
	defer rows.Close()
	var out []memory.LiveMessage
	for rows.Next() {
		var m memory.LiveMessage
		var at int64
		if err := rows.Scan(&m.MessageID, &m.Role, &m.Content, &at); err != nil {
			return nil, fmt.Errorf("sqlite: recent messages: %w", err)
		}
		m.Timestamp = sqlstore.FromMillis(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: recent messages: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func (s *MemoryStore) Sweep(ctx context.Context, now time.Time, limit int) (memory.Swept, error) {
	var sw memory.Swept
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		sw = memory.Swept{}
		rows, err := tx.Query(`SELECT seq FROM memories WHERE expires_ms > 0 AND expires_ms <= ? ORDER BY expires_ms LIMIT ?`,
			sqlstore.Millis(now), limit)
		if err != nil {
			return err
		}
		var seqs []any
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return err
			}
			seqs = append(seqs, seq)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(seqs) > 0 {
			ph := strings.Repeat(",?", len(seqs))[1:]
			if _, err := tx.Exec(`UPDATE memory_partitions SET changed = changed + 1 WHERE (tenant, scope, owner) IN
				(SELECT tenant, scope, owner FROM memories WHERE seq IN (`+ph+`))`, seqs...); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM memories WHERE seq IN (`+ph+`)`, seqs...); err != nil {
				return err
			}
			sw.Memories = len(seqs)
		}
		steps := []struct {
			n    *int
			sql  string
			args []any
		}{
			{&sw.Keys, `DELETE FROM memory_keys WHERE rowid IN (SELECT rowid FROM memory_keys WHERE created_ms <= ? LIMIT ?)`,
				[]any{sqlstore.Millis(now.Add(-memory.IdempotencyWindow)), limit}},
			{&sw.HintsExpired, `UPDATE memory_hints SET status = 'expired', resolved_ms = ?
				WHERE rowid IN (SELECT rowid FROM memory_hints WHERE status = 'pending' AND submitted_ms <= ? LIMIT ?)`,
				[]any{sqlstore.Millis(now), sqlstore.Millis(now.Add(-memory.HintPendingLimit)), limit}},
			{&sw.Hints, `DELETE FROM memory_hints WHERE rowid IN (SELECT rowid FROM memory_hints
				WHERE status <> 'pending' AND resolved_ms <= ? LIMIT ?)`, []any{sqlstore.Millis(now.Add(-memory.StatusRetention)), limit}},
			{&sw.Proposals, `DELETE FROM memory_proposals WHERE rowid IN (SELECT rowid FROM memory_proposals
				WHERE status <> 'pending' AND resolved_ms <= ? LIMIT ?)`, []any{sqlstore.Millis(now.Add(-memory.StatusRetention)), limit}},
		}
		for _, st := range steps {
			r, err := tx.Exec(st.sql, st.args...)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			*st.n = int(n)
		}
		return nil
	})
	if err != nil {
		return memory.Swept{}, fmt.Errorf("sqlite: sweep memory: %w", err)
	}
	return sw, nil
}
