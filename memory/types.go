package memory

import (
	"encoding/json"
	"time"
)

// Scope says whose memory a call reads or writes. The owner inside a scope
// (which agent, user, run or task) comes from the caller's verified token,
// never from a request.
type Scope string

// The memory scopes, as the NovaOS memory guide defines them.
const (
	ScopeRun    Scope = "run"    // scratch of one run: key-value, short TTL, never ranked
	ScopeTask   Scope = "task"   // scratch of one A2A task, like run
	ScopeAgent  Scope = "agent"  // the agent's own durable memory, written through proposals
	ScopeUser   Scope = "user"   // the user's durable memory, written by consolidation only
	ScopeTenant Scope = "tenant" // shared by a whole tenant; admin-written
)

// Scopes lists every scope, in the order the memory guide names them.
var Scopes = []Scope{ScopeRun, ScopeTask, ScopeAgent, ScopeUser, ScopeTenant}

// Durable reports whether memories of s are similarity-ranked and kept
// beyond a run (agent, user, tenant). Run and task memories are scratch:
// read in key-value order, with a null score.
func (s Scope) Durable() bool { return s == ScopeAgent || s == ScopeUser || s == ScopeTenant }

// Valid reports whether s is one of Scopes.
func (s Scope) Valid() bool {
	switch s {
	case ScopeRun, ScopeTask, ScopeAgent, ScopeUser, ScopeTenant:
		return true
	}
	return false
}

// Type is the optional kind of a memory. An untyped memory (the empty Type)
// never matches a typed query.
type Type string

// The memory types of the NovaOS memory guide (LangMem's taxonomy).
const (
	TypeSemantic   Type = "semantic"   // facts and preferences
	TypeEpisodic   Type = "episodic"   // things that happened
	TypeProcedural Type = "procedural" // how to do something
)

// Valid reports whether t is empty (untyped) or one of the three types.
func (t Type) Valid() bool {
	switch t {
	case "", TypeSemantic, TypeEpisodic, TypeProcedural:
		return true
	}
	return false
}

// Classification labels of a memory (the NovaOS Python SDK's write). The
// empty value means the service default.
const (
	ClassInferred     = "inferred"
	ClassExplicit     = "explicit"
	ClassSystem       = "system"
	ClassConfidential = "confidential"
)

// Hint priorities.
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
)

// Metadata is what a stored memory carries beside its content
// (MemoryMetadata in the NovaOS Python SDK).
type Metadata struct {
	Tags           []string       `json:"tags"`
	Source         *string        `json:"source,omitempty"`
	ConversationID *string        `json:"conversation_id,omitempty"`
	Confidence     *float64       `json:"confidence,omitempty"`
	Salience       *float64       `json:"salience,omitempty"`
	MemoryType     *Type          `json:"memory_type,omitempty"`
	Classification *string        `json:"classification,omitempty"`
	CreatedAt      *time.Time     `json:"created_at,omitempty"`
	UpdatedAt      *time.Time     `json:"updated_at,omitempty"`
	LastAccessedAt *time.Time     `json:"last_accessed_at,omitempty"`
	Custom         map[string]any `json:"custom,omitempty"`
}

// Item is one memory returned by query or assemble (MemoryItem).
type Item struct {
	MemoryID string   `json:"memory_id"`
	Scope    Scope    `json:"scope"`
	Content  string   `json:"content"`
	Version  int64    `json:"version"`
	Metadata Metadata `json:"metadata"`
	// Score is the similarity of a durable memory to the query, 0 to 1
	// (see Similarity); always null for run and task items.
	Score *float64 `json:"score"`
}

