package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of a Store; stores wrap them, callers branch with errors.Is.
var (
	ErrNotFound = errors.New("delivery: not found")
	// ErrInvalidSeq: an acknowledgement beyond the agent's newest event.
	ErrInvalidSeq = errors.New("delivery: sequence beyond the newest event")
	// ErrExists: a record with that key exists already.
	ErrExists = errors.New("delivery: already exists")
)

// Store keeps the platform's side of pull delivery: each agent's event
// stream, its consumers' cursors, the newest invocation token of each
// run, agents' API tokens, the DPoP proofs accepted, idempotent answers
// and messages. Every method
// is safe for concurrent use, by several processes where the database is
// shared, and every write is durable when it returns.
type Store interface {
	// AppendEvents stores events, each at its agent's next sequence, in
	// one transaction, and returns them as stored in order. An event
	// whose (AgentID, DedupeKey) is stored already is not stored again:
	// the stored one is returned in its place.
	AppendEvents(ctx context.Context, events []StoredEvent) ([]StoredEvent, error)
	// ReadEvents returns up to limit of an agent's events with a
	// sequence greater than after, in order.
	ReadEvents(ctx context.Context, agentID string, after int64, limit int) ([]StoredEvent, error)
	// HeadSeq is an agent's newest sequence, 0 before its first event.
	HeadSeq(ctx context.Context, agentID string) (int64, error)
	// WatchEvents calls fn, until ctx ends, after every commit that
	// appends events, here or in another process sharing the database,
	// with the agent and its new head. fn("", 0) says notifications may
	// have been lost: read again. fn must not block.
	WatchEvents(ctx context.Context, fn func(agentID string, head int64)) error

	// OpenConsumer returns an agent's consumer, creating it (AckedSeq
	// and SentSeq at the agent's head) when there is none.
	OpenConsumer(ctx context.Context, agentID, name string, now time.Time) (Consumer, error)
	// GetConsumer returns a consumer, or ErrNotFound.
	GetConsumer(ctx context.Context, agentID, name string) (Consumer, error)
	// UpdateConsumer writes a consumer's fields but its key and Version
	// when its stored Version is c.Version (else ErrConflict), adding one
	// to the Version. AckedSeq never moves back here (RewindConsumer
	// does that) and never passes the head (ErrInvalidSeq).
	UpdateConsumer(ctx context.Context, c Consumer, now time.Time) (Consumer, error)
	// RewindConsumer sets AckedSeq and SentSeq to seq (at most the head),
	// whatever they were: an operator replays a consumer's events.
	RewindConsumer(ctx context.Context, agentID, name string, seq int64, now time.Time) (Consumer, error)

	// RecordTokens stores each token as its run's newest, in one
	// transaction; of two for one run, the later in the slice wins.
	RecordTokens(ctx context.Context, tokens []TokenRecord) error
	// NewestToken returns the newest token recorded for a run, or
	// ErrNotFound.
	NewestToken(ctx context.Context, runID string) (TokenRecord, error)
	// ConsumeToken marks a token used once (a resume), kept until until
	// (when the token can no longer be used anyway); ErrExists when it
	// was used already.
	ConsumeToken(ctx context.Context, jti string, until time.Time) error
	// PruneUsedTokens drops up to limit used tokens kept until no later
	// than now (MaxUsedTokenPrune when limit is not in (0,
	// MaxUsedTokenPrune]), and counts them: a caller drops many in
	// bounded steps.
	PruneUsedTokens(ctx context.Context, now time.Time, limit int) (int64, error)

	// RecordProof records a DPoP proof's id (a hash naming the proof and
	// its key, of 1 to MaxProofIDBytes bytes; never the proof), kept
	// until until, and reports whether it was fresh: not recorded, or
	// recorded until no later than now, when it is recorded again. Of
	// callers racing with one id, in this process or in another sharing
	// the database, exactly one finds it fresh.
	RecordProof(ctx context.Context, id []byte, now, until time.Time) (fresh bool, err error)
	// PruneProofs drops up to limit proof ids kept until no later than
	// now (MaxProofPrune when limit is not in (0, MaxProofPrune]), and
	// counts them: a caller drops many in bounded steps.
	PruneProofs(ctx context.Context, now time.Time, limit int) (int64, error)

	// CreateAPIToken stores an agent's API token by its hash.
	CreateAPIToken(ctx context.Context, t APIToken) error
	// FindAPIToken returns the token with that hash, or ErrNotFound.
	FindAPIToken(ctx context.Context, hash []byte) (APIToken, error)
	// RevokeAPIToken marks a token revoked at now.
	RevokeAPIToken(ctx context.Context, agentID, id string, now time.Time) error

	// BeginRequest claims an Idempotency-Key in a scope (an agent): a
	// new key is stored in progress and returned with fresh true; a
	// known one is returned as it is (in progress, or with its answer).
	BeginRequest(ctx context.Context, r IdempotentRequest) (stored IdempotentRequest, fresh bool, err error)
	// FinishRequest stores the answer of a claimed key.
	FinishRequest(ctx context.Context, r IdempotentRequest) error
	// ForgetRequest drops a claimed key whose request failed without an
	// answer worth repeating, so that a retry runs again.
	ForgetRequest(ctx context.Context, scope, key string) error
	// PruneRequests drops keys created before cutoff.
	PruneRequests(ctx context.Context, cutoff time.Time) (int64, error)

	// CreateMessage stores a message once per (AgentID, ClientMsgID):
	// a repeat returns the stored message and created false.
	CreateMessage(ctx context.Context, m StoredMessage) (stored StoredMessage, created bool, err error)
	// ThreadMessages returns up to limit of a thread's messages in the
	// order they were stored, the newest limit of them.
	ThreadMessages(ctx context.Context, tenantID, threadID string, limit int) ([]StoredMessage, error)
}

