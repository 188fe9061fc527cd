package gatesvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// DefaultMaxBodyBytes bounds a request body: an action with its evidence.
const DefaultMaxBodyBytes = gate.MaxDocumentSize

// HandlerOptions configure Handler.
type HandlerOptions struct {
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// Handler serves the API under gate.APIPath (see package gate's api.go).
// auth establishes callers: the server's admin (Caller.Admin) or a
// platform token (Caller.Claims is its *identity.Claims).
func (s *Service) Handler(auth httpapi.Authenticator, o *HandlerOptions) http.Handler {
	max := int64(DefaultMaxBodyBytes)
	if o != nil && o.MaxBodyBytes > 0 {
		max = o.MaxBodyBytes
	}
	h := &handler{s: s, max: max}
	h.api = &httpapi.API{Name: "gate", Logger: s.log, MaxBodyBytes: max, Auth: auth, ProblemFor: problemFor}
	mux := http.NewServeMux()
	p := gate.APIPath
	mux.HandleFunc("POST "+p+"/sessions", h.route(gate.ScopeSubmit, false, h.openSession))
	mux.HandleFunc("POST "+p+"/sessions/end", jsonCall(h, http.StatusNoContent, func(ctx context.Context, c *Caller, end gate.SessionEnd) (any, error) {
		return nil, s.EndSession(ctx, c, end)
	}))
	mux.HandleFunc("POST "+p+"/actions", h.route(gate.ScopeSubmit, false, h.submit))
	mux.HandleFunc("POST "+p+"/actions/wait", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req gate.WaitRequest) (any, error) {
		return s.Wait(ctx, c, req)
	}))
	mux.HandleFunc("POST "+p+"/claims", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req gate.ClaimRequest) (any, error) {
		return s.Claim(ctx, c, req)
	}))
	mux.HandleFunc("POST "+p+"/acks", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req gate.AckRequest) (any, error) {
		return s.Ack(ctx, c, req)
	}))
	mux.HandleFunc("GET "+p+"/actions", h.route(gate.ScopeOperate, false, h.list))
	mux.HandleFunc("GET "+p+"/actions/{session}/{action}", h.route(gate.ScopeOperate, true, func(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
		rec, err := s.Get(r.Context(), c.Tenant, r.PathValue("session"), r.PathValue("action"))
		return http.StatusOK, rec, err
	}))
	mux.HandleFunc("POST "+p+"/actions/{session}/{action}/decision", h.route(gate.ScopeOperate, true, h.decide))
	mux.HandleFunc("PUT "+p+"/rules", h.route(gate.ScopeAdmin, true, h.putRules))
	mux.HandleFunc("GET "+p+"/rules", h.route(gate.ScopeAdmin, true, h.getRules))
	mux.HandleFunc("GET "+p+"/audit", h.route(gate.ScopeAdmin, false, h.audit))
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		h.api.NotFound(w, r, "no such gate endpoint or method")
	})
	return h.api.Handler(mux)
}

type handler struct {
	s   *Service
	api *httpapi.API
	max int64
}

// CallerOf turns the plumbing's caller into the service's.
func CallerOf(c *httpapi.Caller) *Caller {
	if c == nil {
		return nil
	}
	if c.Admin {
		return &Caller{Admin: true, Actor: "admin (" + c.Scheme + ")"}
	}
	claims, ok := c.Claims.(*identity.Claims)
	if !ok || claims == nil {
		return nil
	}
	actor := claims.Subject
	if actor == "" {
		actor = claims.AgentID
	}
	return &Caller{Tenant: claims.TenantID, Agent: claims.AgentID, Actor: actor, Grants: claims.HasScope}
}

// caller returns the request's caller when it has scope, answering the
// refusal otherwise. An admin names the tenant with ?tenant=, and must
// for the calls that act on one.
func (h *handler) caller(w http.ResponseWriter, r *http.Request, scope string, needTenant bool) (*Caller, bool) {
	hc, _ := httpapi.CallerFrom(r.Context())
	c := CallerOf(hc)
	if c == nil {
		h.api.Fail(w, r, httpapi.ErrUnauthenticated)
		return nil, false
	}
	if !c.has(scope) {
		h.api.Fail(w, r, &problem.Problem{Status: http.StatusForbidden, Title: "Forbidden",
			Detail: "the token lacks the scope " + scope})
		return nil, false
	}
	if c.Admin {
		cc := *c
		cc.Tenant = r.URL.Query().Get("tenant")
		if needTenant && cc.Tenant == "" {
			h.api.Fail(w, r, httpapi.BadQuery("the admin token acts for every tenant: name one with ?tenant="))
			return nil, false
		}
		return &cc, true
	}
	return c, true
}

