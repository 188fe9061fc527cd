package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"novaos.dev/novaos/delivery"
)

// OutboxKind says what an outbox entry sends.
type OutboxKind string

const (
	// OutboxMessage sends a delivery.MessageCreate; the entry's ID is its
	// client_msg_id.
	OutboxMessage OutboxKind = "message"
	// OutboxCall sends any other write; the entry's ID is its
	// Idempotency-Key.
	OutboxCall OutboxKind = "call"
)

// OutboxState is where an outbox entry is: pending until the platform
// took it (sent) or refused it for good (failed). A pending entry is
// sent again, with the same ID, until one of those.
type OutboxState string

const (
	OutboxPending OutboxState = "pending"
	OutboxSent    OutboxState = "sent"
	OutboxFailed  OutboxState = "failed"
)

// Errors of an OutboxStore; callers branch with errors.Is.
var (
	// ErrOutboxNotFound: no entry has that id.
	ErrOutboxNotFound = errors.New("adapter: outbox entry not found")
	// ErrOutboxExists: an entry with that id is stored already.
	ErrOutboxExists = errors.New("adapter: outbox entry exists")
	// ErrOutboxStateConflict: the entry is no longer pending.
	ErrOutboxStateConflict = errors.New("adapter: outbox entry is not pending")
)

// OutboxRequest is the request an entry sends, the same on every try.
type OutboxRequest struct {
	Method string
	Path   string
	Body   json.RawMessage
}

// OutboxEntry is one write to send. Entries of one Thread are sent one
// after another in the order they were put; threads go in parallel.
type OutboxEntry struct {
	// ID is the message's client_msg_id, or the call's Idempotency-Key:
	// a UUIDv7 (NewID) chosen before the first try and kept on every
	// retry, so that the platform stores the write once.
	ID   string
	Kind OutboxKind
	// Thread is the order key: a message's thread id; a call's key is
	// its sender's to choose, apart from every thread's.
	Thread string
	// RunID is the run the write belongs to, if any: it is sent with
	// that run's newest invocation token.
	RunID    string
	Request  OutboxRequest
	State    OutboxState
	Attempts int
	// Problem is the problem code of the last failed try, empty when
	// there is none.
	Problem   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// String names the entry without its body, which holds content.
func (e OutboxEntry) String() string {
	return "OutboxEntry{" + string(e.Kind) + " id=" + e.ID + " thread=" + e.Thread + " " + string(e.State) +
		" attempts=" + strconv.Itoa(e.Attempts) + "}"
}

// GoString is String.
func (e OutboxEntry) GoString() string { return e.String() }

// LogValue logs the entry without its body.
func (e OutboxEntry) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", e.ID), slog.String("kind", string(e.Kind)),
		slog.String("thread", e.Thread), slog.String("state", string(e.State)), slog.Int("attempts", e.Attempts))
}

// OutboxStore keeps the adapter's writes from before their first try
// until the platform took them. Every write is durable when it returns.
// Implementations are safe for concurrent use.
type OutboxStore interface {
	// Put stores a new entry as pending, before its first try; an id
	// stored already is ErrOutboxExists.
	Put(ctx context.Context, e OutboxEntry) error
	// Get returns an entry, or ErrOutboxNotFound.
	Get(ctx context.Context, id string) (OutboxEntry, error)
	// Pending returns a thread's pending entries in the order they were
	// put.
	Pending(ctx context.Context, thread string) ([]OutboxEntry, error)
	// Threads returns the threads with pending entries, the one waiting
	// longest first.
	Threads(ctx context.Context) ([]string, error)
	// RecordAttempt counts a try of a pending entry that failed for now
	// (it stays pending) and keeps its problem code.
	RecordAttempt(ctx context.Context, id, problem string) error
	// MarkSent counts the try that the platform took and makes the entry
	// sent; an entry that is not pending is ErrOutboxStateConflict.
	MarkSent(ctx context.Context, id string) error
	// MarkFailed counts the try that the platform refused for good and
	// makes the entry failed with the problem code; it stays listed by
	// Failed. An entry that is not pending is ErrOutboxStateConflict.
	MarkFailed(ctx context.Context, id, problem string) error
	// Failed returns the failed entries in the order they were put.
	Failed(ctx context.Context) ([]OutboxEntry, error)
	// Prune drops sent entries last changed before sentBefore and says
	// how many went. Failed entries stay.
	Prune(ctx context.Context, sentBefore time.Time) (int64, error)
}