// WriteMetadata is the metadata a write may set.
type WriteMetadata struct {
	Tags       []string       `json:"tags,omitempty"`
	Source     *string        `json:"source,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	Custom     map[string]any `json:"custom,omitempty"`
	// MemoryType is the governed door's place for the type; it must agree
	// with WriteRequest.MemoryType when both are set.
	MemoryType Type `json:"memory_type,omitempty"`
}

// WriteRequest is the arguments of novaos.memory.write.
type WriteRequest struct {
	Scope          Scope          `json:"scope"`
	Content        string         `json:"content"`
	Metadata       *WriteMetadata `json:"metadata,omitempty"`
	MemoryType     Type           `json:"memory_type,omitempty"`
	TTLSeconds     *int64         `json:"ttl_seconds,omitempty"`
	Classification string         `json:"classification,omitempty"`
	// ConversationID files the memory under a conversation for
	// conversation recall.
	ConversationID string `json:"conversation_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RequestID      string `json:"request_id,omitempty"`
	TraceID        string `json:"trace_id,omitempty"`
}

// WriteResult is the answer to a write. A memory_id with the ProposalPrefix
// is a proposal, not a stored memory, and Durable is false.
type WriteResult struct {
	MemoryID     string    `json:"memory_id"`
	Scope        Scope     `json:"scope"`
	WriteEventID string    `json:"write_event_id"`
	CreatedAt    time.Time `json:"created_at"`
	Durable      bool      `json:"durable"`
}

// Filters narrow a query. MemoryType and ConversationID are also
// top-level shortcuts on QueryRequest.
type Filters struct {
	Tags           []string   `json:"tags,omitempty"`
	After          *time.Time `json:"after,omitempty"`
	Before         *time.Time `json:"before,omitempty"`
	Classification string     `json:"classification,omitempty"`
	MemoryType     Type       `json:"memory_type,omitempty"`
	ConversationID string     `json:"conversation_id,omitempty"`
}

// Budget is the governed door's form of a query's limits.
type Budget struct {
	TopK            *int `json:"top_k,omitempty"`
	TokenBudget     *int `json:"token_budget,omitempty"`
	LatencyBudgetMS *int `json:"latency_budget_ms,omitempty"`
}

// QueryRequest is the arguments of novaos.memory.query.
type QueryRequest struct {
	Scope           Scope    `json:"scope"`
	Query           string   `json:"query"`
	TopK            *int     `json:"top_k,omitempty"`
	Budget          *Budget  `json:"budget,omitempty"`
	Filters         *Filters `json:"filters,omitempty"`
	MemoryType      Type     `json:"memory_type,omitempty"`
	ConversationID  string   `json:"conversation_id,omitempty"`
	TokenBudget     *int     `json:"token_budget,omitempty"`
	LatencyBudgetMS *int     `json:"latency_budget_ms,omitempty"`
	RequestID       string   `json:"request_id,omitempty"`
	TraceID         string   `json:"trace_id,omitempty"`
}

// QueryResult is the answer to a query. Partial is true only when a store
// failed; an empty Items with Partial false means nothing matched.
type QueryResult struct {
	Items         []Item   `json:"items"`
	RetrievalID   string   `json:"retrieval_id"`
	Partial       bool     `json:"partial"`
	StoresQueried []string `json:"stores_queried"`
}

// UpdateMetadata is what an update may replace besides the content.
type UpdateMetadata struct {
	Tags       []string       `json:"tags,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	Custom     map[string]any `json:"custom,omitempty"`
}

// UpdateRequest is the arguments of novaos.memory.update.
type UpdateRequest struct {
	Scope     Scope           `json:"scope"`
	MemoryID  string          `json:"memory_id"`
	Version   int64           `json:"version"`
	Content   *string         `json:"content,omitempty"`
	Metadata  *UpdateMetadata `json:"metadata,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	TraceID   string          `json:"trace_id,omitempty"`
}