// jsonCall serves one agent call of the write path: a gate:submit caller
// acting in its token's tenant (or an admin naming one), a body decoded
// strictly (duplicate keys at any depth, unknown fields and trailing data
// refused), and the answer as JSON with status (no body with 204).
func jsonCall[Req any](h *handler, status int, call func(ctx context.Context, c *Caller, req Req) (any, error)) http.HandlerFunc {
	return h.route(gate.ScopeSubmit, true, func(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
		raw, err := h.readBody(w, r)
		if err != nil {
			return 0, nil, err
		}
		var req Req
		if err := gate.CheckStructure(raw); err != nil {
			return 0, nil, badRequest(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return 0, nil, badRequest(err)
		}
		out, err := call(r.Context(), c, req)
		return status, out, err
	})
}

func badRequest(err error) *problem.Problem {
	return &problem.Problem{Status: http.StatusBadRequest, Title: "Bad Request", Detail: err.Error()}
}

// routed is one endpoint's work: it answers a status and a value to
// write as JSON (none with 204), or an error for API.Fail.
type routed func(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error)

// route checks the caller (see caller) and writes what fn answers.
func (h *handler) route(scope string, needTenant bool, fn routed) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.caller(w, r, scope, needTenant)
		if !ok {
			return
		}
		status, out, err := fn(w, r, c)
		switch {
		case err != nil:
			h.api.Fail(w, r, err)
		case status == http.StatusNoContent:
			w.WriteHeader(status)
		default:
			httpapi.WriteJSON(w, r, status, out)
		}
	}
}

// readBody reads a request body within the size limit for the strict
// decoders of package gate, as an error API.Fail answers.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var raw json.RawMessage
	if err := httpapi.DecodeJSON(w, r, &raw, httpapi.Body{MaxBytes: h.max}); err != nil {
		return nil, err
	}
	return raw, nil
}

func (h *handler) openSession(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	raw, err := h.readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	req, err := gate.DecodeSessionRequestUnvalidated(raw)
	if err != nil {
		return 0, nil, badRequest(err)
	}
	info, created, err := h.s.OpenSession(r.Context(), c, req)
	if created {
		return http.StatusCreated, info, err
	}
	return http.StatusOK, info, err
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	claim := false
	if v := r.URL.Query().Get("claim"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return 0, nil, httpapi.BadQuery("claim: want 1 or 0")
		}
		claim = b
	}
	raw, err := h.readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	v, err := h.s.Submit(r.Context(), c, raw, claim)
	return http.StatusOK, v, err
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	q := r.URL.Query()
	var states []gate.ActionState
	if v := q.Get("state"); v != "" {
		for _, st := range strings.Split(v, ",") {
			states = append(states, gate.ActionState(strings.TrimSpace(st)))
		}
	}
	var limit int
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return 0, nil, httpapi.BadQuery("limit: 1 to 500")
		}
		limit = n
	}
	list, err := h.s.List(r.Context(), c.Tenant, states, q.Get("after"), limit)
	return http.StatusOK, list, err
}

func (h *handler) decide(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	raw, err := h.readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	d, err := gate.DecodeOperatorDecision(raw)
	if err != nil {
		return 0, nil, badRequest(err)
	}
	rec, err := h.s.Decide(r.Context(), c.Tenant, r.PathValue("session"), r.PathValue("action"), d, c.Actor)
	return http.StatusOK, rec, err
}

func (h *handler) putRules(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	raw, err := h.readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	info, err := h.s.PutRules(r.Context(), c.Tenant, c.Actor, raw)
	return http.StatusOK, info, err
}

func (h *handler) getRules(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	var version int64
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, nil, httpapi.BadQuery("version: a positive integer")
		}
		version = n
	}
	info, err := h.s.Rules(r.Context(), c.Tenant, version)
	return http.StatusOK, info, err
}

// audit serves the chain to the server's admin only: it spans tenants.
func (h *handler) audit(w http.ResponseWriter, r *http.Request, c *Caller) (int, any, error) {
	if !c.Admin {
		return 0, nil, &problem.Problem{Status: http.StatusForbidden, Title: "Forbidden",
			Detail: "the audit chain spans tenants: it needs the server's admin token"}
	}
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, nil, httpapi.BadQuery("after: a sequence number")
		}
		after = n
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, nil, httpapi.BadQuery("limit: 1 to 1000")
		}
		limit = n
	}
	page, err := h.s.Audit(r.Context(), after, limit)
	return http.StatusOK, page, err
}

// problemFor maps the service's errors to statuses.
func problemFor(err error) *problem.Problem {
	p := func(status int, title string) *problem.Problem {
		return &problem.Problem{Status: status, Title: title, Detail: err.Error()}
	}
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrInvalidRuleSet):
		return p(http.StatusBadRequest, "Bad Request")
	case errors.Is(err, ErrForbidden):
		return p(http.StatusForbidden, "Forbidden")
	case errors.Is(err, gate.ErrNotFound):
		return p(http.StatusNotFound, "Not Found")
	case errors.Is(err, ErrSessionState), errors.Is(err, ErrNotClaimable), errors.Is(err, gate.ErrConflict):
		return p(http.StatusConflict, "Conflict")
	}
	return nil
}
