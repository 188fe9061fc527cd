package registrysvc

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/registry"
)

// MaxBodyBytes bounds a request body; a larger one gets 413.
const MaxBodyBytes = httpapi.DefaultMaxBodyBytes

// Handler serves the registry API under registry.APIPath; mount it at
// both registry.APIPath and registry.APIPath+"/":
//
//	GET    /api/v1/agents                 list (pageSize, pageToken, status, tag, domain, name)
//	POST   /api/v1/agents                 register (201, Location)
//	GET    /api/v1/agents/search?q=text   text search (and the list filters)
//	GET    /api/v1/agents/find?capability=…&mode=all|any&fuzzy=true&threshold=0.8 (and the list filters)
//	GET    /api/v1/agents/{id-or-name}    get
//	PUT    /api/v1/agents/{id-or-name}    replace
//	DELETE /api/v1/agents/{id-or-name}    delete (204)
//
// Errors are RFC 9457 problem+json with the registry.Problem* types, and
// registry.ProblemUnauthorized and registry.ProblemWriteForbidden for writes the access
// rules refuse (see the package doc). Reads are open to every peer.
func (s *Service) Handler() http.Handler { return s.api.Handler(handler{s}) }

type handler struct{ s *Service }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := h.s.api
	rest, ok := strings.CutPrefix(r.URL.Path, registry.APIPath)
	if !ok || (rest != "" && rest[0] != '/') {
		api.NotFound(w, r, "")
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	switch {
	case rest == "":
		api.Route(w, r, httpapi.Methods{http.MethodGet: h.list, http.MethodPost: h.register})
	case rest == "search":
		api.Route(w, r, httpapi.Methods{http.MethodGet: h.search})
	case rest == "find":
		api.Route(w, r, httpapi.Methods{http.MethodGet: h.find})
	case !strings.Contains(rest, "/"):
		api.Route(w, r, httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) { h.get(w, r, rest) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) { h.update(w, r, rest) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) { h.delete(w, r, rest) },
		})
	default:
		api.NotFound(w, r, "no such registry resource")
	}
}

func (h handler) list(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r.URL.Query())
	if err == nil {
		var p *registry.Page
		if p, err = h.s.List(r.Context(), q); err == nil {
			httpapi.WriteJSON(w, r, http.StatusOK, p)
			return
		}
	}
	h.s.api.Fail(w, r, err)
}

func (h handler) search(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, err := listQuery(v)
	if err == nil {
		var p *registry.Page
		if p, err = h.s.Search(r.Context(), v.Get("q"), q); err == nil {
			httpapi.WriteJSON(w, r, http.StatusOK, p)
			return
		}
	}
	h.s.api.Fail(w, r, err)
}

func (h handler) find(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := registry.FindQuery{Capabilities: v["capability"], Mode: registry.MatchMode(v.Get("mode")),
		Status: v.Get("status"), Tag: v.Get("tag"), Domain: v.Get("domain"), Name: v.Get("name")}
	var err error
	if s := v.Get("fuzzy"); s != "" {
		if q.Fuzzy, err = strconv.ParseBool(s); err != nil {
			h.s.api.Fail(w, r, httpapi.BadQuery("fuzzy must be true or false"))
			return
		}
	}
	if s := v.Get("threshold"); s != "" {
		if q.Threshold, err = strconv.ParseFloat(s, 64); err != nil || q.Threshold <= 0 {
			h.s.api.Fail(w, r, httpapi.BadQuery("threshold must be a number in (0, 1]"))
			return
		}
	}
	res, err := h.s.Find(r.Context(), q)
	if err != nil {
		h.s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, struct {
		Matches []registry.MatchResult `json:"matches"`
	}{res})
}

func listQuery(v url.Values) (registry.ListQuery, error) {
	q := registry.ListQuery{PageToken: v.Get("pageToken"), Status: v.Get("status"), Tag: v.Get("tag"),
		Domain: v.Get("domain"), Name: v.Get("name")}
	var err error
	q.PageSize, err = httpapi.PageSize(v)
	return q, err
}

