package gate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	pub "novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// DefaultMaxBodyBytes bounds a request body: an action with its evidence.
const DefaultMaxBodyBytes = pub.MaxDocumentSize

// HandlerOptions configure Handler.
type HandlerOptions struct {
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// Handler serves the API under pub.APIPath (see package gate's api.go).
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
	p := pub.APIPath
	mux.HandleFunc("POST "+p+"/sessions", h.openSession)
	mux.HandleFunc("POST "+p+"/sessions/end", jsonCall(h, http.StatusNoContent, func(ctx context.Context, c *Caller, end pub.SessionEnd) (any, error) {
		return nil, s.EndSession(ctx, c, end)
	}))
	mux.HandleFunc("POST "+p+"/actions", h.submit)
	mux.HandleFunc("POST "+p+"/actions/wait", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req pub.WaitRequest) (any, error) {
		return s.Wait(ctx, c, req)
	}))
	mux.HandleFunc("POST "+p+"/claims", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req pub.ClaimRequest) (any, error) {
		return s.Claim(ctx, c, req)
	}))
	mux.HandleFunc("POST "+p+"/acks", jsonCall(h, http.StatusOK, func(ctx context.Context, c *Caller, req pub.AckRequest) (any, error) {
		return s.Ack(ctx, c, req)
	}))
	mux.HandleFunc("GET "+p+"/actions", h.list)
	mux.HandleFunc("GET "+p+"/actions/{session}/{action}", h.show)
	mux.HandleFunc("POST "+p+"/actions/{session}/{action}/decision", h.decide)
	mux.HandleFunc("PUT "+p+"/rules", h.putRules)
	mux.HandleFunc("GET "+p+"/rules", h.getRules)
	mux.HandleFunc("GET "+p+"/audit", h.audit)
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
	return &Caller{Tenant: claims.TenantID, Actor: actor, Grants: claims.HasScope}
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
		h.api.Fail(w, r, &httpapi.Problem{Status: http.StatusForbidden, Title: "Forbidden",
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

// body reads a request body within the size limit; the strict decoders
// of package gate then check it.
func (h *handler) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	var raw json.RawMessage
	if !h.api.Decode(w, r, &raw, httpapi.Body{MaxBytes: h.max}) {
		return nil, false
	}
	return raw, true
}

// jsonCall serves one agent call of the write path: a gate:submit caller
// acting in its token's tenant (or an admin naming one), a strictly
// decoded body, and the answer as JSON with status (no body with 204).
func jsonCall[Req any](h *handler, status int, call func(ctx context.Context, c *Caller, req Req) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.caller(w, r, pub.ScopeSubmit, true)
		if !ok {
			return
		}
		var req Req
		if !decodeInto(h, w, r, &req) {
			return
		}
		out, err := call(r.Context(), c, req)
		if err != nil {
			h.api.Fail(w, r, err)
			return
		}
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		httpapi.WriteJSON(w, r, status, out)
	}
}

func decodeInto[T any](h *handler, w http.ResponseWriter, r *http.Request, v *T) bool {
	raw, ok := h.body(w, r)
	if !ok {
		return false
	}
	if err := pub.CheckStructure(raw); err != nil {
		h.api.Fail(w, r, badRequest(err))
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		h.api.Fail(w, r, badRequest(err))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		h.api.Fail(w, r, badRequest(errors.New("data after the JSON value")))
		return false
	}
	return true
}

func badRequest(err error) *httpapi.Problem {
	return &httpapi.Problem{Status: http.StatusBadRequest, Title: "Bad Request", Detail: err.Error()}
}

func (h *handler) openSession(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeSubmit, false)
	if !ok {
		return
	}
	raw, ok := h.body(w, r)
	if !ok {
		return
	}
	req, err := pub.DecodeSessionRequest(raw)
	if err != nil {
		h.api.Fail(w, r, badRequest(err))
		return
	}
	info, created, err := h.s.OpenSession(r.Context(), c, req)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpapi.WriteJSON(w, r, status, info)
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeSubmit, false)
	if !ok {
		return
	}
	raw, ok := h.body(w, r)
	if !ok {
		return
	}
	claim := false
	if v := r.URL.Query().Get("claim"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			h.api.Fail(w, r, httpapi.BadQuery("claim: want 1 or 0"))
			return
		}
		claim = b
	}
	v, err := h.s.Submit(r.Context(), c, raw, claim)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, v)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeOperate, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	var states []pub.ActionState
	if v := q.Get("state"); v != "" {
		for _, st := range strings.Split(v, ",") {
			states = append(states, pub.ActionState(strings.TrimSpace(st)))
		}
	}
	limit, err := httpapi.PageSize(q)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	list, err := h.s.List(r.Context(), c.Tenant, states, q.Get("after"), limit)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, list)
}

func (h *handler) show(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeOperate, true)
	if !ok {
		return
	}
	rec, err := h.s.Get(r.Context(), c.Tenant, r.PathValue("session"), r.PathValue("action"))
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, rec)
}

func (h *handler) decide(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeOperate, true)
	if !ok {
		return
	}
	raw, ok := h.body(w, r)
	if !ok {
		return
	}
	d, err := pub.DecodeOperatorDecision(raw)
	if err != nil {
		h.api.Fail(w, r, badRequest(err))
		return
	}
	rec, err := h.s.Decide(r.Context(), c.Tenant, r.PathValue("session"), r.PathValue("action"), d, c.Actor)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, rec)
}

func (h *handler) putRules(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeAdmin, true)
	if !ok {
		return
	}
	raw, ok := h.body(w, r)
	if !ok {
		return
	}
	info, err := h.s.PutRules(r.Context(), c.Tenant, c.Actor, raw)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, info)
}

func (h *handler) getRules(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeAdmin, true)
	if !ok {
		return
	}
	var version int64
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			h.api.Fail(w, r, httpapi.BadQuery("version: a positive integer"))
			return
		}
		version = n
	}
	info, err := h.s.Rules(r.Context(), c.Tenant, version)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, info)
}

// audit serves the chain to the server's admin only: it spans tenants.
func (h *handler) audit(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r, pub.ScopeAdmin, false)
	if !ok {
		return
	}
	if !c.Admin {
		h.api.Fail(w, r, &httpapi.Problem{Status: http.StatusForbidden, Title: "Forbidden",
			Detail: "the audit chain spans tenants: it needs the server's admin token"})
		return
	}
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			h.api.Fail(w, r, httpapi.BadQuery("after: a sequence number"))
			return
		}
		after = n
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			h.api.Fail(w, r, httpapi.BadQuery("limit: 1 to 1000"))
			return
		}
		limit = n
	}
	page, err := h.s.Audit(r.Context(), after, limit)
	if err != nil {
		h.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, page)
}

// problemFor maps the service's errors to statuses.
func problemFor(err error) *httpapi.Problem {
	p := func(status int, title string) *httpapi.Problem {
		return &httpapi.Problem{Status: status, Title: title, Detail: err.Error()}
	}
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrInvalidRuleSet):
		return p(http.StatusBadRequest, "Bad Request")
	case errors.Is(err, ErrForbidden):
		return p(http.StatusForbidden, "Forbidden")
	case errors.Is(err, pub.ErrNotFound):
		return p(http.StatusNotFound, "Not Found")
	case errors.Is(err, ErrSessionState), errors.Is(err, ErrNotClaimable), errors.Is(err, pub.ErrConflict):
		return p(http.StatusConflict, "Conflict")
	}
	return nil
}
