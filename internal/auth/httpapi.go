package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// SchemeExecutionToken is the httpapi.Caller scheme of a request that
// carried a valid execution token.
const SchemeExecutionToken = httpapi.SchemeExecutionToken

// tokenCaller is the caller a verified execution token makes.
func tokenCaller(c *identity.Claims) *httpapi.Caller {
	return &httpapi.Caller{Scheme: SchemeExecutionToken, Subject: "tenant " + c.TenantID + " agent " + c.AgentID, Claims: c}
}

// Authenticator is the issuer's verifier as an httpapi.Authenticator, for
// a service built on httpapi.API: a valid token gives a Caller whose
// Claims are its *identity.Claims (read them with ClaimsFrom). No token
// wraps httpapi.ErrUnauthenticated; a rejected token is a 401 problem
// saying why (never the token); keys that cannot be read a 503.
func (i *Issuer) Authenticator() httpapi.Authenticator {
	return httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		c, _, err := i.ver.VerifyRequest(r)
		switch {
		case err == nil:
			return tokenCaller(c), nil
		case errors.Is(err, identity.ErrNoCredentials):
			return nil, fmt.Errorf("%w: no bearer token", httpapi.ErrUnauthenticated)
		case errors.Is(err, identity.ErrInvalid):
			var e *identity.Error
			detail := identity.ErrInvalid.Error()
			if errors.As(err, &e) {
				detail = e.Error()
			}
			return nil, &problem.Problem{Type: identity.ProblemInvalidToken, Status: http.StatusUnauthorized, Title: "Unauthorized", Detail: detail}
		default:
			return nil, &problem.Problem{Type: identity.ProblemKeysUnavailable, Status: http.StatusServiceUnavailable, Title: "Service Unavailable",
				Detail: "the keys to verify the token with are unavailable"}
		}
	})
}

// ClaimsFrom returns the verified claims of the request ctx belongs to,
// whichever way they were verified: Middleware (identity.FromContext) or
// an httpapi.API with Authenticator (httpapi.CallerFrom). Services take
// identity from here, never from a request body.
func ClaimsFrom(ctx context.Context) (*identity.Claims, bool) {
	if c, ok := identity.FromContext(ctx); ok {
		return c, true
	}
	if caller, ok := httpapi.CallerFrom(ctx); ok && caller.Scheme == SchemeExecutionToken {
		c, ok := caller.Claims.(*identity.Claims)
		return c, ok && c != nil
	}
	return nil, false
}
