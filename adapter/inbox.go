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
	"novaos.dev/novaos/secret"
)

// InboxState is where an inbox entry is in its run's life. An entry is
// accepted when stored, started once its run started (or resumed) with
// it, waiting while its run waits for input, and closed at the end.
// Closed is final.
type InboxState string

const (
	InboxAccepted InboxState = "accepted"
	InboxStarted  InboxState = "started"
	InboxWaiting  InboxState = "waiting"
	InboxClosed   InboxState = "closed"
)

// valid reports whether s is one of the four states.
func (s InboxState) valid() bool {
	switch s {
	case InboxAccepted, InboxStarted, InboxWaiting, InboxClosed:
		return true
	}
	return false
}

// inboxMoves are the transitions SetState allows: a run starts from an
// accepted entry, waits for input and resumes, and any entry not closed
// may close. Nothing leaves closed, so a restart cannot start a run
// twice from one entry.
var inboxMoves = map[InboxState][]InboxState{
	InboxAccepted: {InboxStarted, InboxClosed},
	InboxStarted:  {InboxWaiting, InboxClosed},
	InboxWaiting:  {InboxStarted, InboxClosed},
}

func inboxCanMove(from, to InboxState) bool {
	for _, s := range inboxMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Errors of an InboxStore; callers branch with errors.Is.
var (
	// ErrInboxNotFound: no entry has that event id.
	ErrInboxNotFound = errors.New("adapter: inbox entry not found")
	// ErrInboxStateConflict: the entry is not in the state a change
	// expected (another task moved it first), or is closed.
	ErrInboxStateConflict = errors.New("adapter: inbox entry state conflict")
	// ErrStoreFileMode: a store's file (or its journal) may be read or
	// written by other users than its owner; it is refused rather than
	// used, because it holds invocation tokens and unsent replies.
	ErrStoreFileMode = errors.New("adapter: store file is accessible by group or others (want mode 0600)")
)

// InboxToken is an invocation token as the inbox keeps it: the token,
// which never prints (secret.Value), and the claims the inbox decides by.
type InboxToken struct {
	Value     secret.Value
	JTI       string
	IssuedAt  time.Time // "iat": of two tokens, the one issued later is newer
	ExpiresAt time.Time // "exp"
}

// InboxEntry is one stored event. Envelope is the event as delivered
// without its token (delivery.Event with InvocationToken cleared); the
// token is Token, newest first.
type InboxEntry struct {
	EventID  string
	Seq      int64
	Type     string
	RunID    string
	Envelope json.RawMessage
	Token    InboxToken
	State    InboxState
	// Deliveries counts the deliveries of the event, the first included.
	Deliveries  int
	CloseReason string
	AcceptedAt  time.Time // stored first
	UpdatedAt   time.Time // changed last
	ClosedAt    time.Time // zero unless closed
}

// Event decodes the stored envelope. Its InvocationToken is empty: the
// token is e.Token.
func (e InboxEntry) Event() (delivery.Event, error) {
	var ev delivery.Event
	if err := json.Unmarshal(e.Envelope, &ev); err != nil {
		return delivery.Event{}, fmt.Errorf("adapter: inbox entry %s: decode envelope: %w", e.EventID, err)
	}
	return ev, nil
}

// String names the entry by event, run and state, without its token or
// payload.
func (e InboxEntry) String() string {
	return "InboxEntry{" + e.Type + " seq=" + strconv.FormatInt(e.Seq, 10) + " id=" + e.EventID +
		" run=" + e.RunID + " " + string(e.State) + " deliveries=" + strconv.Itoa(e.Deliveries) + "}"
}

// GoString is String.
func (e InboxEntry) GoString() string { return e.String() }

// LogValue logs the entry's event, run and state.
func (e InboxEntry) LogValue() slog.Value {
	return slog.GroupValue(slog.String("event_id", e.EventID), slog.Int64("seq", e.Seq),
		slog.String("type", e.Type), slog.String("run_id", e.RunID), slog.String("state", string(e.State)))
}

// InboxAccept is one delivery to store. Event is the event as delivered;
// the inbox keeps its InvocationToken apart and stores the envelope
// without it. Token.Value, when zero, is taken from Event.InvocationToken;
// Token's JTI and times are the verified claims.
type InboxAccept struct {
	Event delivery.Event
	RunID string
	Token InboxToken
	// RememberUntil, when set, stores Token.JTI as seen until then (see
	// RememberJTI), in the same transaction.
	RememberUntil time.Time
	// State is a new entry's state: accepted when empty; closed (with
	// CloseReason) for an event refused at once, so that a redelivery is
	// a duplicate and not processed again.
	State       InboxState
	CloseReason string
}

// LogValue logs the delivery's event and run; a delivery.Event inside a
// struct would otherwise be logged as JSON, token and all.
func (a InboxAccept) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("event", a.Event), slog.String("run_id", a.RunID),
		slog.String("jti", a.Token.JTI), slog.String("state", string(a.State)))
}

