package a2asrv

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2astore"
)

// MemoryOptions bounds the in-memory stores. Nil or zero fields mean the
// defaults.
type MemoryOptions struct {
	// MaxTasks is how many tasks a MemoryTaskStore keeps (default 10000).
	// Past it, the task written least recently is forgotten.
	MaxTasks int
	// MaxPushConfigs is how many configs a MemoryPushConfigStore keeps
	// (default 10000), evicted the same way.
	MaxPushConfigs int
	// MaxPushQueued bounds the push notifications a MemoryTaskStore's
	// config store holds undelivered (default 10000). A config whose
	// notification would not fit is dead-lettered.
	MaxPushQueued int
}

const defaultMemoryLimit = 10000

func (o *MemoryOptions) queueLimit() int {
	if o != nil && o.MaxPushQueued > 0 {
		return o.MaxPushQueued
	}
	return defaultMemoryLimit
}

func (o *MemoryOptions) limits() (tasks, configs int) {
	tasks, configs = defaultMemoryLimit, defaultMemoryLimit
	if o != nil && o.MaxTasks > 0 {
		tasks = o.MaxTasks
	}
	if o != nil && o.MaxPushConfigs > 0 {
		configs = o.MaxPushConfigs
	}
	return tasks, configs
}

var (
	_ TaskStore       = (*MemoryTaskStore)(nil)
	_ PushConfigStore = (*MemoryPushConfigStore)(nil)
)

// MemoryTaskStore is a bounded TaskStore held in process memory, for tests,
// examples and agents that need no durability. Tasks are kept as their JSON
// encoding, exactly as the SQL stores keep them, so a task read back is a
// deep copy and compares equal across every store (metadata numbers come back
// as float64, timestamps with millisecond precision).
//
// Every Create, Update and Append makes a task the most recently written; once more
// than MaxTasks are held, the least recently written is evicted. A task that
// is still being worked on is written often, so in practice eviction takes
// finished tasks first.
type MemoryTaskStore struct {
	max  int
	opts *MemoryOptions

	pushOnce sync.Once
	push     *MemoryPushConfigStore // set by PushConfigStore, then fixed

	mu   sync.RWMutex
	byID map[string]*list.Element // of *memTask
	lru  list.List                // front: most recently written

	watchers Watchers // of Feed
}

// memTask is a stored task: the fields List filters and sorts on, and the
// encoded task, which is never modified once stored.
type memTask struct {
	id        string
	scope     Scope
	contextID string
	state     a2a.TaskState
	tsMs      int64
	version   Version
	body      []byte
	// events were appended after body. A later Append may add to the
	// backing array beyond len(events), which this memTask never reads.
	events [][]byte
}

// NewMemoryTaskStore returns an empty store; opts may be nil.
func NewMemoryTaskStore(opts *MemoryOptions) *MemoryTaskStore {
	max, _ := opts.limits()
	return &MemoryTaskStore{max: max, opts: opts, byID: make(map[string]*list.Element)}
}

func encodeMemTask(scope Scope, task *a2a.Task, v Version) (*memTask, error) {
	body, err := a2astore.EncodeTask(scope.Tenant, scope.Owner, task)
	if err != nil {
		return nil, err
	}
	return &memTask{
		id:        task.ID,
		scope:     scope,
		contextID: task.ContextID,
		state:     task.Status.State,
		tsMs:      task.Status.Timestamp.UnixMilli(),
		version:   v,
		body:      body,
	}, nil
}

func (m *memTask) decode() (*a2a.Task, error) {
	t, err := a2astore.DecodeTask(m.body)
	if err == nil {
		err = ApplyEncodedEvents(t, m.events)
	}
	if err != nil {
		return nil, fmt.Errorf("a2asrv: memory: task %s: %w", m.id, err)
	}
	return t, nil
}

// Len reports how many tasks the store holds.
func (s *MemoryTaskStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID)
}

