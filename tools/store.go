package tools

import (
	"context"
	"errors"
	"time"
)

// Errors of the gateway's stores.
var (
	ErrNotFound = errors.New("tools: not found")
	// ErrConflict: a write's expected version is not the stored one.
	ErrConflict = errors.New("tools: version conflict")
)

// Session is an MCP session the gateway minted at initialize. Any replica
// serves it while it is in use; one idle for the gateway's idle timeout
// is gone.
type Session struct {
	ID       string
	TenantID string
	// Subject is who opened it (the token's subject or agent); a session
	// is served only to the same tenant and subject.
	Subject string
	// ProtocolVersion is the MCP revision initialize agreed on.
	ProtocolVersion string
	CreatedAt       time.Time
	LastSeen        time.Time
}

// Policy is a tenant's tool policy: a CEL expression over the call (see
// the gateway's documentation for its variables and results).
type Policy struct {
	TenantID  string
	Expr      string
	Version   int64
	UpdatedAt time.Time
	UpdatedBy string
}

// Store keeps the gateway's sessions and tenants' policies.
// store/sqlite and store/postgres implement it; store/storetest is its
// contract suite. Implementations are safe for concurrent use.
type Store interface {
	// CreateSession stores a new session.
	CreateSession(ctx context.Context, s Session) error
	// TouchSession returns the session and moves its LastSeen to now,
	// unless it was last seen more than idle before now: then it is
	// deleted and ErrNotFound returned, as for an unknown id.
	TouchSession(ctx context.Context, id string, now time.Time, idle time.Duration) (Session, error)
	// DeleteSession removes the tenant's session; ErrNotFound when it
	// has none by that id.
	DeleteSession(ctx context.Context, tenantID, id string) error
	// SweepSessions deletes the sessions last seen before cutoff and
	// returns how many.
	SweepSessions(ctx context.Context, cutoff time.Time) (int, error)

	// GetPolicy returns the tenant's policy; ErrNotFound when it has none.
	GetPolicy(ctx context.Context, tenantID string) (Policy, error)
	// PutPolicy stores the tenant's policy when the stored version is
	// expectVersion (0: none stored yet), else ErrConflict; the stored
	// policy comes back with the next version.
	PutPolicy(ctx context.Context, p Policy, expectVersion int64) (Policy, error)
	// DeletePolicy removes the tenant's policy; ErrNotFound when none.
	DeletePolicy(ctx context.Context, tenantID string) error
}
