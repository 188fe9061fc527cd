package toolgw

import (
	"errors"
	"net/http"
	"strconv"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/tools"
)

// Paths of the gateway's administration.
const (
	PolicyPath = "/api/v1/tools/policy"
	UsagePath  = "/api/v1/tools/usage"
	// ScopeAdmin lets a token manage its tenant's tool policy and read its
	// usage.
	ScopeAdmin = tools.ScopeAdmin
)

// Routes serve the MCP endpoint (at tools.Path and every path under it,
// tools.CallPath among them), its protected-resource metadata, and the
// policy and usage administration.
func (s *Service) Routes() []httpapi.Route {
	mcpHandler := s.handler()
	meta := http.HandlerFunc(s.serveResourceMetadata)
	api := s.api()
	var own []httpapi.Route
	for _, p := range s.deps.Providers {
		if r, ok := p.(Router); ok {
			own = append(own, r.Routes()...)
		}
	}
	return append(own, []httpapi.Route{
		{Pattern: tools.Path, Handler: mcpHandler},
		{Pattern: tools.Path + "/", Handler: mcpHandler},
		{Pattern: "GET " + tools.ResourceMetadataPath, Handler: meta},
		{Pattern: "GET /.well-known/oauth-protected-resource", Handler: meta},
		{Pattern: PolicyPath, Handler: api.Handler(http.HandlerFunc(s.servePolicy))},
		{Pattern: "GET " + UsagePath, Handler: api.Handler(http.HandlerFunc(s.serveUsage))},
	}...)
}

// serveResourceMetadata answers the OAuth protected-resource metadata
// (RFC 9728) MCP clients read after a 401: the resource, who issues its
// tokens, and the scopes it understands.
func (s *Service) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{
		"resource":                 s.deps.BaseURL + tools.Path,
		"resource_name":            "NovaOS tool gateway",
		"authorization_servers":    []string{s.deps.BaseURL},
		"jwks_uri":                 s.deps.BaseURL + "/.well-known/jwks.json",
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         []string{"mcp:*", "mcp:tools:*", "connector:invoke", "memory:read:*", "memory:write:*", "knowledge:read", "knowledge:write", "files:read:*", "files:write:*"},
	})
}

// admins establishes the administration's callers: the admin token (or a
// tokenless peer on this machine when none is configured), else a
// platform token, which must carry tools:admin.
func (s *Service) admins() httpapi.Authenticator {
	return httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens.Authenticator())
}

// adminTenant is the tenant an administration request acts on: the
// token's (which must carry tools:admin), or ?tenant= for the admin.
func adminTenant(r *http.Request) (string, string, error) {
	c, ok := httpapi.CallerFrom(r.Context())
	if !ok {
		return "", "", httpapi.ErrUnauthenticated
	}
	if c.Admin {
		t := r.URL.Query().Get("tenant")
		if t == "" {
			return "", "", problemf(http.StatusBadRequest, "the admin names the tenant: ?tenant=")
		}
		return t, "admin", nil
	}
	claims := claimsOf(c)
	if claims == nil || claims.TenantID == "" {
		return "", "", httpapi.ErrForbidden
	}
	if !claims.HasScope(ScopeAdmin) {
		return "", "", problemf(http.StatusForbidden, "the token lacks the scope "+ScopeAdmin)
	}
	return claims.TenantID, c.Subject, nil
}

// PolicyBody is the policy administration's body.
type PolicyBody struct {
	Expr      string `json:"expr"`
	Version   int64  `json:"version,omitempty"`
	UpdatedBy string `json:"updated_by,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
}

// servePolicy answers GET, PUT and DELETE of the tenant's tool policy.
// PUT compiles the policy first, and replaces the stored one only when
// If-Match names its version (or none is stored and none is named).
func (s *Service) servePolicy(w http.ResponseWriter, r *http.Request) {
	tenant, actor, err := adminTenant(r)
	if err != nil {
		s.api().Fail(w, r, err)
		return
	}
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		p, err := s.deps.Store.GetPolicy(ctx, tenant)
		if errors.Is(err, tools.ErrNotFound) {
			s.api().Fail(w, r, problemf(http.StatusNotFound, "the tenant has no tool policy"))
			return
		}
		if err != nil {
			s.api().Fail(w, r, err)
			return
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(p.Version, 10)))
		httpapi.WriteJSON(w, r, http.StatusOK, policyBody(p))
	case http.MethodPut:
		var in PolicyBody
		if !s.api().Decode(w, r, &in, httpapi.Body{What: "the policy", MaxBytes: MaxPolicyBytes + 1024}) {
			return
		}
		if err := CompilePolicy(in.Expr); err != nil {
			s.api().Fail(w, r, problemf(http.StatusUnprocessableEntity, err.Error()))
			return
		}
		expect, err := ifMatch(r)
		if err != nil {
			s.api().Fail(w, r, err)
			return
		}
		p, err := s.deps.Store.PutPolicy(ctx, tools.Policy{TenantID: tenant, Expr: in.Expr, UpdatedAt: s.o.Now(), UpdatedBy: actor}, expect)
		if errors.Is(err, tools.ErrConflict) {
			s.api().Fail(w, r, problemf(http.StatusPreconditionFailed, "the stored policy is not the version If-Match names"))
			return
		}
		if err != nil {
			s.api().Fail(w, r, err)
			return
		}
		s.policies.forget(tenant)
		w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(p.Version, 10)))
		httpapi.WriteJSON(w, r, http.StatusOK, policyBody(p))
	case http.MethodDelete:
		err := s.deps.Store.DeletePolicy(ctx, tenant)
		if errors.Is(err, tools.ErrNotFound) {
			s.api().Fail(w, r, problemf(http.StatusNotFound, "the tenant has no tool policy"))
			return
		}
		if err != nil {
			s.api().Fail(w, r, err)
			return
		}
		s.policies.forget(tenant)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, PUT, DELETE")
		s.api().Fail(w, r, problemf(http.StatusMethodNotAllowed, "GET, PUT or DELETE"))
	}
}

func policyBody(p tools.Policy) PolicyBody {
	return PolicyBody{Expr: p.Expr, Version: p.Version, UpdatedBy: p.UpdatedBy, UpdatedAt: p.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
}

// ifMatch is the version an If-Match header names; 0 without one.
func ifMatch(r *http.Request) (int64, error) {
	h := r.Header.Get("If-Match")
	if h == "" {
		return 0, nil
	}
	v, err := strconv.Unquote(h)
	if err != nil {
		v = h
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, problemf(http.StatusBadRequest, "If-Match names a policy version, such as \"3\"")
	}
	return n, nil
}

// serveUsage answers the tenant's metered calls since this process
// started.
func (s *Service) serveUsage(w http.ResponseWriter, r *http.Request) {
	tenant, _, err := adminTenant(r)
	if err != nil {
		s.api().Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"tenant_id": tenant, "usage": s.meter.usage(tenant)})
}

// api is the administration's REST plumbing.
func (s *Service) api() *httpapi.API {
	return &httpapi.API{Name: "tools", Logger: s.log, Auth: s.admins()}
}

// problemf is a problem with status and detail.
func problemf(status int, detail string) *problem.Problem {
	return &problem.Problem{Status: status, Title: http.StatusText(status), Detail: detail}
}

// claimsOf is the verified claims of a platform token's caller.
func claimsOf(c *httpapi.Caller) *identity.Claims {
	cl, _ := c.Claims.(*identity.Claims)
	return cl
}
