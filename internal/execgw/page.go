package execgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw/runspage"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// RunsPagePath is where the runs page is served.
const RunsPagePath = runspage.DefaultPath

// pageRuns is the runs page's view of the gateway: the API's own rules,
// for the principal the page's session names.
type pageRuns struct{ s *Service }

var _ runspage.Runs = pageRuns{}

// runsPage builds the page's handler; cookies are Secure when the
// server's public URL is https.
func (s *Service) runsPage() http.Handler {
	return runspage.New(pageRuns{s}, s.pageAuthenticate, &runspage.Options{
		Logger: s.log.With("service", "runs-ui"),
		Secure: strings.HasPrefix(strings.ToLower(s.deps.BaseURL), "https://"),
	})
}

// pageAuthenticate checks a token pasted into the runs page as the API
// checks a bearer: the admin token acts for every tenant; a platform
// token for its tenant, as its user or, with runs:service and no user, as
// a service account. The page reads runs, so runs:read is required.
func (s *Service) pageAuthenticate(ctx context.Context, token string) (runspage.Principal, error) {
	if !s.deps.AdminToken.IsZero() && s.deps.AdminToken.Equal(token) {
		return runspage.Principal{Actor: adminSubject, Admin: true}, nil
	}
	c, err := s.deps.Tokens.Verify(ctx, token)
	switch {
	case errors.Is(err, identity.ErrInvalid):
		return runspage.Principal{}, fmt.Errorf("%w: %w", httpapi.ErrUnauthenticated, err)
	case err != nil:
		return runspage.Principal{}, err
	case c.TenantID == "":
		return runspage.Principal{}, fmt.Errorf("%w: the token names no tenant", httpapi.ErrForbidden)
	case !c.HasScope(ScopeRead):
		return runspage.Principal{}, fmt.Errorf("%w: the token lacks the scope %s", httpapi.ErrForbidden, ScopeRead)
	}
	p := runspage.Principal{Tenant: c.TenantID, UserID: c.UserID, Scopes: c.Scopes, Actor: c.Subject,
		Service: c.UserID == "" && c.HasScope(ScopeService)}
	if p.Actor == "" {
		p.Actor = c.AgentID
	}
	if p.Actor == "" {
		p.Actor = c.UserID
	}
	return p, nil
}

// principal is the gateway's principal for the page's: the same rules as
// principalOf applies to a request.
func (pageRuns) principal(p runspage.Principal) principal {
	if p.Admin {
		return principal{tenant: p.Tenant, admin: true, service: true, subject: adminSubject}
	}
	return principal{tenant: p.Tenant, userID: p.UserID, service: p.Service, subject: p.Actor,
		claims: &identity.Claims{TenantID: p.Tenant, UserID: p.UserID, Subject: p.Actor, Scopes: p.Scopes}}
}

func (a pageRuns) List(ctx context.Context, p runspage.Principal, f gateway.RunFilter) ([]gateway.Run, error) {
	return a.s.listRuns(ctx, a.principal(p), f)
}

func (a pageRuns) Get(ctx context.Context, p runspage.Principal, id string) (*gateway.Run, error) {
	return a.s.readableRun(ctx, a.principal(p), id)
}

func (a pageRuns) Events(ctx context.Context, p runspage.Principal, id string, after int64, limit int) ([]gateway.Event, error) {
	run, err := a.s.readableRun(ctx, a.principal(p), id)
	if err != nil {
		return nil, err
	}
	return a.s.store.Events(ctx, run.ID, after, limit)
}

func (a pageRuns) Follow(ctx context.Context, p runspage.Principal, id string) (*runspage.Feed, error) {
	run, err := a.s.readableRun(ctx, a.principal(p), id)
	if err != nil {
		return nil, err
	}
	f, ok := a.s.hub.follow(run.ID)
	if !ok {
		return nil, &problem.Problem{Type: problem.TypeOverloaded, Status: http.StatusServiceUnavailable,
			Title: "Service Unavailable", Detail: "too many event streams are open; retry later"}
	}
	return &runspage.Feed{Wake: f.wake, Closing: a.s.hub.closing, Stop: func() { a.s.hub.unfollow(f) }}, nil
}

func (a pageRuns) Cancel(ctx context.Context, p runspage.Principal, id string) (*gateway.Run, error) {
	return a.s.cancel(ctx, a.principal(p), id)
}

func (a pageRuns) Reply(ctx context.Context, p runspage.Principal, id string, r runspage.Reply) (*gateway.Run, error) {
	return a.s.reply(ctx, a.principal(p), id, &Reply{Input: r.Input, ActionID: r.ActionID, InputValue: r.InputValue,
		CallID: r.CallID, Approved: r.Approved})
}
