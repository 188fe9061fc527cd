package httpapi

import (
	"fmt"
	"net/http"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/problem"
)

// TenantHeader names the tenant the operator acts for.
const TenantHeader = "X-Tenant-ID"

// MaxTenantHeaderBytes bounds TenantHeader.
const MaxTenantHeaderBytes = 128

// problemInvalidRequest is the platform's problem type of a request that
// breaks a rule.
const problemInvalidRequest = "https://novaos.dev/problems/invalid-request"

// TenantCaller is who calls a tenant's API: the operator, acting for the
// tenant TenantHeader names, or a platform token's bearer, acting for the
// token's own tenant.
type TenantCaller struct {
	Tenant string
	Admin  bool
	// Subject names the caller in logs and records: "admin", or the
	// token's subject (its agent when it names none).
	Subject string
	// Claims are the token's; nil for the operator.
	Claims *identity.Claims
}

// Need refuses c with a 403 unless it has scope; the operator has every
// scope.
func (c TenantCaller) Need(scope string) error {
	if c.Admin || c.Claims.HasScope(scope) {
		return nil
	}
	return &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
		Detail: "the token lacks the scope " + scope}
}

// TenantCallerOf reads the caller of a request an AdminOrToken
// authenticator let in (API.Handler put it in the context). The operator
// must name the tenant in TenantHeader when needTenant; a token's tenant
// is its own, and a TenantHeader naming another is refused with 403.
func TenantCallerOf(r *http.Request, needTenant bool) (TenantCaller, error) {
	c, ok := CallerFrom(r.Context())
	if !ok {
		return TenantCaller{}, fmt.Errorf("%w: no caller", ErrUnauthenticated)
	}
	header := r.Header.Get(TenantHeader)
	if len(header) > MaxTenantHeaderBytes {
		return TenantCaller{}, &problem.Problem{Type: problemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: TenantHeader + " is too long"}
	}
	if c.Admin {
		if needTenant && header == "" {
			return TenantCaller{}, &problem.Problem{Type: problemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
				Detail: "the operator names the tenant with the " + TenantHeader + " header"}
		}
		return TenantCaller{Tenant: header, Admin: true, Subject: "admin"}, nil
	}
	claims, ok := c.Claims.(*identity.Claims)
	if !ok || claims == nil || claims.TenantID == "" {
		return TenantCaller{}, fmt.Errorf("%w: the token names no tenant", ErrForbidden)
	}
	if header != "" && header != claims.TenantID {
		return TenantCaller{}, &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
			Detail: TenantHeader + " does not match the token's tenant"}
	}
	subject := claims.Subject
	if subject == "" {
		subject = claims.AgentID
	}
	return TenantCaller{Tenant: claims.TenantID, Subject: subject, Claims: claims}, nil
}