// InboxOutcome says what Accept did with one delivery.
type InboxOutcome string

const (
	// InboxNew: the event was not stored; it is now.
	InboxNew InboxOutcome = "new"
	// InboxDuplicate: the event was stored; its delivery count went up
	// and its token stayed (the entry has left accepted, or the
	// delivered token is older).
	InboxDuplicate InboxOutcome = "duplicate"
	// InboxTokenReplaced: the event was stored and still accepted; the
	// delivered token, not older, replaced the stored one.
	InboxTokenReplaced InboxOutcome = "token_replaced"
)

// InboxResult is Accept's answer for one delivery: its outcome and the
// entry as stored after it.
type InboxResult struct {
	Outcome InboxOutcome
	Entry   InboxEntry
}

// LogValue logs the outcome and the entry.
func (r InboxResult) LogValue() slog.Value {
	return slog.GroupValue(slog.String("outcome", string(r.Outcome)), slog.Any("entry", r.Entry))
}

// InboxStore is the adapter's durable inbox of events and the invocation
// token ids it has seen. Every write is one transaction, durable when it
// returns, so an event is acknowledged to the platform only once it
// survives a crash. Implementations are safe for concurrent use.
type InboxStore interface {
	// Accept stores a batch of deliveries in one transaction and answers
	// for each, in order. A new event is stored. For a stored one the
	// delivery count goes up, and while the entry is accepted its token
	// is replaced by a delivered token whose iat is not older (of equal
	// iat the later arrival wins); once the run started the token stays.
	Accept(ctx context.Context, batch []InboxAccept) ([]InboxResult, error)
	// Get returns the entry of an event, or ErrInboxNotFound.
	Get(ctx context.Context, eventID string) (InboxEntry, error)
	// ByRun returns the entries of a run in sequence order.
	ByRun(ctx context.Context, runID string) ([]InboxEntry, error)
	// SetState moves an entry from one state to another when it is in
	// from (else ErrInboxStateConflict), recording reason when to is
	// closed. Allowed moves: accepted to started or closed, started to
	// waiting or closed, waiting to started or closed.
	SetState(ctx context.Context, eventID string, from, to InboxState, reason string) error
	// ReplaceToken stores a token (a renewal's grant) as the entry's
	// newest unless the stored one was issued later (then replaced is
	// false). A closed entry keeps its token: ErrInboxStateConflict.
	ReplaceToken(ctx context.Context, eventID string, tok InboxToken) (replaced bool, err error)
	// List returns the entries in any of states (every entry when none
	// is given) in sequence order: what a restart resumes, and the active
	// runs a heartbeat reports.
	List(ctx context.Context, states ...InboxState) ([]InboxEntry, error)
	// Prune drops the entries closed before closedBefore, and token ids
	// remembered until now or earlier; it returns how many entries went.
	Prune(ctx context.Context, closedBefore time.Time) (int64, error)

	// RememberJTI stores a token id as seen until until (a later until
	// wins over an earlier one).
	RememberJTI(ctx context.Context, jti string, until time.Time) error
	// SeenJTI reports whether a token id is remembered and its until is
	// still ahead.
	SeenJTI(ctx context.Context, jti string) (bool, error)
	// Seen is SeenJTI, for the verifier's replay check.
	Seen(ctx context.Context, jti string) (bool, error)
}

