package tools

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MemoryServerStore is a ServerStore in process memory, for tests and for
// a server without a database. It keeps what the SQL stores keep, the way
// they keep it: times to the microsecond in UTC, sealed credentials
// exactly as given (empty as nil); servers it returns are the caller's to
// change.
type MemoryServerStore struct {
	mu      sync.RWMutex
	servers map[[2]string]*UpstreamServer // by tenant, name
}

var _ ServerStore = (*MemoryServerStore)(nil)

// NewMemoryServerStore returns an empty MemoryServerStore.
func NewMemoryServerStore() *MemoryServerStore {
	return &MemoryServerStore{servers: map[[2]string]*UpstreamServer{}}
}

func cloneServer(s *UpstreamServer) UpstreamServer {
	c := *s
	c.Args, c.Env, c.Headers = slices.Clone(s.Args), slices.Clone(s.Env), slices.Clone(s.Headers)
	if len(s.SealedCredentials) == 0 {
		c.SealedCredentials = nil
	} else {
		c.SealedCredentials = bytes.Clone(s.SealedCredentials)
	}
	return c
}

func (m *MemoryServerStore) PutServer(_ context.Context, s UpstreamServer, expectVersion int64) (UpstreamServer, error) {
	what := "tools: put server " + s.Name
	if err := PrepareServer(&s, expectVersion); err != nil {
		return UpstreamServer{}, fmt.Errorf("%s: %w", what, err)
	}
	key := [2]string{s.TenantID, s.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	var stored int64
	cur := m.servers[key]
	if cur != nil {
		stored = cur.Version
	}
	if stored != expectVersion {
		return UpstreamServer{}, fmt.Errorf("%s: version %d is not the stored %d: %w", what, expectVersion, stored, ErrConflict)
	}
	if cur != nil {
		s.CreatedAt = cur.CreatedAt
	}
	c := cloneServer(&s)
	m.servers[key] = &c
	return cloneServer(&c), nil
}

func (m *MemoryServerStore) GetServer(_ context.Context, tenantID, name string) (UpstreamServer, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.servers[[2]string{tenantID, name}]
	if s == nil {
		return UpstreamServer{}, fmt.Errorf("tools: get server %.40q: %w", name, ErrNotFound)
	}
	return cloneServer(s), nil
}

func (m *MemoryServerStore) ListServers(_ context.Context, tenantID string) ([]UpstreamServer, error) {
	m.mu.RLock()
	out := []UpstreamServer{}
	for k, s := range m.servers {
		if k[0] == tenantID {
			out = append(out, cloneServer(s))
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b UpstreamServer) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *MemoryServerStore) DeleteServer(_ context.Context, tenantID, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{tenantID, name}
	if m.servers[key] == nil {
		return fmt.Errorf("tools: delete server %.40q: %w", name, ErrNotFound)
	}
	delete(m.servers, key)
	return nil
}