// Create implements TaskStore.
func (s *MemoryTaskStore) Create(ctx context.Context, scope Scope, task *a2a.Task) (Version, error) {
	m, err := encodeMemTask(scope, task, 1)
	if err != nil {
		return 0, fmt.Errorf("a2asrv: memory: create task: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[m.id]; ok {
		return 0, fmt.Errorf("a2asrv: memory: create task %s: %w", m.id, ErrExists)
	}
	s.byID[m.id] = s.lru.PushFront(m)
	for s.lru.Len() > s.max {
		old := s.lru.Remove(s.lru.Back()).(*memTask)
		delete(s.byID, old.id)
	}
	return m.version, nil
}

// Get implements TaskStore.
func (s *MemoryTaskStore) Get(ctx context.Context, scope Scope, id string) (*a2a.Task, Version, error) {
	s.mu.RLock()
	e, ok := s.byID[id]
	var m *memTask
	if ok {
		m = e.Value.(*memTask)
	}
	s.mu.RUnlock()
	if m == nil || m.scope != scope {
		return nil, 0, fmt.Errorf("a2asrv: memory: get task %s: %w", id, ErrNotFound)
	}
	t, err := m.decode()
	if err != nil {
		return nil, 0, err
	}
	return t, m.version, nil
}

// Update implements TaskStore.
func (s *MemoryTaskStore) Update(ctx context.Context, scope Scope, task *a2a.Task, prev Version) (Version, error) {
	m, err := encodeMemTask(scope, task, prev+1)
	if err != nil {
		return 0, fmt.Errorf("a2asrv: memory: update task: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[m.id]
	if !ok || e.Value.(*memTask).scope != scope {
		return 0, fmt.Errorf("a2asrv: memory: update task %s: %w", m.id, ErrNotFound)
	}
	if cur := e.Value.(*memTask).version; cur != prev {
		return 0, fmt.Errorf("a2asrv: memory: update task %s at version %d (stored %d): %w", m.id, prev, cur, ErrConcurrentModification)
	}
	e.Value = m
	s.lru.MoveToFront(e)
	s.queuePush(scope, m.id, taskNotes(m.body))
	s.watchers.Announce(m.id, func() TaskChange {
		c := TaskChange{ID: m.id, Prev: prev, Version: m.version}
		c.Task, _ = m.decode() // undecodable: the watcher catches up
		return c
	})
	return m.version, nil
}

// Append implements TaskStore.
func (s *MemoryTaskStore) Append(ctx context.Context, scope Scope, id string, prev Version, events []*a2a.StreamResponse, compact *a2a.Task) (Version, error) {
	body, bodies, err := a2astore.EncodeAppend(scope.Tenant, scope.Owner, id, events, compact)
	if err != nil {
		return 0, fmt.Errorf("a2asrv: memory: append to task %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok || e.Value.(*memTask).scope != scope {
		return 0, fmt.Errorf("a2asrv: memory: append to task %s: %w", id, ErrNotFound)
	}
	cur := e.Value.(*memTask)
	if cur.version != prev {
		return 0, fmt.Errorf("a2asrv: memory: append to task %s at version %d (stored %d): %w", id, prev, cur.version, ErrConcurrentModification)
	}
	next := *cur
	next.version = prev + Version(len(events))
	if compact != nil {
		next.body, next.events = body, nil
	} else {
		next.events = append(cur.events, bodies...)
	}
	if st, ok := LastStatus(events); ok {
		next.state, next.tsMs = st.State, st.Timestamp.UnixMilli()
	}
	e.Value = &next
	s.lru.MoveToFront(e)
	s.queuePush(scope, id, func() ([][]byte, error) { return a2astore.AppendNotifications(events, bodies) })
	s.watchers.Announce(id, func() TaskChange {
		c := TaskChange{ID: id, Prev: prev, Version: next.version}
		c.Events, _ = decodeEvents(bodies) // undecodable: the watcher catches up
		return c
	})
	return next.version, nil
}

// Delete implements TaskStore.
func (s *MemoryTaskStore) Delete(ctx context.Context, scope Scope, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok && e.Value.(*memTask).scope == scope {
		s.lru.Remove(e)
		delete(s.byID, id)
		if s.push != nil {
			s.push.dropTask(scope, id)
		}
	}
	return nil
}

// List implements TaskStore. It scans every task in the store, which is
// fine at the sizes the store is bounded to.
func (s *MemoryTaskStore) List(ctx context.Context, scope Scope, q ListQuery) (*ListResult, error) {
	var cur *a2astore.Task
	if q.PageToken != "" {
		c, err := a2astore.ParseTask(q.PageToken)
		if err != nil {
			return nil, fmt.Errorf("a2asrv: memory: list tasks: %w", ErrBadPageToken)
		}
		cur = &c
	}
	afterMs := int64(-1 << 63)
	if !q.StatusAfter.IsZero() {
		afterMs = a2astore.CeilMillis(q.StatusAfter)
	}
	var match []*memTask
	s.mu.RLock()
	for _, e := range s.byID {
		m := e.Value.(*memTask)
		if m.scope == scope &&
			(q.ContextID == "" || m.contextID == q.ContextID) &&
			(q.State == a2a.TaskStateUnspecified || m.state == q.State) &&
			m.tsMs >= afterMs {
			match = append(match, m)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(match, func(a, b *memTask) int {
		return cmp.Or(cmp.Compare(b.tsMs, a.tsMs), cmp.Compare(b.id, a.id))
	})
	res := &ListResult{TotalSize: len(match)}
	page := match
	if cur != nil {
		// The first task strictly after the cursor in (ts desc, id desc)
		// order; the cursor's own task may since have been deleted.
		i, _ := slices.BinarySearchFunc(match, *cur, func(m *memTask, c a2astore.Task) int {
			return cmp.Or(cmp.Compare(c.TimeMs, m.tsMs), cmp.Compare(c.ID, m.id))
		})
		for i < len(match) && match[i].tsMs == cur.TimeMs && match[i].id == cur.ID {
			i++
		}
		page = match[i:]
	}
	if n := a2astore.Limit(q.PageSize); len(page) > n {
		page = page[:n]
		last := page[n-1]
		res.NextPageToken = a2astore.Task{TimeMs: last.tsMs, ID: last.id}.Token()
	}
	res.Tasks = make([]*a2a.Task, 0, len(page))
	for _, m := range page {
		t, err := m.decode()
		if err != nil {
			return nil, err
		}
		res.Tasks = append(res.Tasks, t)
	}
	return res, nil
}

// MemoryPushConfigStore is a bounded PushConfigStore held in process memory.
// Configs are keyed by scope, task id and config id, so two scopes never see
// or overwrite each other's configs. Past MaxPushConfigs, the config written
// least recently is evicted.
type MemoryPushConfigStore struct {
	max int
	// tasks is the task store whose writes queue notifications to this
	// store's configs (MemoryTaskStore.PushConfigStore); nil for a store
	// of configs only.
	tasks     *MemoryTaskStore
	maxQueued int
	queued    int // notifications held, under mu
	seq       int64

	mu     sync.RWMutex
	byTask map[memTaskKey]map[string]*list.Element // of *memConfig
	lru    list.List                               // front: most recently written
}

type memTaskKey struct {
	scope  Scope
	taskID string
}

type memConfig struct {
	key    memTaskKey
	cfg    a2a.TaskPushNotificationConfig // never modified once stored
	stream memStream                      // under the store's mu
}

// NewMemoryPushConfigStore returns an empty store; opts may be nil.
func NewMemoryPushConfigStore(opts *MemoryOptions) *MemoryPushConfigStore {
	_, max := opts.limits()
	return &MemoryPushConfigStore{max: max, byTask: make(map[memTaskKey]map[string]*list.Element)}
}

func copyPushConfig(c *a2a.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	out := *c
	if c.Authentication != nil {
		auth := *c.Authentication
		out.Authentication = &auth
	}
	return &out
}

// Put implements PushConfigStore.
func (s *MemoryPushConfigStore) Put(ctx context.Context, scope Scope, cfg *a2a.TaskPushNotificationConfig) error {
	if err := a2astore.ValidConfig(scope.Tenant, scope.Owner, cfg); err != nil {
		return fmt.Errorf("a2asrv: memory: put push config: %w", err)
	}
	m := &memConfig{key: memTaskKey{scope, cfg.TaskID}, cfg: *copyPushConfig(cfg), stream: memStream{state: PushStateActive}}
	if s.tasks != nil {
		// No task write between reading the task and storing the
		// config: the task's writes hold this lock first.
		s.tasks.mu.RLock()
		defer s.tasks.mu.RUnlock()
		if first, err := s.tasks.snapshotLocked(scope, cfg.TaskID); err != nil {
			return fmt.Errorf("a2asrv: memory: put push config: %w", err)
		} else if first != nil {
			m.stream.notes = []memNote{{queued: time.Now(), body: first}}
			m.stream.due = time.Now()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	for i := range m.stream.notes {
		m.stream.notes[i].seq = s.seq
	}
	byID := s.byTask[m.key]
	if byID == nil {
		byID = make(map[string]*list.Element)
		s.byTask[m.key] = byID
	}
	s.queued += len(m.stream.notes)
	if e, ok := byID[cfg.ID]; ok {
		s.queued -= len(e.Value.(*memConfig).stream.notes)
		e.Value = m
		s.lru.MoveToFront(e)
		return nil
	}
	byID[cfg.ID] = s.lru.PushFront(m)
	for s.lru.Len() > s.max {
		s.removeLocked(s.lru.Back())
	}
	return nil
}

func (s *MemoryPushConfigStore) removeLocked(e *list.Element) {
	m := s.lru.Remove(e).(*memConfig)
	s.queued -= len(m.stream.notes)
	byID := s.byTask[m.key]
	delete(byID, m.cfg.ID)
	if len(byID) == 0 {
		delete(s.byTask, m.key)
	}
}

// Get implements PushConfigStore.
func (s *MemoryPushConfigStore) Get(ctx context.Context, scope Scope, taskID, id string) (*a2a.TaskPushNotificationConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.byTask[memTaskKey{scope, taskID}][id]
	if !ok {
		return nil, fmt.Errorf("a2asrv: memory: get push config %s/%s: %w", taskID, id, ErrNotFound)
	}
	return copyPushConfig(&e.Value.(*memConfig).cfg), nil
}

// List implements PushConfigStore.
func (s *MemoryPushConfigStore) List(ctx context.Context, scope Scope, taskID string, pageSize int, pageToken string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	after := ""
	if pageToken != "" {
		id, err := a2astore.ParseID(pageToken)
		if err != nil {
			return nil, "", fmt.Errorf("a2asrv: memory: list push configs: %w", ErrBadPageToken)
		}
		after = id
	}
	s.mu.RLock()
	var match []*memConfig
	for id, e := range s.byTask[memTaskKey{scope, taskID}] {
		if id > after {
			match = append(match, e.Value.(*memConfig))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(match, func(a, b *memConfig) int { return cmp.Compare(a.cfg.ID, b.cfg.ID) })
	next := ""
	if n := a2astore.Limit(pageSize); len(match) > n {
		match = match[:n]
		next = a2astore.IDToken(match[n-1].cfg.ID)
	}
	out := make([]*a2a.TaskPushNotificationConfig, len(match))
	for i, m := range match {
		out[i] = copyPushConfig(&m.cfg)
	}
	return out, next, nil
}

// Delete implements PushConfigStore.
func (s *MemoryPushConfigStore) Delete(ctx context.Context, scope Scope, taskID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byTask[memTaskKey{scope, taskID}][id]; ok {
		s.removeLocked(e)
	}
	return nil
}

// Feed returns the store's TaskFeed, for several Handlers in one process
// that share the store as replicas share a database: each learns of the
// others' writes at once.
func (s *MemoryTaskStore) Feed() TaskFeed { return memFeed{s} }

type memFeed struct{ s *MemoryTaskStore }

func (f memFeed) Watch(id string, fn func(TaskChange)) func() { return f.s.watchers.Watch(id, fn) }

func (f memFeed) CatchUp(ctx context.Context, scope Scope, id string, after Version) (TaskChange, error) {
	f.s.mu.RLock()
	e, ok := f.s.byID[id]
	var m *memTask
	if ok {
		m = e.Value.(*memTask)
	}
	f.s.mu.RUnlock()
	if m == nil || m.scope != scope {
		return TaskChange{}, fmt.Errorf("a2asrv: memory: catch up with task %s: %w", id, ErrNotFound)
	}
	return CatchUpChange(id, after, m.version, m.events, func() (*a2a.Task, error) { return m.decode() })
}

// CatchUpChange is TaskFeed.CatchUp for a store that keeps a task as a body
// with the encoded events appended after it: the task is at version, the
// last of events. The change holds the events after version after when
// events reach back that far, else the whole task, read by whole.
func CatchUpChange(id string, after, version Version, events [][]byte, whole func() (*a2a.Task, error)) (TaskChange, error) {
	c := TaskChange{ID: id, Prev: after, Version: version}
	if version <= after {
		return c, nil
	}
	if base := version - Version(len(events)); base <= after {
		evs, err := decodeEvents(events[after-base:])
		if err == nil {
			c.Events = evs
			return c, nil
		}
	}
	t, err := whole()
	if err != nil {
		return TaskChange{}, err
	}
	c.Task = t
	return c, nil
}

// decodeEvents decodes stored events.
func decodeEvents(bodies [][]byte) ([]*a2a.StreamResponse, error) {
	out := make([]*a2a.StreamResponse, len(bodies))
	for i, b := range bodies {
		ev, err := a2astore.DecodeEvent(b)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}
