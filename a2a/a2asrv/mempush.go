package a2asrv

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"novaos.dev/novaos/a2a/a2astore"
)

var (
	_ PushOutbox        = memOutbox{}
	_ PushQueue         = memOutbox{}
	_ PushDeliveryStore = (*MemoryPushConfigStore)(nil)
)

// memOutbox is the outbox of a MemoryPushConfigStore joined to a task
// store; a store of configs only has none.
type memOutbox struct{ s *MemoryPushConfigStore }

// PushOutbox returns the outbox the task store's writes fill for the
// configs of PushConfigStore, for a deliverer (package a2a/a2apush).
func (s *MemoryTaskStore) PushOutbox() PushOutbox { return memOutbox{s.PushConfigStore()} }

// memStream is a config's delivery state and its pending notifications.
type memStream struct {
	state    string
	notes    []memNote // oldest first
	due      time.Time // when the head is due; zero when nothing is
	lease    string
	attempts int
	lastErr  string
	// lastAttempt and lastDelivered are zero when there was none.
	lastAttempt, lastDelivered time.Time
}

type memNote struct {
	seq    int64
	queued time.Time
	body   []byte
}

// PushConfigStore returns the push-config store joined to this task store:
// every Create, Update and Append of a task queues its notifications for
// the task's configs there, in the same step as the write, for a
// deliverer to drain (PushOutbox). Calls return
// the same store. Its notifications live in process memory: they do not
// survive a restart, unlike a database's (store/sqlite, store/postgres).
// At most MemoryOptions.MaxPushQueued are held; a config whose
// notification would not fit is dead-lettered.
func (s *MemoryTaskStore) PushConfigStore() *MemoryPushConfigStore {
	s.pushOnce.Do(func() {
		p := NewMemoryPushConfigStore(s.opts)
		p.tasks, p.maxQueued = s, s.opts.queueLimit()
		s.mu.Lock()
		s.push = p
		s.mu.Unlock()
	})
	return s.push
}

// snapshotLocked returns the task's first notification for a config
// stored now, nil when there is no such task. s.mu is held.
func (s *MemoryTaskStore) snapshotLocked(scope Scope, id string) ([]byte, error) {
	e, ok := s.byID[id]
	if !ok || e.Value.(*memTask).scope != scope {
		return nil, nil
	}
	m := e.Value.(*memTask)
	if len(m.events) == 0 {
		return a2astore.TaskNotification(m.body), nil
	}
	t, err := m.decode()
	if err != nil {
		return nil, err
	}
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, t)
	if err != nil {
		return nil, err
	}
	return a2astore.TaskNotification(body), nil
}

// taskNotes is queuePush's bodies for a task written whole.
func taskNotes(body []byte) func() ([][]byte, error) {
	return func() ([][]byte, error) { return [][]byte{a2astore.TaskNotification(body)}, nil }
}

// queuePush queues a write's notifications for the task's active configs.
// s.mu is held. bodies is called only when there is a config.
func (s *MemoryTaskStore) queuePush(scope Scope, taskID string, bodies func() ([][]byte, error)) {
	if s.push != nil {
		s.push.queue(scope, taskID, bodies)
	}
}

