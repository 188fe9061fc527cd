package toolgw

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"novaos.dev/novaos/tools"
)

// sessionCache fronts the session store: a session this process touched
// within a tenth of the idle timeout is not touched again, so a busy
// session costs one store write every half minute rather than one per
// call. Another replica serving the same session touches it itself.
type sessionCache struct {
	store tools.Store
	idle  time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[string]seenSession
}

type seenSession struct {
	sess tools.Session
	at   time.Time
}

const maxSeenSessions = 100_000

func newSessionCache(st tools.Store, idle time.Duration, now func() time.Time) *sessionCache {
	return &sessionCache{store: st, idle: idle, now: now, seen: map[string]seenSession{}}
}

// create stores a new session for the caller.
func (sc *sessionCache) create(ctx context.Context, c *Caller, protocol string) (string, error) {
	now := sc.now()
	sess := tools.Session{ID: rand.Text(), TenantID: c.Tenant, Subject: c.Subject, ProtocolVersion: protocol, CreatedAt: now, LastSeen: now}
	if err := sc.store.CreateSession(ctx, sess); err != nil {
		return "", err
	}
	sc.remember(sess, now)
	return sess.ID, nil
}

// touch returns the session and keeps it alive; tools.ErrNotFound when
// it is unknown or was idle too long.
func (sc *sessionCache) touch(ctx context.Context, id string) (tools.Session, error) {
	if len(id) > 128 {
		return tools.Session{}, tools.ErrNotFound
	}
	now := sc.now()
	sc.mu.Lock()
	s, ok := sc.seen[id]
	sc.mu.Unlock()
	if ok && now.Sub(s.at) < sc.idle/10 {
		return s.sess, nil
	}
	sess, err := sc.store.TouchSession(ctx, id, now, sc.idle)
	if err != nil {
		sc.forget(id)
		return tools.Session{}, err
	}
	sc.remember(sess, now)
	return sess, nil
}

// remove ends the caller's session.
func (sc *sessionCache) remove(ctx context.Context, c *Caller, id string) error {
	sess, err := sc.touch(ctx, id)
	if err != nil {
		return err
	}
	if sess.TenantID != c.Tenant || sess.Subject != c.Subject {
		return tools.ErrNotFound
	}
	sc.forget(id)
	return sc.store.DeleteSession(ctx, c.Tenant, id)
}

func (sc *sessionCache) remember(s tools.Session, at time.Time) {
	sc.mu.Lock()
	if len(sc.seen) >= maxSeenSessions {
		clear(sc.seen)
	}
	sc.seen[s.ID] = seenSession{sess: s, at: at}
	sc.mu.Unlock()
}

func (sc *sessionCache) forget(id string) {
	sc.mu.Lock()
	delete(sc.seen, id)
	sc.mu.Unlock()
}