// InboxSealer seals tokens at rest (internal/sealkey's Sealer is one):
// purpose names what is sealed, binding where it is kept, and a value
// opens only for both.
type InboxSealer interface {
	Seal(plain []byte, purpose string, binding ...string) (string, error)
	Unseal(sealed string, purpose string, binding ...string) ([]byte, error)
}

// inboxSealPurpose is what a sealed inbox token is for; each is bound to
// its event id, so a sealed token moved to another entry does not open.
const inboxSealPurpose = "novaos adapter inbox-token v1"

// InboxOptions tunes an inbox. Nil means the defaults.
type InboxOptions struct {
	// Clock tells the time entries are stamped with and token ids
	// expire by (default SystemClock).
	Clock Clock
	// BusyTimeout is how long a statement waits for a lock held by
	// another connection (SQLite; default 5s).
	BusyTimeout time.Duration
	// MaxEnvelopeBytes bounds one stored envelope (default 1 MiB, the
	// longest gateway frame by default).
	MaxEnvelopeBytes int
	// MaxBatch bounds a group commit (SQLite; default 1024): once it
	// holds this many deliveries it takes no more calls, so that a flood
	// of callers still sees commits at a steady pace. One Accept is never
	// split: a larger one is committed whole.
	MaxBatch int
	// Sealer, when set, seals every stored token (SQLite). A file whose
	// tokens are sealed opens only with the same key.
	Sealer InboxSealer
	// ObserveCommit, when set, is told the number of Accept calls and
	// other writes of each group commit once it committed, for metrics
	// (SQLite). It runs between commits and must return at once.
	ObserveCommit func(writes int)
}

type inboxConfig struct {
	clock       Clock
	busy        time.Duration
	maxEnvelope int
	maxBatch    int
	sealer      InboxSealer
	observe     func(int)
}

func (o *InboxOptions) resolve() inboxConfig {
	c := inboxConfig{clock: SystemClock{}, busy: 5 * time.Second, maxEnvelope: 1 << 20, maxBatch: 1024}
	if o == nil {
		return c
	}
	if o.Clock != nil {
		c.clock = o.Clock
	}
	if o.BusyTimeout > 0 {
		c.busy = o.BusyTimeout
	}
	if o.MaxEnvelopeBytes > 0 {
		c.maxEnvelope = o.MaxEnvelopeBytes
	}
	if o.MaxBatch > 0 {
		c.maxBatch = o.MaxBatch
	}
	c.sealer = o.Sealer
	c.observe = o.ObserveCommit
	return c
}

// inboxItem is a delivery checked and prepared for storing: its envelope
// encoded without the token, the token apart.
type inboxItem struct {
	entry    InboxEntry // as a new entry would be stored (times set at commit)
	remember time.Time
}