func (s *MemoryPushConfigStore) queue(scope Scope, taskID string, bodies func() ([][]byte, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := s.byTask[memTaskKey{scope, taskID}]
	if len(byID) == 0 {
		return
	}
	var bs [][]byte
	now := time.Now()
	for _, e := range byID {
		m := e.Value.(*memConfig)
		if m.stream.state != PushStateActive {
			continue
		}
		if bs == nil {
			var err error
			if bs, err = bodies(); err != nil {
				// The write is stored; what it would have sent cannot
				// be: the stream cannot go on in order.
				s.killLocked(m, now, "a2asrv: memory: encode notification: "+err.Error())
				continue
			}
		}
		if s.queued+len(bs) > s.maxQueued {
			s.killLocked(m, now, fmt.Sprintf("a2asrv: memory: more than %d notifications pending (MemoryOptions.MaxPushQueued)", s.maxQueued))
			continue
		}
		for _, b := range bs {
			s.seq++
			m.stream.notes = append(m.stream.notes, memNote{seq: s.seq, queued: now, body: b})
		}
		s.queued += len(bs)
		if m.stream.due.IsZero() {
			m.stream.due = now
		}
	}
}

// killLocked dead-letters m's stream.
func (s *MemoryPushConfigStore) killLocked(m *memConfig, at time.Time, why string) {
	s.queued -= len(m.stream.notes)
	m.stream.notes, m.stream.due, m.stream.lease = nil, time.Time{}, ""
	m.stream.state, m.stream.lastErr = PushStateDead, why
	if !at.IsZero() {
		m.stream.lastAttempt = at
	}
}

// dropTask deletes a deleted task's configs and their pending
// notifications.
func (s *MemoryPushConfigStore) dropTask(scope Scope, taskID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byTask[memTaskKey{scope, taskID}] {
		s.removeLocked(e)
	}
}

// ClaimPush implements PushOutbox. It scans every config, which is fine
// at the sizes the store is bounded to.
func (o memOutbox) ClaimPush(ctx context.Context, now time.Time, max int, lease time.Duration) ([]*PushDelivery, error) {
	s := o.s
	if max <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*memConfig
	for _, byID := range s.byTask {
		for _, e := range byID {
			m := e.Value.(*memConfig)
			if len(m.stream.notes) > 0 && !m.stream.due.IsZero() && !m.stream.due.After(now) {
				due = append(due, m)
			}
		}
	}
	slices.SortFunc(due, func(a, b *memConfig) int { return a.stream.due.Compare(b.stream.due) })
	if len(due) > max {
		due = due[:max]
	}
	tok := a2astore.NewLease()
	out := make([]*PushDelivery, len(due))
	for i, m := range due {
		m.stream.due, m.stream.lease = now.Add(lease), tok
		head := m.stream.notes[0]
		out[i] = &PushDelivery{
			Scope: m.key.scope, Config: copyPushConfig(&m.cfg), Seq: head.seq, Body: head.body,
			Queued: head.queued, Attempts: m.stream.attempts, Lease: tok,
		}
	}
	slices.SortFunc(out, func(a, b *PushDelivery) int { return cmp.Or(a.Queued.Compare(b.Queued), cmp.Compare(a.Seq, b.Seq)) })
	return out, nil
}

// PushQueued implements PushQueue.
func (o memOutbox) PushQueued(ctx context.Context) (int64, error) {
	s := o.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, byID := range s.byTask {
		for _, e := range byID {
			n += int64(len(e.Value.(*memConfig).stream.notes))
		}
	}
	return n, nil
}

// SettlePush implements PushOutbox.
func (o memOutbox) SettlePush(ctx context.Context, d *PushDelivery, st PushSettlement) (*PushDelivery, error) {
	s := o.s
	st, err := st.Normalize()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byTask[memTaskKey{d.Scope, d.Config.TaskID}][d.Config.ID]
	if !ok {
		return nil, fmt.Errorf("a2asrv: memory: settle push notification: %w", ErrPushLeaseLost)
	}
	m := e.Value.(*memConfig)
	if m.stream.lease != d.Lease || m.stream.state != PushStateActive || len(m.stream.notes) == 0 {
		return nil, fmt.Errorf("a2asrv: memory: settle push notification: %w", ErrPushLeaseLost)
	}
	m.stream.lease, m.stream.lastAttempt = "", st.At
	switch st.Outcome {
	case PushDelivered:
		m.stream.notes = m.stream.notes[1:]
		s.queued--
		m.stream.attempts, m.stream.lastErr, m.stream.lastDelivered = 0, "", st.At
		m.stream.due = time.Time{}
		if len(m.stream.notes) == 0 {
			return nil, nil
		}
		m.stream.due = st.At
		if st.Continue > 0 {
			m.stream.due, m.stream.lease = st.At.Add(st.Continue), d.Lease
			head := m.stream.notes[0]
			return &PushDelivery{Scope: d.Scope, Config: d.Config, Seq: head.seq, Body: head.body, Queued: head.queued, Lease: d.Lease}, nil
		}
	case PushRetry:
		m.stream.attempts++
		m.stream.lastErr, m.stream.due = st.Error, st.Next
	case PushDead:
		m.stream.attempts++
		s.killLocked(m, st.At, st.Error)
	}
	return nil, nil
}

// PushDeliveryState implements PushDeliveryStore.
func (s *MemoryPushConfigStore) PushDeliveryState(ctx context.Context, scope Scope, taskID, id string) (*PushDeliveryState, error) {
	if s.tasks == nil {
		// A store of configs only queues nothing: there is no delivery
		// to report.
		return nil, fmt.Errorf("a2asrv: memory: push delivery state %s/%s: no outbox: %w", taskID, id, ErrNotFound)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.byTask[memTaskKey{scope, taskID}][id]
	if !ok {
		return nil, fmt.Errorf("a2asrv: memory: push delivery state %s/%s: %w", taskID, id, ErrNotFound)
	}
	st := e.Value.(*memConfig).stream
	return &PushDeliveryState{
		State: st.state, Pending: len(st.notes), Attempts: st.attempts, LastError: st.lastErr,
		LastAttempt: st.lastAttempt, LastDelivered: st.lastDelivered,
	}, nil
}
