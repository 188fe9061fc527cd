package sqlstore

import (
	"fmt"
	"time"

	"novaos.dev/novaos/memory"
)

// The memory store's records in the column layout both SQL stores share
// (their memory migrations): times in milliseconds since the Unix epoch,
// 0 for the zero time; tags joined by memory.JoinTags; a memory's custom
// JSON as bytes, NULL when empty; its confidence NULL when unset.

// MemoryCols are the columns of memories (aliased m), in ScanMemory's
// order.
const MemoryCols = `m.seq, m.id, m.scope, m.owner, m.content, m.type, m.tags, m.source, m.conversation_id, m.classification,
	m.confidence, m.custom, m.version, m.created_ms, m.updated_ms, m.expires_ms, m.write_event_id`

// ProposalCols are the columns of memory_proposals, in ScanProposal's
// order.
const ProposalCols = `tenant, id, status, reason, memory_id, body, created_ms, resolved_ms`

// HintCols are the columns of memory_hints, in ScanHint's order.
const HintCols = `tenant, id, agent, user_id, conversation_id, text, priority, tags, context, status, attempts, submitted_ms, resolved_ms`

// Millis is t in milliseconds since the Unix epoch, 0 for the zero time.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis is the time Millis stored, in UTC.
func FromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// ScanMemory reads a row of MemoryCols, and into extra the columns a
// query selects after them; it returns the memory and its sequence
// number.
func ScanMemory(r Scanner, extra ...any) (*memory.Memory, int64, error) {
	var (
		m                           memory.Memory
		seq, version, cms, ums, ems int64
		scope, typ, tags            string
		custom                      []byte
	)
	dest := []any{&seq, &m.ID, &scope, &m.Partition.Owner, &m.Content, &typ, &tags, &m.Source, &m.ConversationID,
		&m.Classification, &m.Confidence, &custom, &version, &cms, &ums, &ems, &m.WriteEventID}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, 0, err
	}
	m.Partition.Scope, m.Type, m.Tags = memory.Scope(scope), memory.Type(typ), memory.SplitTags(tags)
	if len(custom) > 0 {
		m.Custom = custom
	}
	m.Version, m.CreatedAt, m.UpdatedAt, m.ExpiresAt = version, FromMillis(cms), FromMillis(ums), FromMillis(ems)
	return &m, seq, nil
}

// ScanProposal reads a row of ProposalCols.
func ScanProposal(r Scanner) (*memory.Proposal, error) {
	var p memory.Proposal
	var status string
	var body []byte
	var cms, rms int64
	if err := r.Scan(&p.Tenant, &p.ID, &status, &p.Reason, &p.MemoryID, &body, &cms, &rms); err != nil {
		return nil, err
	}
	m, err := memory.DecodeMemory(body)
	if err != nil {
		return nil, fmt.Errorf("proposal %s: %w", p.ID, err)
	}
	p.Memory, p.Status, p.CreatedAt, p.ResolvedAt = *m, memory.ProposalState(status), FromMillis(cms), FromMillis(rms)
	return &p, nil
}

// ScanHint reads a row of HintCols.
func ScanHint(r Scanner) (*memory.Hint, error) {
	var h memory.Hint
	var prio int
	var tags, status string
	var sms, rms int64
	if err := r.Scan(&h.Tenant, &h.ID, &h.Agent, &h.User, &h.ConversationID, &h.Text, &prio, &tags, &h.Context,
		&status, &h.Attempts, &sms, &rms); err != nil {
		return nil, err
	}
	h.Priority, h.Tags, h.Status = memory.PriorityName(prio), memory.SplitTags(tags), memory.HintState(status)
	h.SubmittedAt, h.ResolvedAt = FromMillis(sms), FromMillis(rms)
	return &h, nil
}
