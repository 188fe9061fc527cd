package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/gatesvc/triage"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// GateOptions configure the governance gate at /api/v1/gate.
type GateOptions struct {
	// Store replaces the database's gate store (tests); with
	// Options.TaskStore set and no Store, the gate is not served.
	Store gate.Store
	// Service tunes the gate (hold window, restart grace, judge); its
	// Logger and Now are the server's when unset.
	Service gatesvc.Options
	// MaxBodyBytes bounds one request (default gatesvc.DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// gateStore is the gate store of the server's database, nil when there
// is none.
func (s *Server) gateStore() gate.Store {
	if s.opts.Gate.Store != nil {
		return s.opts.Gate.Store
	}
	switch db := s.db.(type) {
	case *sqlite.DB:
		return db.GateStore()
	case *postgres.DB:
		return db.GateStore()
	}
	return nil
}

// gateServices starts the gate (settling holds a restart left behind)
// and mounts its API.
func (s *Server) gateServices(ctx context.Context) ([]service, error) {
	store := s.gateStore()
	if store == nil {
		return nil, nil
	}
	o := s.opts.Gate.Service
	if o.Logger == nil {
		o.Logger = s.log.With("service", "gate")
	}
	s.gate = gatesvc.New(store, &o)
	if err := s.gate.Start(ctx); err != nil {
		return nil, fmt.Errorf("app: start gate: %w", err)
	}
	s.startWorker(s.gate.Run)
	h := s.gate.Handler(s.gateAuth(), &gatesvc.HandlerOptions{MaxBodyBytes: s.opts.Gate.MaxBodyBytes})
	page := triage.New(s.gate, s.operatorAuth, &triage.Options{Logger: s.log.With("service", "gate-ui"),
		Secure: strings.HasPrefix(s.baseURL, "https://")})
	return []service{
		{name: "gate", patterns: []string{gate.APIPath + "/"}, handler: h},
		{name: "gate-ui", patterns: []string{TriagePath, TriagePath + "/"}, handler: page},
	}, nil
}

// TriagePath is the gate's operator triage page.
const TriagePath = "/ui/gate"

// operatorAuth checks a token pasted into the triage page: the server's
// admin token (every tenant), or a platform token with gate:operate.
func (s *Server) operatorAuth(ctx context.Context, token string) (triage.Principal, error) {
	if !s.opts.AdminToken.IsZero() && s.opts.AdminToken.Equal(token) {
		return triage.Principal{Actor: "admin", Admin: true}, nil
	}
	c, err := s.issuer.Verify(ctx, token)
	switch {
	case errors.Is(err, identity.ErrInvalid):
		return triage.Principal{}, fmt.Errorf("%w: %w", httpapi.ErrUnauthenticated, err)
	case err != nil:
		return triage.Principal{}, err
	case !c.HasScope(gate.ScopeOperate):
		return triage.Principal{}, fmt.Errorf("%w: the token lacks the scope %s", httpapi.ErrForbidden, gate.ScopeOperate)
	case c.TenantID == "":
		return triage.Principal{}, fmt.Errorf("%w: the token names no tenant", httpapi.ErrForbidden)
	}
	actor := c.Subject
	if actor == "" {
		actor = c.AgentID
	}
	return triage.Principal{Tenant: c.TenantID, Actor: actor}, nil
}

// Gate is the server's gate service (nil before Start or without a gate
// store): tests and the bench drive it directly.
func (s *Server) Gate() *gatesvc.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate
}

// gateAuth establishes the gate's callers: the server's admin token (or,
// when none is configured, a peer on this machine, as for the registry),
// else a platform token whose scopes the service checks.
func (s *Server) gateAuth() httpapi.Authenticator {
	admin := httpapi.AdminRule{Token: s.opts.AdminToken}
	tokens := s.issuer.Authenticator()
	return httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		tok, ok := httpapi.BearerToken(r)
		if !ok {
			return admin.Authenticate(r)
		}
		if !s.opts.AdminToken.IsZero() && s.opts.AdminToken.Equal(tok) {
			return admin.Authenticate(r)
		}
		return tokens.Authenticate(r)
	})
}
