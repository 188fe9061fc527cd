package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The rules every Store applies before it writes, so that the memory and
// SQL stores keep records alike: times to the microsecond in UTC (now,
// time.Now when zero, where a record has no time of its own), byte
// strings and JSON copied as given (empty ones nil), and the fields a
// store assigns set. They are exported for stores outside this package.

// storeTime is t as a Store keeps it: to the microsecond, in UTC; the
// zero time stays zero.
func storeTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

func storeNow(now time.Time) time.Time {
	if now.IsZero() {
		now = time.Now()
	}
	return storeTime(now)
}

// storeBytes copies b; empty is nil, as the SQL stores read it back.
func storeBytes[T ~[]byte](b T) T {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// storeEventCopy returns a copy of e sharing nothing with it.
func storeEventCopy(e StoredEvent) StoredEvent {
	e.Payload = storeBytes(e.Payload)
	if e.TraceContext != nil {
		tc := *e.TraceContext
		e.TraceContext = &tc
	}
	if e.Grant != nil {
		g := *e.Grant
		e.Grant = &g
	}
	return e
}

// PrepareEvents checks events a Store is about to append and returns
// copies as the store keeps them: Seq 0 (the store numbers them),
// CreatedAt now when zero. An event needs an agent, a tenant, an id and a
// type, and a payload that is JSON when it is not empty.
func PrepareEvents(events []StoredEvent, now time.Time) ([]StoredEvent, error) {
	now = storeNow(now)
	out := make([]StoredEvent, len(events))
	for i, e := range events {
		switch {
		case e.AgentID == "" || e.TenantID == "" || e.ID == "" || e.Type == "":
			return nil, fmt.Errorf("event %d: an event needs an agent, a tenant, an id and a type", i)
		case len(e.Payload) > 0 && !json.Valid(e.Payload):
			return nil, fmt.Errorf("event %d (%s): the payload is not JSON", i, e.ID)
		}
		e = storeEventCopy(e)
		e.Seq = 0
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now
		}
		e.CreatedAt = storeTime(e.CreatedAt)
		out[i] = e
	}
	return out, nil
}

var storeErrNoKey = errors.New("a consumer needs an agent and a name")

// NewConsumer is the consumer OpenConsumer creates at the agent's head.
func NewConsumer(agentID, name string, head int64, now time.Time) (Consumer, error) {
	if agentID == "" || name == "" {
		return Consumer{}, storeErrNoKey
	}
	now = storeNow(now)
	return Consumer{AgentID: agentID, Name: name, AckedSeq: head, SentSeq: head, Version: 1, CreatedAt: now, UpdatedAt: now}, nil
}

// UpdatedConsumer is what UpdateConsumer writes over stored, the consumer
// as stored while the agent's newest sequence is head: c's fields but its
// key, Version and CreatedAt, with AckedSeq the larger of stored's and
// c's, SentSeq at least that, the next Version and UpdatedAt now. It
// fails with ErrConflict when c.Version is not stored's, and with
// ErrInvalidSeq when c's AckedSeq or SentSeq is negative or passes head.
func UpdatedConsumer(stored, c Consumer, head int64, now time.Time) (Consumer, error) {
	switch {
	case c.Version != stored.Version:
		return Consumer{}, fmt.Errorf("version %d is not the current %d: %w", c.Version, stored.Version, ErrConflict)
	case c.AckedSeq < 0 || c.AckedSeq > head:
		return Consumer{}, fmt.Errorf("acknowledged sequence %d with the newest event at %d: %w", c.AckedSeq, head, ErrInvalidSeq)
	case c.SentSeq < 0 || c.SentSeq > head:
		return Consumer{}, fmt.Errorf("sent sequence %d with the newest event at %d: %w", c.SentSeq, head, ErrInvalidSeq)
	}
	next := c
	next.AgentID, next.Name, next.CreatedAt = stored.AgentID, stored.Name, stored.CreatedAt
	next.AckedSeq = max(stored.AckedSeq, c.AckedSeq)
	next.SentSeq = max(c.SentSeq, next.AckedSeq)
	next.SentAt = storeTime(c.SentAt)
	next.Version, next.UpdatedAt = stored.Version+1, storeNow(now)
	return next, nil
}

