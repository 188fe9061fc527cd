package execgw

import (
	"errors"
	"net/http"
	"strconv"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// Scopes a platform token needs for the gateway's routes.
const (
	ScopeExecute        = "runs:execute"    // start, answer and cancel runs
	ScopeRead           = "runs:read"       // read runs and their events
	ScopeService        = "runs:service"    // a service account: every run of its tenant
	ScopeInstancesRead  = "instances:read"  // list and read instances
	ScopeInstancesWrite = "instances:write" // install, update and remove instances
	HeaderTenant        = httpapi.TenantHeader
	adminSubject        = "admin"
)

// principal is who calls, as the gateway sees it: the operator (every
// tenant), a service account (every run of its tenant), or a user (their
// own runs).
type principal struct {
	tenant  string
	admin   bool
	service bool // a service account, or the operator
	userID  string
	subject string
	claims  *identity.Claims // nil for the operator
}

// seesAll reports whether p may see every run of its tenant.
func (p principal) seesAll() bool { return p.admin || p.service }

// owns reports whether p may see run.
func (p principal) owns(run *gateway.Run) bool {
	if p.tenant != "" && run.TenantID != p.tenant {
		return false
	}
	return p.seesAll() || (p.userID != "" && run.Caller.UserID == p.userID)
}

// caller returns the run's Caller record for p.
func (p principal) caller() gateway.Caller {
	return gateway.Caller{Subject: p.subject, UserID: p.userID, Service: p.service && !p.admin}
}

// need refuses p unless it has scope (the operator has every scope).
func (p principal) need(scope string) error {
	if p.admin || p.claims.HasScope(scope) {
		return nil
	}
	return &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
		Detail: "the token lacks the scope " + scope}
}

// callers establishes the API's callers: the admin token (or, when none
// is configured, a tokenless peer on this machine), else a platform token.
func (s *Service) callers() httpapi.Authenticator {
	return httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens.Authenticator())
}

// principalOf reads the principal of an authenticated request. The
// operator names its tenant with X-Tenant-ID (required when needTenant);
// a token's tenant is its own, and an X-Tenant-ID that disagrees is
// refused.
func principalOf(r *http.Request, needTenant bool) (principal, error) {
	c, err := httpapi.TenantCallerOf(r, needTenant)
	if err != nil {
		return principal{}, err
	}
	if c.Admin {
		return principal{tenant: c.Tenant, admin: true, service: true, subject: adminSubject}, nil
	}
	p := principal{tenant: c.Tenant, userID: c.Claims.UserID, claims: c.Claims, subject: c.Subject}
	p.service = c.Claims.UserID == "" && c.Claims.HasScope(ScopeService)
	return p, nil
}

func badRequest(detail string) *problem.Problem {
	return &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request", Detail: detail}
}

func conflict(typ, detail string) *problem.Problem {
	return &problem.Problem{Type: typ, Status: http.StatusConflict, Title: "Conflict", Detail: detail}
}

// problemFor maps the store's errors to problems.
func problemFor(err error) *problem.Problem {
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		var n notFound
		if errors.As(err, &n) {
			return &problem.Problem{Type: n.typ, Status: http.StatusNotFound, Title: "Not Found", Detail: n.detail}
		}
		return &problem.Problem{Type: problem.TypeNotFound, Status: http.StatusNotFound, Title: "Not Found", Detail: "no such resource"}
	case errors.Is(err, gateway.ErrExists):
		return conflict(gateway.ProblemInstanceExists, "an instance of that name exists in the tenant")
	case errors.Is(err, gateway.ErrConflict):
		return conflict(gateway.ProblemVersionConflict, "it changed meanwhile; read it again and retry")
	case errors.Is(err, httpapi.ErrBadPageToken):
		return &problem.Problem{Type: problem.TypeInvalidPageToken, Status: http.StatusBadRequest, Title: "Bad Request", Detail: "the cursor is not one this server issued"}
	case errors.Is(err, errClosing):
		return &problem.Problem{Type: problem.TypeOverloaded, Status: http.StatusServiceUnavailable, Title: "Service Unavailable", Detail: "the server is shutting down"}
	}
	return nil
}

// notFound is a lookup's miss, saying what was missing.
type notFound struct{ typ, detail string }

func (n notFound) Error() string { return n.detail }
func (n notFound) Unwrap() error { return gateway.ErrNotFound }

func runNotFound(id string) error {
	return notFound{gateway.ProblemRunNotFound, "no run " + quote(id) + " that this caller may see"}
}

func instanceNotFound(id string) error {
	return notFound{gateway.ProblemInstanceNotFound, "no instance " + quote(id) + " in the tenant"}
}

// quote shows an id from a request in a message, bounded so a huge one
// cannot bloat the answer.
func quote(id string) string {
	const max = 80
	if len(id) > max {
		id = id[:max] + "…"
	}
	return strconv.Quote(id)
}
