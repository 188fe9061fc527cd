package adapter

import (
	"context"
	"slices"
	"sync"
)

// triggerers is the allow list of who may trigger the agent, read from
// the platform (getAgentTriggerers) and read again when the platform
// says it changed or a token names a newer permission version. The
// subject "*" allows everyone of the agent's tenant.
type triggerers struct {
	api     *Client
	agentID string

	mu       sync.Mutex
	version  int64
	subjects []string
	loaded   bool
}

// Allowed implements AllowList.
func (t *triggerers) Allowed(ctx context.Context, sub string, permissionVersion int64) (bool, error) {
	t.mu.Lock()
	fresh := t.loaded && permissionVersion <= t.version
	t.mu.Unlock()
	if !fresh {
		got, err := t.api.Triggerers(ctx, t.agentID)
		if err != nil {
			return false, err
		}
		t.mu.Lock()
		t.version, t.subjects, t.loaded = got.PermissionVersion, got.Subjects, true
		t.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.subjects, "*") || slices.Contains(t.subjects, sub), nil
}

// invalidate makes the next check read the list again.
func (t *triggerers) invalidate(version int64) {
	t.mu.Lock()
	if version == 0 || version > t.version {
		t.loaded = false
	}
	t.mu.Unlock()
}