// OutboxOptions tunes an outbox store. Nil means the defaults.
type OutboxOptions struct {
	// Clock tells the time entries are stamped with (default
	// SystemClock).
	Clock Clock
	// BusyTimeout is how long a statement waits for a lock held by
	// another connection (SQLite; default 5s).
	BusyTimeout time.Duration
	// MaxBodyBytes bounds one entry's request body (default 1 MiB).
	MaxBodyBytes int
}

type outboxConfig struct {
	clock   Clock
	busy    time.Duration
	maxBody int
}

func (o *OutboxOptions) resolve() outboxConfig {
	c := outboxConfig{clock: SystemClock{}, busy: 5 * time.Second, maxBody: 1 << 20}
	if o == nil {
		return c
	}
	if o.Clock != nil {
		c.clock = o.Clock
	}
	if o.BusyTimeout > 0 {
		c.busy = o.BusyTimeout
	}
	if o.MaxBodyBytes > 0 {
		c.maxBody = o.MaxBodyBytes
	}
	return c
}

// outboxCheck checks an entry to put. A message's body must be the
// MessageCreate it says it is: its client_msg_id the entry's id, and its
// thread the entry's, so that the id a retry sends is the id stored.
func outboxCheck(e OutboxEntry, maxBody int) error {
	if e.ID == "" {
		return errors.New("adapter: outbox put: the id is empty")
	}
	if e.Thread == "" {
		return fmt.Errorf("adapter: outbox put %s: the thread is empty", e.ID)
	}
	if e.Request.Method == "" || e.Request.Path == "" {
		return fmt.Errorf("adapter: outbox put %s: the request needs a method and a path", e.ID)
	}
	if len(e.Request.Body) > maxBody {
		return fmt.Errorf("adapter: outbox put %s: body of %d bytes is over the limit of %d", e.ID, len(e.Request.Body), maxBody)
	}
	if len(e.Request.Body) > 0 && !json.Valid(e.Request.Body) {
		return fmt.Errorf("adapter: outbox put %s: the body is not JSON", e.ID)
	}
	switch e.Kind {
	case OutboxCall:
	case OutboxMessage:
		var m delivery.MessageCreate
		if json.Unmarshal(e.Request.Body, &m) != nil {
			// json's error may quote a value from the body: leave it out.
			return fmt.Errorf("adapter: outbox put %s: the body is not a message", e.ID)
		}
		if m.ClientMsgID != e.ID {
			return fmt.Errorf("adapter: outbox put %s: the message's client_msg_id is not the entry's id", e.ID)
		}
		if m.ThreadID != e.Thread {
			return fmt.Errorf("adapter: outbox put %s: the message's thread is not the entry's", e.ID)
		}
	default:
		return fmt.Errorf("adapter: outbox put %s: unknown kind %q", e.ID, e.Kind)
	}
	return nil
}

func outboxNotFound(id string) error {
	return fmt.Errorf("adapter: outbox %s: %w", id, ErrOutboxNotFound)
}

func outboxExists(id string) error { return fmt.Errorf("adapter: outbox %s: %w", id, ErrOutboxExists) }

// outboxFinish applies MarkSent, MarkFailed or RecordAttempt (to
// pending) to a stored entry.
func outboxFinish(cur *OutboxEntry, to OutboxState, problem string, now time.Time) error {
	if cur.State != OutboxPending {
		return fmt.Errorf("adapter: outbox %s is %s: %w", cur.ID, cur.State, ErrOutboxStateConflict)
	}
	cur.State = to
	cur.Attempts++
	if to != OutboxSent {
		cur.Problem = problem
	}
	cur.UpdatedAt = now
	return nil
}