// ErrConflict: a write named a version that is no longer current.
var ErrConflict = errors.New("delivery: version conflict")

// StoredEvent is an event as a Store keeps it, with no delivery fields.
type StoredEvent struct {
	AgentID  string `json:"agent_id"`
	TenantID string `json:"tenant_id"`
	Seq      int64  `json:"seq"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	// RunID is the run the event is about, if any.
	RunID string `json:"run_id,omitempty"`
	// DedupeKey makes an append idempotent (for example "invocation:" +
	// run id + ":" + turn); empty never deduplicates.
	DedupeKey    string          `json:"dedupe_key,omitempty"`
	Payload      json.RawMessage `json:"payload"`
	TraceContext *TraceContext   `json:"trace_context,omitempty"`
	// Grant is what every token delivered with the event says besides
	// its times and id (iss, aud, sub, run, thread, trigger, billing,
	// tool class, permission version), fixed when the event is stored;
	// nil for an event that carries no token.
	Grant     *Claims   `json:"grant,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Consumer is a named cursor of an agent's stream. AckedSeq is
// acknowledged; SentSeq is how far events were sent to it, at SentAt;
// sent events not acknowledged within the ack timeout are sent again.
// SessionID is the gateway session that holds it: a new session taking
// it over closes the old one.
type Consumer struct {
	AgentID   string    `json:"agent_id"`
	Name      string    `json:"name"`
	AckedSeq  int64     `json:"acked_seq"`
	SentSeq   int64     `json:"sent_seq"`
	SentAt    time.Time `json:"sent_at,omitzero"`
	SessionID string    `json:"session_id,omitempty"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TokenRecord is an invocation token as its run's newest: its id and
// times, never the token.
type TokenRecord struct {
	RunID    string `json:"run_id"`
	JTI      string `json:"jti"`
	EventID  string `json:"event_id"`
	Consumer string `json:"consumer"`
	// Seq is the sequence number of the event the token was delivered
	// with; 0 for a renewal's token.
	Seq       int64     `json:"seq,omitempty"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// APIToken is an agent's credential, kept by its SHA-256 hash.
type APIToken struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenant_id"`
	AgentID   string    `json:"agent_id"`
	Hash      []byte    `json:"-"`
	DPoPJKT   string    `json:"dpop_jkt,omitempty"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// IdempotentRequest is an Idempotency-Key and, once answered, its
// answer. RequestHash tells a repeat from another request under the same
// key.
type IdempotentRequest struct {
	Scope       string    `json:"scope"`
	Key         string    `json:"key"`
	RequestHash []byte    `json:"request_hash"`
	Done        bool      `json:"done"`
	Status      int       `json:"status,omitempty"`
	Body        []byte    `json:"body,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// StoredMessage is a message an agent sent to a thread.
type StoredMessage struct {
	ID          string          `json:"id"`
	TenantID    string          `json:"tenant_id"`
	AgentID     string          `json:"agent_id"`
	ThreadID    string          `json:"thread_id"`
	RunID       string          `json:"run_id,omitempty"`
	ClientMsgID string          `json:"client_msg_id"`
	ReplyTo     string          `json:"reply_to_message_id,omitempty"`
	Kind        string          `json:"kind"`
	ContentMD   string          `json:"content_md"`
	Components  json.RawMessage `json:"components,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
}

// MaxPage is the longest page of events a Store returns.
const MaxPage = 500

// MaxProofIDBytes bounds a proof id a Store records (RecordProof): a
// SHA-256 hash takes 32.
const MaxProofIDBytes = 64

// MaxProofPrune bounds the proof ids one PruneProofs drops.
const MaxProofPrune = 10_000

// MaxUsedTokenPrune bounds the used tokens one PruneUsedTokens drops.
const MaxUsedTokenPrune = 10_000