// inboxPrepare checks a batch and encodes its envelopes, before any
// transaction, so that a bad delivery fails the call and nothing else.
func inboxPrepare(batch []InboxAccept, maxEnvelope int) ([]inboxItem, error) {
	items := make([]inboxItem, len(batch))
	for i, a := range batch {
		ev := a.Event
		if ev.ID == "" {
			return nil, fmt.Errorf("adapter: inbox accept [%d]: event id is empty", i)
		}
		if ev.Type == "" {
			return nil, fmt.Errorf("adapter: inbox accept %s: event type is empty", ev.ID)
		}
		state := a.State
		if state == "" {
			state = InboxAccepted
		}
		if state != InboxAccepted && state != InboxClosed {
			return nil, fmt.Errorf("adapter: inbox accept %s: a new entry is accepted or closed, not %q", ev.ID, state)
		}
		if a.CloseReason != "" && state != InboxClosed {
			return nil, fmt.Errorf("adapter: inbox accept %s: a close reason needs state closed", ev.ID)
		}
		if !a.RememberUntil.IsZero() && a.Token.JTI == "" {
			return nil, fmt.Errorf("adapter: inbox accept %s: RememberUntil without a token id", ev.ID)
		}
		tok := a.Token
		if tok.Value.IsZero() {
			tok.Value = secret.New(ev.InvocationToken)
		}
		ev.InvocationToken = ""
		env, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("adapter: inbox accept %s: encode envelope: %w", ev.ID, err)
		}
		if len(env) > maxEnvelope {
			return nil, fmt.Errorf("adapter: inbox accept %s: envelope of %d bytes is over the limit of %d", ev.ID, len(env), maxEnvelope)
		}
		reason := ""
		if state == InboxClosed {
			reason = a.CloseReason
		}
		items[i] = inboxItem{
			entry: InboxEntry{
				EventID: ev.ID, Seq: ev.Seq, Type: ev.Type, RunID: a.RunID, Envelope: env,
				Token: tok, State: state, Deliveries: 1, CloseReason: reason,
			},
			remember: a.RememberUntil,
		}
	}
	return items, nil
}

// inboxRedeliver applies a redelivery to a stored entry and says what it
// did; the caller stores cur as changed.
func inboxRedeliver(cur *InboxEntry, tok InboxToken, now time.Time) InboxOutcome {
	cur.Deliveries++
	cur.UpdatedAt = now
	if cur.State == InboxAccepted && !tok.IssuedAt.Before(cur.Token.IssuedAt) {
		cur.Token = tok
		return InboxTokenReplaced
	}
	return InboxDuplicate
}

// inboxCheckMove checks a SetState request before it meets the store.
func inboxCheckMove(eventID string, from, to InboxState) error {
	if !from.valid() || !to.valid() {
		return fmt.Errorf("adapter: inbox %s: unknown state in move %q to %q", eventID, from, to)
	}
	if !inboxCanMove(from, to) {
		return fmt.Errorf("adapter: inbox %s: no move from %s to %s", eventID, from, to)
	}
	return nil
}

// inboxMove applies a checked move to a stored entry.
func inboxMove(cur *InboxEntry, from, to InboxState, reason string, now time.Time) error {
	if cur.State != from {
		return fmt.Errorf("adapter: inbox %s is %s, not %s: %w", cur.EventID, cur.State, from, ErrInboxStateConflict)
	}
	cur.State = to
	cur.UpdatedAt = now
	if to == InboxClosed {
		cur.CloseReason = reason
		cur.ClosedAt = now
	}
	return nil
}

// inboxReplace applies ReplaceToken to a stored entry.
func inboxReplace(cur *InboxEntry, tok InboxToken, now time.Time) (bool, error) {
	if cur.State == InboxClosed {
		return false, fmt.Errorf("adapter: inbox %s is closed: %w", cur.EventID, ErrInboxStateConflict)
	}
	if tok.IssuedAt.Before(cur.Token.IssuedAt) {
		return false, nil
	}
	cur.Token = tok
	cur.UpdatedAt = now
	return true, nil
}

func inboxNotFound(eventID string) error {
	return fmt.Errorf("adapter: inbox %s: %w", eventID, ErrInboxNotFound)
}

func inboxCheckJTI(jti string) error {
	if jti == "" {
		return errors.New("adapter: inbox: remember a token id: the id is empty")
	}
	return nil
}

// inboxCheckToken checks a ReplaceToken request before it meets the
// store.
func inboxCheckToken(eventID string, tok InboxToken) error {
	if tok.Value.IsZero() {
		return fmt.Errorf("adapter: inbox %s: replace token: the token is empty", eventID)
	}
	return nil
}

func inboxStateSet(states []InboxState) (map[InboxState]bool, error) {
	if len(states) == 0 {
		return nil, nil
	}
	set := make(map[InboxState]bool, len(states))
	for _, s := range states {
		if !s.valid() {
			return nil, fmt.Errorf("adapter: inbox list: unknown state %q", s)
		}
		set[s] = true
	}
	return set, nil
}