// UpdateResult is the answer to an update; Version is the one to pass on
// the next update.
type UpdateResult struct {
	MemoryID      string    `json:"memory_id"`
	Scope         Scope     `json:"scope"`
	Version       int64     `json:"version"`
	UpdateEventID string    `json:"update_event_id"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// ForgetRequest is the arguments of novaos.memory.forget.
type ForgetRequest struct {
	Scope          Scope  `json:"scope"`
	MemoryID       string `json:"memory_id"`
	Reason         string `json:"reason"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RequestID      string `json:"request_id,omitempty"`
	TraceID        string `json:"trace_id,omitempty"`
}

// ForgetResult is the answer to a forget.
type ForgetResult struct {
	DeletedCount  int    `json:"deleted_count"`
	DeleteEventID string `json:"delete_event_id"`
}

// HintRequest is the arguments of novaos.memory.hint.
type HintRequest struct {
	Hint           string   `json:"hint"`
	ConversationID string   `json:"conversation_id"`
	Priority       string   `json:"priority,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Context        string   `json:"context,omitempty"`
	RequestID      string   `json:"request_id,omitempty"`
	TraceID        string   `json:"trace_id,omitempty"`
}

// HintAccepted is HintResult.Status when the hint is durably enqueued.
const HintAccepted = "accepted"

// HintResult is the answer to a hint.
type HintResult struct {
	HintID  string `json:"hint_id"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// HintState is where a hint is in consolidation.
type HintState string

// Hint states. A hint still pending an hour after it was submitted
// becomes expired; every state is kept for 24 hours.
const (
	HintPending      HintState = "pending"
	HintConsolidated HintState = "consolidated"
	HintDeadLettered HintState = "dead_lettered"
	HintExpired      HintState = "expired"
)

// HintStatus is the outcome of a hint (hint status tool).
type HintStatus struct {
	HintID      string     `json:"hint_id"`
	Status      HintState  `json:"status"`
	SubmittedAt *time.Time `json:"submitted_at"`
	ResolvedAt  *time.Time `json:"resolved_at"`
}

// ProposalPrefix starts every proposal id. A proposal id names no stored
// memory and is refused by forget and update.
const ProposalPrefix = "prop_"

// ProposalState is the agent write gate's decision on a proposal.
type ProposalState string

// Proposal states.
const (
	ProposalPending   ProposalState = "pending"
	ProposalCommitted ProposalState = "committed"
	ProposalRejected  ProposalState = "rejected"
)

// ProposalStatus is the answer to a proposal status poll. MemoryID is the
// committed memory's id (a different id from the proposal's).
type ProposalStatus struct {
	ProposalID string        `json:"proposal_id"`
	Status     ProposalState `json:"status"`
	Reason     *string       `json:"reason"`
	MemoryID   *string       `json:"memory_id"`
}

// AssembleRequest is the arguments of novaos.memory.assemble.
type AssembleRequest struct {
	Query            string `json:"query"`
	TopK             *int   `json:"top_k,omitempty"`
	LiveMessageLimit *int   `json:"live_message_limit,omitempty"`
	TokenBudget      *int   `json:"token_budget,omitempty"`
	LatencyBudgetMS  *int   `json:"latency_budget_ms,omitempty"`
	MemoryType       Type   `json:"memory_type,omitempty"`
	ConversationID   string `json:"conversation_id,omitempty"`
	RequestID        string `json:"request_id,omitempty"`
	TraceID          string `json:"trace_id,omitempty"`
}

// LiveMessage is one message of the live conversation.
type LiveMessage struct {
	MessageID string    `json:"message_id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	Timestamp time.Time `json:"timestamp"`
}

// AssembleResult is the context bundle of an assemble.
type AssembleResult struct {
	DurableMemories  []Item          `json:"durable_memories"`
	LiveMessages     []LiveMessage   `json:"live_messages"`
	AgentMemories    []Item          `json:"agent_memories"`
	RunData          json.RawMessage `json:"run_data"`
	SourcesConsulted []string        `json:"sources_consulted"`
	SourcesSkipped   []string        `json:"sources_skipped"`
	Partial          bool            `json:"partial"`
	RetrievalID      *string         `json:"retrieval_id"`
}
