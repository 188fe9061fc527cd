package registrysvc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"novaos.dev/novaos/registry"
)

// Store keeps agent records: the public contract registry.Store, named
// here for the service's callers.
type Store = registry.Store

// MemoryStore is a Store in process memory, for tests and for servers
// without a database.
type MemoryStore struct {
	mu     sync.RWMutex
	byID   map[string]*registry.Agent
	byName map[string]string // name -> id
	names  []string          // sorted
	ver    int64
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{byID: map[string]*registry.Agent{}, byName: map[string]string{}}
}

func (m *MemoryStore) Create(_ context.Context, a *registry.Agent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[a.ID]; ok {
		return fmt.Errorf("registry: create id %s: %w", a.ID, registry.ErrExists)
	}
	if _, ok := m.byName[a.Name]; ok {
		return fmt.Errorf("registry: create %s: %w", a.Name, registry.ErrExists)
	}
	m.byID[a.ID] = a.Clone()
	m.byName[a.Name] = a.ID
	i, _ := slices.BinarySearch(m.names, a.Name)
	m.names = slices.Insert(m.names, i, a.Name)
	m.ver++
	return nil
}

func (m *MemoryStore) Update(_ context.Context, a *registry.Agent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.byID[a.ID]
	if !ok {
		return fmt.Errorf("registry: update %s: %w", a.ID, registry.ErrNotFound)
	}
	if old.Name != a.Name {
		if _, taken := m.byName[a.Name]; taken {
			return fmt.Errorf("registry: update %s: name %s: %w", a.ID, a.Name, registry.ErrExists)
		}
		delete(m.byName, old.Name)
		i, _ := slices.BinarySearch(m.names, old.Name)
		m.names = slices.Delete(m.names, i, i+1)
		m.byName[a.Name] = a.ID
		j, _ := slices.BinarySearch(m.names, a.Name)
		m.names = slices.Insert(m.names, j, a.Name)
	}
	m.byID[a.ID] = a.Clone()
	m.ver++
	return nil
}

func (m *MemoryStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.byID[id]
	if !ok {
		return fmt.Errorf("registry: delete %s: %w", id, registry.ErrNotFound)
	}
	delete(m.byID, id)
	delete(m.byName, old.Name)
	i, _ := slices.BinarySearch(m.names, old.Name)
	m.names = slices.Delete(m.names, i, i+1)
	m.ver++
	return nil
}

func (m *MemoryStore) Get(_ context.Context, id string) (*registry.Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, ok := m.byID[id]
	if !ok {
		return nil, fmt.Errorf("registry: get %s: %w", id, registry.ErrNotFound)
	}
	return a.Clone(), nil
}

func (m *MemoryStore) GetByName(_ context.Context, name string) (*registry.Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.byName[name]
	if !ok {
		return nil, fmt.Errorf("registry: get %s: %w", name, registry.ErrNotFound)
	}
	return m.byID[id].Clone(), nil
}

func (m *MemoryStore) List(_ context.Context, after string, limit int) ([]*registry.Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, found := slices.BinarySearchFunc(m.names, after, cmp.Compare[string])
	if found {
		i++
	}
	var out []*registry.Agent
	for ; i < len(m.names) && len(out) < limit; i++ {
		out = append(out, m.byID[m.byName[m.names[i]]].Clone())
	}
	return out, nil
}

func (m *MemoryStore) Version(context.Context) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ver, nil
}