func (h handler) get(w http.ResponseWriter, r *http.Request, ref string) {
	a, err := h.s.Get(r.Context(), ref)
	if err != nil {
		h.s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, a)
}

func (h handler) register(w http.ResponseWriter, r *http.Request) {
	var in registry.Agent
	if !h.s.api.Decode(w, r, &in, httpapi.Body{What: "the agent"}) {
		return
	}
	a, err := h.s.Register(r.Context(), &in)
	if err != nil {
		h.s.api.Fail(w, r, err)
		return
	}
	w.Header().Set("Location", registry.APIPath+"/"+a.ID)
	httpapi.WriteJSON(w, r, http.StatusCreated, a)
}

func (h handler) update(w http.ResponseWriter, r *http.Request, ref string) {
	var in registry.Agent
	if !h.s.api.Decode(w, r, &in, httpapi.Body{What: "the agent"}) {
		return
	}
	a, err := h.s.Update(r.Context(), ref, &in)
	if err != nil {
		h.s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, a)
}

func (h handler) delete(w http.ResponseWriter, r *http.Request, ref string) {
	if err := h.s.Delete(r.Context(), ref); err != nil {
		h.s.api.Fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// problemFor maps an error to its problem: the one place registry errors
// become HTTP statuses. The plumbing's own (bodies, queries) pass through
// as they are.
func problemFor(err error) *problem.Problem {
	var ve *registry.ValidationError
	switch {
	case errors.As(err, &ve):
		p := &problem.Problem{Type: registry.ProblemInvalidAgent, Status: http.StatusUnprocessableEntity,
			Title: "Invalid Agent", Detail: "the agent breaks the registry's rules", Errors: slices.Clone(ve.Fields)}
		if errors.Is(err, registry.ErrURLNotAllowed) {
			p.Type, p.Title, p.Detail = registry.ProblemURLNotAllowed, "Agent URL Not Allowed", "the registry does not accept this agent URL"
		}
		return p
	case errors.Is(err, registry.ErrNotFound):
		return &problem.Problem{Type: registry.ProblemAgentNotFound, Status: http.StatusNotFound, Title: "Agent Not Found"}
	case errors.Is(err, registry.ErrExists):
		return &problem.Problem{Type: registry.ProblemAgentExists, Status: http.StatusConflict, Title: "Agent Exists",
			Detail: "another agent has this name"}
	case errors.Is(err, registry.ErrReadOnly):
		return &problem.Problem{Type: registry.ProblemAgentReadOnly, Status: http.StatusForbidden, Title: "Agent Read-Only",
			Detail: "the server hosts this agent and keeps its record"}
	case errors.Is(err, registry.ErrBadPageToken):
		return &problem.Problem{Type: registry.ProblemInvalidPageToken, Status: http.StatusBadRequest, Title: "Invalid Page Token"}
	case errors.Is(err, ErrBadQuery):
		_, detail, _ := strings.Cut(err.Error(), ErrBadQuery.Error()+": ")
		return httpapi.BadQuery(detail)
	case errors.Is(err, httpapi.ErrUnauthenticated):
		return &problem.Problem{Type: registry.ProblemUnauthorized, Status: http.StatusUnauthorized, Title: "Unauthorized",
			Detail: "changing the registry needs the server's admin token: send it as Authorization: Bearer <token>"}
	case errors.Is(err, httpapi.ErrForbidden) && errors.As(err, new(*problem.Problem)):
		return nil // the AdminRule's own answer (a loopback peer naming another host)
	case errors.Is(err, httpapi.ErrForbidden):
		return &problem.Problem{Type: registry.ProblemWriteForbidden, Status: http.StatusForbidden, Title: "Registry Write Forbidden",
			Detail: "this server has no admin token, so it accepts registry changes from its own machine only; " +
				"give it one (novaos serve --admin-token-file FILE, or NOVAOS_ADMIN_TOKEN) and send it as Authorization: Bearer <token>"}
	}
	return nil
}
