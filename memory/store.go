package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors of a Store. Stores wrap them with context; callers branch with
// errors.Is.
var (
	// ErrNotFound: no such memory, proposal or hint in the tenant (or in
	// the partition the call named, or it has expired).
	ErrNotFound = errors.New("memory: not found")
	// ErrConflict: an update named a version that is no longer current,
	// or a proposal or hint was resolved already (HTTP 409).
	ErrConflict = errors.New("memory: version conflict")
	// ErrExists: a record with that id exists already.
	ErrExists = errors.New("memory: already exists")
	// ErrKeyReused: an idempotency key was used within IdempotencyWindow
	// by the same caller for a different request (HTTP 409).
	ErrKeyReused = errors.New("memory: idempotency key reused for a different request")
)

// IdempotencyWindow is how long a write or forget idempotency key is
// remembered: a replay within it returns the first result.
const IdempotencyWindow = 24 * time.Hour

// Key is the idempotency key of a write or forget as a store keeps it.
// A key belongs to its caller: the same Name sent by another agent or run
// of the tenant is another key. It is bound to the request it was first
// used for: a use within IdempotencyWindow whose Request differs is
// ErrKeyReused, never a replay of the first answer. The zero Key is no
// key.
type Key struct {
	// Name is the key as the caller sent it; "" means none.
	Name string
	// Agent and Run name the caller (its token's agent and run).
	Agent, Run string
	// Request is a digest of the request without its key (see
	// RequestDigest); two requests are the same when their digests are.
	Request string
}

