package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MemStore is a [Store] in process memory, for tests and for a server
// without a database. It keeps what the SQL stores keep, the way they keep
// it: every time to the microsecond in UTC. A sweep reads every session,
// which suits the sessions one process serves.
type MemStore struct {
	mu       sync.Mutex
	sessions map[string]Session // by id
	policies map[string]Policy  // by tenant
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{sessions: map[string]Session{}, policies: map[string]Policy{}}
}

// stored is t as a store keeps it: to the microsecond, in UTC.
func stored(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// validText reports whether every s is text every store can keep:
// PostgreSQL's text holds neither NUL nor invalid UTF-8.
func validText(s ...string) bool {
	for _, v := range s {
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return false
		}
	}
	return true
}

// errText: a session or policy holds text a store cannot keep.
var errText = errors.New("text with NUL or invalid UTF-8")

// PrepareSession checks a session a Store is about to create and sets its
// times as stored, to the microsecond in UTC: CreatedAt (time.Now when
// zero) and LastSeen (CreatedAt when zero). Stores other than this
// package's use it to behave alike.
func PrepareSession(s *Session) error {
	if s.ID == "" || s.TenantID == "" {
		return errors.New("a session needs an id and a tenant")
	}
	if !validText(s.ID, s.TenantID, s.Subject, s.ProtocolVersion) {
		return errText
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = time.Now()
	}
	if s.LastSeen.IsZero() {
		s.LastSeen = s.CreatedAt
	}
	s.CreatedAt, s.LastSeen = stored(s.CreatedAt), stored(s.LastSeen)
	return nil
}

// PrepareTouch checks a touch a Store is about to make and gives its
// times as stored, to the microsecond in UTC: at is now (time.Now when
// zero), the session's LastSeen after the touch unless it was later
// already; cutoff is the earliest LastSeen of a session still live, one
// last seen before it being gone. idle must be positive. Stores other
// than this package's use it to behave alike.
func PrepareTouch(now time.Time, idle time.Duration) (at, cutoff time.Time, err error) {
	if idle <= 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("idle timeout %v is not positive", idle)
	}
	if now.IsZero() {
		now = time.Now()
	}
	return stored(now), stored(now.Add(-idle)), nil
}

// PreparePolicy checks a policy a Store is about to put over the version
// expect and sets what a store assigns: its Version, the one after
// expect, and UpdatedAt as stored (time.Now when zero). Stores other
// than this package's use it to behave alike.
func PreparePolicy(p *Policy, expect int64) error {
	switch {
	case p.TenantID == "":
		return errors.New("a policy needs a tenant")
	case p.Expr == "":
		return errors.New("a policy needs an expression")
	case expect < 0:
		return fmt.Errorf("expected version %d is negative", expect)
	case !validText(p.TenantID, p.Expr, p.UpdatedBy):
		return errText
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = time.Now()
	}
	p.Version, p.UpdatedAt = expect+1, stored(p.UpdatedAt)
	return nil
}

func (m *MemStore) CreateSession(_ context.Context, s Session) error {
	what := "tools: create session " + s.ID
	if err := PrepareSession(&s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.ID]; ok {
		return fmt.Errorf("%s: the id is taken: %w", what, ErrConflict)
	}
	m.sessions[s.ID] = s
	return nil
}

func (m *MemStore) TouchSession(_ context.Context, id string, now time.Time, idle time.Duration) (Session, error) {
	what := "tools: touch session " + id
	at, cutoff, err := PrepareTouch(now, idle)
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return Session{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if s.LastSeen.Before(cutoff) {
		delete(m.sessions, id)
		return Session{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	// LastSeen only moves on: a replica whose clock is behind does not
	// shorten a session another one saw later.
	if at.After(s.LastSeen) {
		s.LastSeen = at
		m.sessions[id] = s
	}
	return s, nil
}

func (m *MemStore) DeleteSession(_ context.Context, tenantID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.TenantID != tenantID {
		return fmt.Errorf("tools: delete session %s: %w", id, ErrNotFound)
	}
	delete(m.sessions, id)
	return nil
}

func (m *MemStore) SweepSessions(_ context.Context, cutoff time.Time) (int, error) {
	if cutoff.IsZero() {
		return 0, errors.New("tools: sweep sessions: no cutoff")
	}
	cutoff = stored(cutoff)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, s := range m.sessions {
		if s.LastSeen.Before(cutoff) {
			delete(m.sessions, id)
			n++
		}
	}
	return n, nil
}

func (m *MemStore) GetPolicy(_ context.Context, tenantID string) (Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[tenantID]
	if !ok {
		return Policy{}, fmt.Errorf("tools: get policy of %s: %w", tenantID, ErrNotFound)
	}
	return p, nil
}

func (m *MemStore) PutPolicy(_ context.Context, p Policy, expectVersion int64) (Policy, error) {
	what := "tools: put policy of " + p.TenantID
	if err := PreparePolicy(&p, expectVersion); err != nil {
		return Policy{}, fmt.Errorf("%s: %w", what, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.policies[p.TenantID]; old.Version != expectVersion {
		return Policy{}, fmt.Errorf("%s: version %d is not the stored %d: %w", what, expectVersion, old.Version, ErrConflict)
	}
	m.policies[p.TenantID] = p
	return p, nil
}

func (m *MemStore) DeletePolicy(_ context.Context, tenantID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.policies[tenantID]; !ok {
		return fmt.Errorf("tools: delete policy of %s: %w", tenantID, ErrNotFound)
	}
	delete(m.policies, tenantID)
	return nil
}
