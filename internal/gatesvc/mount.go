package gatesvc

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/gatesvc/triage"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Tokens verifies the platform tokens agents and operators present: the
// server's token issuer.
type Tokens interface {
	Authenticator() httpapi.Authenticator
	Verify(ctx context.Context, token string) (*identity.Claims, error)
}

// Deps are what the gate takes from the server around it.
type Deps struct {
	// AdminToken is the server's admin token: its bearer acts for every
	// tenant. Without one, a tokenless caller on this machine is the
	// admin (httpapi.AdminRule).
	AdminToken secret.Value
	Tokens     Tokens // required
	// Secure marks the triage page's cookies Secure: the server is
	// reached over https.
	Secure bool
	// Decided, when set, is told of every operator decision this process
	// records, after it is stored (the tool gateway resumes the runs
	// waiting on it).
	Decided func(gate.ActionRecord)
	// Tracing traces every decision ("gate.decide") and judge call
	// ("gate.judge"); nil traces nothing.
	Tracing trace.TracerProvider
	// Metrics, when set, receives the verdicts and the holds' metrics.
	Metrics prometheus.Registerer
}

// TriagePath is the operator triage page.
const TriagePath = triage.DefaultPath

// Mount builds the gate over st.Gate: its API at gate.APIPath and the
// operator triage page at TriagePath. Nil when st keeps no gate.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.Gate == nil {
		return nil
	}
	s := New(st.Gate, o)
	s.deps = deps
	s.tel = newTelemetry(deps.Tracing, deps.Metrics, st.Gate, s.o.Now, s.log)
	return s
}

// Routes serve the gate's API and its triage page.
func (s *Service) Routes() []httpapi.Route {
	api := s.Handler(s.callers(), &HandlerOptions{MaxBodyBytes: s.o.MaxBodyBytes})
	page := triage.New(s, s.operator, &triage.Options{Logger: s.log.With("service", "gate-ui"), Secure: s.deps.Secure})
	return []httpapi.Route{
		{Pattern: gate.APIPath + "/", Handler: api},
		{Pattern: TriagePath, Handler: page},
		{Pattern: TriagePath + "/", Handler: page},
	}
}

// Interceptors are none: agents reach the gate through its API.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Shutdown ends the long-polls in flight (Close), so agents waiting on
// holds do not hold the server's shutdown up.
func (s *Service) Shutdown(context.Context) error {
	s.Close()
	return nil
}

// callers establishes the API's callers: the admin token (or, when none
// is configured, a tokenless peer on this machine), else a platform token
// whose scopes the service checks.
func (s *Service) callers() httpapi.Authenticator {
	return httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens.Authenticator())
}

// operator checks a token pasted into the triage page: the admin token
// (every tenant), or a platform token with gate:operate.
func (s *Service) operator(ctx context.Context, token string) (triage.Principal, error) {
	if !s.deps.AdminToken.IsZero() && s.deps.AdminToken.Equal(token) {
		return triage.Principal{Actor: "admin", Admin: true}, nil
	}
	c, err := s.deps.Tokens.Verify(ctx, token)
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
