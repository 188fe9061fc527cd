package llmgw

import (
	"errors"
	"math"
	"net/http"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/llm"
)

// caller is who makes a call: a verified execution token's tenant,
// instance, run, scopes and the run's own limit, or the platform itself.
type caller struct {
	tenant, instance, run string
	scopes                []string
	// limit is the run's own limit on its model use (zero: none).
	limit    llm.Amount
	platform bool
}

// grants reports whether the caller may use model: the token grants
// llm:model:<model> (llm:model:* grants every model). The platform may
// use every model.
func (c *caller) grants(model string) bool {
	return c.platform || identity.AnyScopeMatches(c.scopes, scopeOf(model))
}

func scopeOf(model string) string { return llm.ModelScopePrefix + model }

type platformKey struct{}

// authenticate establishes the caller: the platform, for a request the
// Platform made in process, else the bearer token, which the OpenAI SDKs
// send as their API key. The X-NovaOS-* headers the NovaOS SDKs add are
// advisory: identity comes from the verified token only.
func (s *Service) authenticate(r *http.Request) (*caller, *llm.APIError) {
	if c, ok := r.Context().Value(platformKey{}).(*caller); ok {
		return c, nil
	}
	tok, ok := httpapi.BearerToken(r)
	if !ok {
		return nil, unauthorized("You didn't provide an API key: send the execution token as Authorization: Bearer <token>.")
	}
	claims, err := s.deps.Tokens.Verify(r.Context(), tok)
	if err != nil {
		if errors.Is(err, identity.ErrInvalid) {
			msg := "The execution token is not valid."
			switch {
			case errors.Is(err, identity.ErrExpired):
				msg = "The execution token has expired."
			case errors.Is(err, identity.ErrRevoked):
				msg = "The execution token has been revoked."
			}
			return nil, unauthorized(msg)
		}
		s.log.ErrorContext(r.Context(), "llmgw: verify a token", "err", err)
		return nil, serverError(http.StatusServiceUnavailable, "The token could not be checked; retry shortly.")
	}
	if claims.TenantID == "" || !llm.ValidKey(claims.TenantID) || !llm.ValidKey(claims.InstanceID) || !llm.ValidKey(claims.RunID) {
		return nil, unauthorized("The execution token names no usable tenant.")
	}
	// The access log and the request's span above name the tenant.
	httpapi.NoteCaller(r.Context(), &httpapi.Caller{Scheme: httpapi.SchemeExecutionToken, Claims: claims})
	c := &caller{tenant: claims.TenantID, instance: claims.InstanceID, run: claims.RunID, scopes: claims.Scopes}
	if c.run != "" {
		c.limit = ownLimit(claims.LLMMaxTokens, claims.LLMMaxCostUSD)
	}
	return c, nil
}

// ownLimit is a run's own limit as its token states it, as the ledger
// counts: cost in nanodollars, rounded down (a run gets no more than it
// was given) but never to zero, which would mean no limit; both at most
// llm.MaxAmount, past which nothing is counted anyway.
func ownLimit(tokens int64, costUSD float64) llm.Amount {
	a := llm.Amount{Tokens: min(max(tokens, 0), llm.MaxAmount)}
	if costUSD > 0 {
		a.Cost = llm.Cost(min(max(math.Floor(costUSD*1e9), 1), llm.MaxAmount))
	}
	return a
}