// RewoundConsumer is what RewindConsumer writes over stored while the
// agent's newest sequence is head: AckedSeq and SentSeq seq, the next
// Version and UpdatedAt now. It fails with ErrInvalidSeq when seq is
// negative or passes head.
func RewoundConsumer(stored Consumer, seq, head int64, now time.Time) (Consumer, error) {
	if seq < 0 || seq > head {
		return Consumer{}, fmt.Errorf("sequence %d with the newest event at %d: %w", seq, head, ErrInvalidSeq)
	}
	next := stored
	next.AckedSeq, next.SentSeq = seq, seq
	next.Version, next.UpdatedAt = stored.Version+1, storeNow(now)
	return next, nil
}

// PrepareTokens checks tokens RecordTokens is about to store and returns
// copies as the store keeps them, one per run: of two for one run the
// later in tokens, at the place of the first. A record needs a run and an
// id.
func PrepareTokens(tokens []TokenRecord) ([]TokenRecord, error) {
	out := make([]TokenRecord, 0, len(tokens))
	at := make(map[string]int, len(tokens))
	for i, r := range tokens {
		if r.RunID == "" || r.JTI == "" {
			return nil, fmt.Errorf("token %d: a token record needs a run and an id", i)
		}
		r.IssuedAt, r.ExpiresAt = storeTime(r.IssuedAt), storeTime(r.ExpiresAt)
		if j, ok := at[r.RunID]; ok {
			out[j] = r
			continue
		}
		at[r.RunID] = len(out)
		out = append(out, r)
	}
	return out, nil
}

// PrepareAPIToken checks a token CreateAPIToken is about to store and
// sets it as the store keeps it: Hash copied, CreatedAt now when zero.
// A token needs an id, a tenant, an agent and a hash.
func PrepareAPIToken(t *APIToken, now time.Time) error {
	if t.ID == "" || t.TenantID == "" || t.AgentID == "" || len(t.Hash) == 0 {
		return errors.New("an API token needs an id, a tenant, an agent and a hash")
	}
	t.Hash = storeBytes(t.Hash)
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.CreatedAt, t.RevokedAt = storeNow(t.CreatedAt), storeTime(t.RevokedAt)
	return nil
}

// storeTokenCopy returns a copy of t sharing nothing with it.
func storeTokenCopy(t APIToken) APIToken {
	t.Hash = storeBytes(t.Hash)
	return t
}

// PrepareRequest checks a key BeginRequest is about to claim and sets it
// as the store keeps it, in progress: not Done, no answer, RequestHash
// copied, CreatedAt now when zero. A key needs a scope and a key.
func PrepareRequest(r *IdempotentRequest, now time.Time) error {
	if r.Scope == "" || r.Key == "" {
		return errors.New("an idempotent request needs a scope and a key")
	}
	r.RequestHash = storeBytes(r.RequestHash)
	r.Done, r.Status, r.Body = false, 0, nil
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.CreatedAt = storeNow(r.CreatedAt)
	return nil
}

// storeRequestCopy returns a copy of r sharing nothing with it.
func storeRequestCopy(r IdempotentRequest) IdempotentRequest {
	r.RequestHash, r.Body = storeBytes(r.RequestHash), storeBytes(r.Body)
	return r
}

// PrepareMessage checks a message CreateMessage is about to store and
// sets it as the store keeps it: Components copied, CreatedAt now when
// zero. A message needs an id, a tenant, an agent, a thread and a client
// message id, and components that are JSON when they are not empty.
func PrepareMessage(m *StoredMessage, now time.Time) error {
	switch {
	case m.ID == "" || m.TenantID == "" || m.AgentID == "" || m.ThreadID == "" || m.ClientMsgID == "":
		return errors.New("a message needs an id, a tenant, an agent, a thread and a client message id")
	case len(m.Components) > 0 && !json.Valid(m.Components):
		return fmt.Errorf("message %s: the components are not JSON", m.ID)
	}
	m.Components = storeBytes(m.Components)
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.CreatedAt = storeNow(m.CreatedAt)
	return nil
}

// storeMessageCopy returns a copy of m sharing nothing with it.
func storeMessageCopy(m StoredMessage) StoredMessage {
	m.Components = storeBytes(m.Components)
	return m
}

// storePageLimit is limit when it is in (0, MaxPage], else MaxPage.
func storePageLimit(limit int) int {
	if limit <= 0 || limit > MaxPage {
		return MaxPage
	}
	return limit
}

// CheckProofID checks a proof id RecordProof is about to record: 1 to
// MaxProofIDBytes bytes.
func CheckProofID(id []byte) error {
	if len(id) == 0 || len(id) > MaxProofIDBytes {
		return fmt.Errorf("a proof id takes 1 to %d bytes, not %d", MaxProofIDBytes, len(id))
	}
	return nil
}
