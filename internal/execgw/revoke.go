package execgw

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
)

// maxRevocationCache bounds the runs whose state Revoked remembers.
const maxRevocationCache = 100_000

// liveFor bounds how long Revoked trusts that a run is live: a run that
// ended between its read and its remembering (the news of the ending
// came first) is refused this long after at the latest.
const liveFor = time.Second

// errRunEnded is why a token of an ended run is refused.
var errRunEnded = errors.New("execgw: the token's run has ended")

// Revoked refuses a token whose run has ended (completed, failed or
// cancelled): a run's tokens are good for that run only. A token that
// names no run, or a run the gateway does not know, is not its to
// refuse. The platform's token issuer asks it on every verification, so
// the answer is remembered: an ended run for good, a live one until the
// gateway hears of a new event of it (on any replica), and for a second
// at most.
func (s *Service) Revoked(ctx context.Context, c *identity.Claims) error {
	if c == nil || c.RunID == "" {
		return nil
	}
	now := s.o.Now()
	if tenant, ended, ok := s.revocations.get(c.RunID, now); ok {
		if ended && tenant == c.TenantID {
			return errRunEnded
		}
		return nil
	}
	r, err := s.store.GetRun(ctx, c.TenantID, c.RunID)
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("execgw: read the token's run: %w", err)
	}
	ended := r.Status.Terminal()
	s.revocations.put(c.RunID, r.TenantID, ended, now.Add(liveFor), r.LastSequence)
	if ended {
		return errRunEnded
	}
	return nil
}

// remember tells Revoked of a run this process has just written: a run it
// delivers (whose agent is about to present the run's token), or one
// Revoked already knows.
func (s *Service) remember(r *gateway.Run, now time.Time) {
	ended := r.Status.Terminal()
	if ended || r.LeaseOwner != s.owner {
		s.revocations.update(r.ID, ended, now.Add(liveFor), r.LastSequence)
		return
	}
	s.revocations.put(r.ID, r.TenantID, false, now.Add(liveFor), r.LastSequence)
}

// runStates is a bounded LRU of run ids to whether the run has ended.
type runStates struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent; values are run ids
	items map[string]*runState
}

type runState struct {
	tenant string
	ended  bool
	until  time.Time // a live run's answer is trusted until then
	seq    int64     // the run's last event when it was read
	elem   *list.Element
}

func newRunStates(max int) *runStates {
	return &runStates{max: max, order: list.New(), items: map[string]*runState{}}
}

func (c *runStates) get(id string, now time.Time) (tenant string, ended, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.items[id]
	if !ok || !st.ended && !now.Before(st.until) {
		return "", false, false
	}
	c.order.MoveToFront(st.elem)
	return st.tenant, st.ended, true
}

// put remembers a run's state as read with its last event seq.
func (c *runStates) put(id, tenant string, ended bool, until time.Time, seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.items[id]; ok {
		st.learn(ended, until, seq)
		c.order.MoveToFront(st.elem)
		return
	}
	c.items[id] = &runState{tenant: tenant, ended: ended, until: until, seq: seq, elem: c.order.PushFront(id)}
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(string))
	}
}

// update changes what is remembered of a run, if anything is.
func (c *runStates) update(id string, ended bool, until time.Time, seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.items[id]; ok {
		st.learn(ended, until, seq)
	}
}

// learn takes newer news of the run: an ending is for good.
func (st *runState) learn(ended bool, until time.Time, seq int64) {
	st.ended = st.ended || ended
	if seq >= st.seq {
		st.until, st.seq = until, seq
	}
}

// forget drops what is remembered of a live run with events after what
// was read (it may have ended), or of every live run for id "" or a last
// below 0 (news may have been lost).
func (c *runStates) forget(id string, last int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" {
		for k, st := range c.items {
			if !st.ended {
				c.order.Remove(st.elem)
				delete(c.items, k)
			}
		}
		return
	}
	if st, ok := c.items[id]; ok && !st.ended && (last < 0 || last > st.seq) {
		c.order.Remove(st.elem)
		delete(c.items, id)
	}
}