// RequestDigest is the digest a Key carries for v, a request whose
// idempotency key and correlation ids have been cleared: the hex SHA-256
// of its JSON encoding, which is canonical for the request types (fields
// in declaration order, map keys sorted).
func RequestDigest(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("memory: request digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// StatusRetention is how long a resolved hint or proposal stays readable.
const StatusRetention = 24 * time.Hour

// HintPendingLimit is how long a hint may stay pending before it expires.
const HintPendingLimit = time.Hour

// TagSep separates tags in the stores' tag lists; tags may not contain it.
const TagSep = '\x1f'

// Partition is the unit of isolation inside a tenant: a scope and its
// owner (the agent, user, run or task id from the token; empty for the
// tenant scope). Searches never cross partitions.
type Partition struct {
	Scope Scope
	Owner string
}

// Memory is a stored memory as the stores keep it.
type Memory struct {
	ID             string          `json:"id"`
	Partition      Partition       `json:"partition"`
	Content        string          `json:"content"`
	Type           Type            `json:"type,omitempty"`
	Tags           []string        `json:"tags,omitempty"`
	Source         string          `json:"source,omitempty"`
	ConversationID string          `json:"conversation_id,omitempty"`
	Classification string          `json:"classification,omitempty"`
	Confidence     *float64        `json:"confidence,omitempty"`
	Custom         json.RawMessage `json:"custom,omitempty"`
	Version        int64           `json:"version"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	// ExpiresAt is when the memory stops being returned and may be swept;
	// zero means never.
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	WriteEventID string    `json:"write_event_id,omitempty"`
	// Embedding is the content's vector; stores keep it with its model id
	// and compare only vectors of one model. Nil stores none.
	Embedding *Embedding `json:"embedding,omitempty"`
}

// Embedding is a vector and the model that made it.
type Embedding struct {
	Model  string    `json:"model"`
	Vector []float32 `json:"vector"`
}

// Item renders m as a query result item with the given score (nil for
// scratch scopes).
func (m *Memory) Item(score *float64) Item {
	it := Item{MemoryID: m.ID, Scope: m.Partition.Scope, Content: m.Content, Version: m.Version, Score: score}
	md := &it.Metadata
	md.Tags = m.Tags
	if md.Tags == nil {
		md.Tags = []string{}
	}
	if m.Source != "" {
		md.Source = &m.Source
	}
	if m.ConversationID != "" {
		md.ConversationID = &m.ConversationID
	}
	md.Confidence = m.Confidence
	if m.Type != "" {
		t := m.Type
		md.MemoryType = &t
	}
	if m.Classification != "" {
		md.Classification = &m.Classification
	}
	created, updated := m.CreatedAt, m.UpdatedAt
	md.CreatedAt, md.UpdatedAt = &created, &updated
	if len(m.Custom) > 0 {
		_ = json.Unmarshal(m.Custom, &md.Custom) // stored by us from a map; a damaged value is left out
	}
	return it
}

// Result is the write result of a stored memory.
func (m *Memory) Result() WriteResult {
	return WriteResult{MemoryID: m.ID, Scope: m.Partition.Scope, WriteEventID: m.WriteEventID, CreatedAt: m.CreatedAt, Durable: true}
}

// Filter selects memories of one partition. Every store applies it before
// ranking, so a filtered query still returns up to its limit.
type Filter struct {
	Partition Partition
	// Now hides memories whose ExpiresAt is not after it.
	Now time.Time
	// Type, when set, matches only memories of that type.
	Type           Type
	ConversationID string
	// Tags: a memory matches when it carries every one of them.
	Tags           []string
	After, Before  time.Time // on CreatedAt, exclusive; zero means open
	Classification string
}

// Hit is a memory found by a search and its raw score in that search:
// higher is better (BM25-style relevance for keyword search, cosine for
// vector search).
type Hit struct {
	Memory Memory
	Score  float64
}

// Change is an update of one memory. Nil fields keep their stored values;
// set ones replace them.
type Change struct {
	Content    *string
	Tags       *[]string
	Confidence *float64
	Custom     json.RawMessage
	// Embedding replaces the vector; it must be set when Content is.
	Embedding *Embedding
	EventID   string
	Now       time.Time
}

// Audit is the append-only record of a forget.
type Audit struct {
	EventID string
	Actor   string // who asked (e.g. the agent id)
	Reason  string
	// Key is the forget's idempotency key (zero: none).
	Key Key
	At  time.Time
}

// Proposal is an agent-scope write waiting for the agent write gate.
type Proposal struct {
	ID     string // ProposalPrefix + …
	Tenant string // filled by PendingProposals
	// Memory is what the gate commits (under a new id) when it accepts.
	Memory     Memory
	Status     ProposalState
	Reason     string
	MemoryID   string // the committed memory's id
	CreatedAt  time.Time
	ResolvedAt time.Time
}

// StatusResult renders p for a proposal status poll.
func (p *Proposal) StatusResult() ProposalStatus {
	s := ProposalStatus{ProposalID: p.ID, Status: p.Status}
	if p.Reason != "" {
		r := p.Reason
		s.Reason = &r
	}
	if p.MemoryID != "" {
		id := p.MemoryID
		s.MemoryID = &id
	}
	return s
}

// Hint is an enqueued consolidation hint.
type Hint struct {
	ID             string
	Tenant         string // filled by ClaimHints
	Agent          string // who submitted it; only they may read its status
	User           string // whose memory consolidation writes
	ConversationID string
	Text           string
	Priority       string
	Tags           []string
	Context        string
	Status         HintState
	Attempts       int
	SubmittedAt    time.Time
	ResolvedAt     time.Time
}

// StatusResult renders h for a hint status poll.
func (h *Hint) StatusResult() HintStatus {
	s := HintStatus{HintID: h.ID, Status: h.Status}
	sub := h.SubmittedAt
	s.SubmittedAt = &sub
	if !h.ResolvedAt.IsZero() {
		r := h.ResolvedAt
		s.ResolvedAt = &r
	}
	return s
}

// Swept counts what a Sweep removed or expired.
type Swept struct {
	Memories     int // past their ExpiresAt, deleted
	Keys         int // idempotency keys older than IdempotencyWindow
	HintsExpired int // pending for longer than HintPendingLimit, now expired
	Hints        int // resolved for longer than StatusRetention, deleted
	Proposals    int // resolved for longer than StatusRetention, deleted
}

// IndexStats is what a store's in-process search index holds.
type IndexStats struct {
	Partitions int   // partitions whose index is loaded
	Memories   int   // live memories in them
	Bytes      int64 // the index's estimated size in memory
}

// An IndexReporter is a Store that searches over an index it keeps in
// process (store/sqlite, store/postgres) and reports its size; the memory
// service exports it as metrics. It answers from memory, at once.
type IndexReporter interface {
	IndexStats() IndexStats
}

// Store is the memory service's storage: memories with keyword and vector
// search, proposals, the hint queue and conversation messages. Every
// method that touches a tenant's data takes the tenant first; the service
// passes the tenant of the verified token, so no request can name another
// tenant's data. Methods that serve background workers across tenants
// (Sweep, PendingProposals, ClaimHints) return each record's tenant.
//
// Times come from the caller (an injected clock); stores keep
// millisecond precision.
//
// store/storetest.TestMemoryStore is the contract suite.
type Store interface {
	Memories
	Proposals
	Hints
	Conversations
	// Sweep deletes memories expired at now, idempotency keys and
	// resolved hints and proposals past their windows, and expires hints
	// pending too long; at most limit rows of each kind per call.
	Sweep(ctx context.Context, now time.Time, limit int) (Swept, error)
}

// Memories stores memories.
type Memories interface {
	// Put stores m (its ID, Version 1 and times set by the caller). With
	// a key, the first Put of that key by its caller in the tenant within
	// IdempotencyWindow (by m.CreatedAt) is the only one stored: a replay
	// of the same request returns the first result and replayed, and
	// stores nothing; one of another request is ErrKeyReused.
	// ErrExists: m.ID is taken.
	Put(ctx context.Context, tenant string, m *Memory, key Key) (res WriteResult, replayed bool, err error)
	// Get returns a memory that has not expired at now.
	Get(ctx context.Context, tenant, id string, now time.Time) (*Memory, error)
	// Update applies c to the memory id of partition p if its version is
	// version, and returns it with the next version. ErrConflict: the
	// version is stale; ErrNotFound: no such memory in p, or expired.
	Update(ctx context.Context, tenant string, p Partition, id string, version int64, c Change) (*Memory, error)
	// Forget deletes the memory id of partition p and appends a record of
	// it to the audit trail. DeletedCount is 0 (and nothing is recorded)
	// when there is no such memory. With a.Key, a replay of the same
	// request within IdempotencyWindow returns the first result, and a
	// use of the key for another request is ErrKeyReused. Write and
	// forget keys are apart: a forget never replays a write.
	Forget(ctx context.Context, tenant string, p Partition, id string, a Audit) (res ForgetResult, replayed bool, err error)
	// List returns f's memories newest first (run and task reads).
	List(ctx context.Context, tenant string, f Filter, limit int) ([]Memory, error)
	// SearchKeyword ranks f's memories by full-text relevance to terms
	// (as Terms makes them; a memory matches when it holds any), best
	// first, at most limit.
	SearchKeyword(ctx context.Context, tenant string, f Filter, terms []string, limit int) ([]Hit, error)
	// SearchVector ranks f's memories that have a vector of q's model by
	// cosine similarity to q.Vector (exact), best first, at most limit.
	SearchVector(ctx context.Context, tenant string, f Filter, q Embedding, limit int) ([]Hit, error)
	// TermStats returns how many memories partition p holds and, for each
	// of terms that any holds, how many hold it (expired memories not yet
	// swept may count: these are weights, not answers).
	TermStats(ctx context.Context, tenant string, p Partition, terms []string) (docs int, df map[string]int, err error)
	// Adjacent returns, for each of ids that has a conversation id, the
	// memories of f written just before and just after it in that
	// conversation (by CreatedAt, then write order), keyed by id.
	Adjacent(ctx context.Context, tenant string, f Filter, ids []string) (map[string][]Memory, error)
}

// Proposals stores agent-scope write proposals.
type Proposals interface {
	// PutProposal stores a pending proposal (key as for Put, whose keys
	// it shares; the result is not durable).
	PutProposal(ctx context.Context, tenant string, p *Proposal, key Key) (res WriteResult, replayed bool, err error)
	// Proposal returns a proposal of the tenant.
	Proposal(ctx context.Context, tenant, id string) (*Proposal, error)
	// PendingProposals returns up to limit pending proposals of every
	// tenant, oldest first.
	PendingProposals(ctx context.Context, limit int) ([]Proposal, error)
	// ResolveProposal records the gate's decision at now. With commit
	// set, the proposal becomes committed and commit is stored in the
	// same transaction; otherwise it becomes rejected with reason.
	// ErrConflict: it is not pending.
	ResolveProposal(ctx context.Context, tenant, id string, commit *Memory, reason string, now time.Time) error
}

// Hints is the durable consolidation queue.
type Hints interface {
	// EnqueueHint stores a pending hint; when it returns, the hint
	// survives a crash.
	EnqueueHint(ctx context.Context, tenant string, h *Hint) error
	// ClaimHints leases up to limit pending hints of any tenant whose
	// lease has lapsed at now, for lease, highest priority then oldest
	// first, and counts an attempt on each.
	ClaimHints(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Hint, error)
	// ResolveHint sets a pending hint's final state (consolidated or
	// dead_lettered) at now. ErrConflict: it is not pending.
	ResolveHint(ctx context.Context, tenant, id string, state HintState, now time.Time) error
	// Hint returns a hint of the tenant.
	Hint(ctx context.Context, tenant, id string) (*Hint, error)
}

// Conversations stores the live conversation messages assemble reads.
type Conversations interface {
	// AppendMessage appends m to the conversation.
	AppendMessage(ctx context.Context, tenant, conversation string, m LiveMessage) error
	// RecentMessages returns the last n messages, oldest first.
	RecentMessages(ctx context.Context, tenant, conversation string, n int) ([]LiveMessage, error)
}

// JoinTags encodes tags as the stores keep them: each tag between two
// TagSep, so "has tag t" is a substring test for TagSep+t+TagSep.
func JoinTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	sep := string(TagSep)
	return sep + strings.Join(tags, sep) + sep
}

// SplitTags decodes JoinTags.
func SplitTags(s string) []string {
	s = strings.Trim(s, string(TagSep))
	if s == "" {
		return nil
	}
	return strings.Split(s, string(TagSep))
}

// TagPattern is what a store searches for to find tag t in a JoinTags list.
func TagPattern(t string) string { return string(TagSep) + t + string(TagSep) }

// EncodeMemory is how stores keep a memory that is not (yet) a row of its
// own, such as a proposal's: JSON of Memory.
func EncodeMemory(m *Memory) ([]byte, error) { return json.Marshal(m) }

// DecodeMemory reads EncodeMemory's bytes, refusing a record whose scope
// or type is not one of the known ones.
func DecodeMemory(b []byte) (*Memory, error) {
	m := new(Memory)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("memory: stored record: %w", err)
	}
	if !m.Partition.Scope.Valid() || !m.Type.Valid() {
		return nil, errors.New("memory: stored record: unknown scope or type")
	}
	return m, nil
}

// Apply applies c to m, steps its version and reports whether its
// indexed text (content or tags) changed. Stores use it so that an update
// means the same on each.
func (m *Memory) Apply(c Change) (reindex bool) {
	if c.Content != nil {
		m.Content, reindex = *c.Content, true
	}
	if c.Tags != nil {
		m.Tags, reindex = *c.Tags, true
	}
	if c.Confidence != nil {
		m.Confidence = c.Confidence
	}
	if c.Custom != nil {
		m.Custom = c.Custom
	}
	m.Version++
	m.UpdatedAt = c.Now
	return reindex
}

// PriorityRank orders hint priorities for the stores (high 2, normal or
// unset 1, low 0); PriorityName reads it back.
func PriorityRank(p string) int {
	switch p {
	case PriorityLow:
		return 0
	case PriorityHigh:
		return 2
	}
	return 1
}

// PriorityName is the priority of a PriorityRank.
func PriorityName(r int) string {
	switch r {
	case 0:
		return PriorityLow
	case 2:
		return PriorityHigh
	}
	return PriorityNormal
}

// SortHints puts claimed hints in claim order: highest priority first,
// then oldest, then by tenant and id.
func SortHints(hs []Hint) {
	slices.SortStableFunc(hs, func(a, b Hint) int {
		if c := cmp.Compare(PriorityRank(b.Priority), PriorityRank(a.Priority)); c != 0 {
			return c
		}
		if c := a.SubmittedAt.Compare(b.SubmittedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
