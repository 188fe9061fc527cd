package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"novaos.dev/novaos/registry"
)

// MaxBodyBytes bounds a request body; a larger one gets 413.
const MaxBodyBytes = 64 << 10

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
func (s *Service) Handler() http.Handler { return handler{s} }

type handler struct{ s *Service }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, registry.APIPath)
	if !ok || (rest != "" && rest[0] != '/') {
		h.problem(w, r, &registry.Problem{Type: registry.ProblemNotFound, Status: http.StatusNotFound, Title: "Not Found"})
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	switch {
	case rest == "":
		h.route(w, r, map[string]func(http.ResponseWriter, *http.Request){
			http.MethodGet: h.list, http.MethodPost: h.register,
		})
	case rest == "search":
		h.route(w, r, map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.search})
	case rest == "find":
		h.route(w, r, map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.find})
	case !strings.Contains(rest, "/"):
		h.route(w, r, map[string]func(http.ResponseWriter, *http.Request){
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) { h.get(w, r, rest) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) { h.update(w, r, rest) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) { h.delete(w, r, rest) },
		})
	default:
		h.problem(w, r, &registry.Problem{Type: registry.ProblemNotFound, Status: http.StatusNotFound, Title: "Not Found",
			Detail: "no such registry resource"})
	}
}

func (h handler) route(w http.ResponseWriter, r *http.Request, methods map[string]func(http.ResponseWriter, *http.Request)) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if f, ok := methods[method]; ok {
		f(w, r)
		return
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if _, ok := methods[m]; ok {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	h.problem(w, r, &registry.Problem{Type: registry.ProblemMethodNotAllowed, Status: http.StatusMethodNotAllowed,
		Title: "Method Not Allowed", Detail: fmt.Sprintf("%s is not allowed here; use %s", r.Method, strings.Join(allow, " or "))})
}

func (h handler) list(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r.URL.Query())
	if err == nil {
		var p *registry.Page
		if p, err = h.s.List(r.Context(), q); err == nil {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	h.fail(w, r, err)
}

func (h handler) search(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, err := listQuery(v)
	if err == nil {
		var p *registry.Page
		if p, err = h.s.Search(r.Context(), v.Get("q"), q); err == nil {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	h.fail(w, r, err)
}

func (h handler) find(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := registry.FindQuery{Capabilities: v["capability"], Mode: registry.MatchMode(v.Get("mode")),
		Status: v.Get("status"), Tag: v.Get("tag"), Domain: v.Get("domain"), Name: v.Get("name")}
	var err error
	if s := v.Get("fuzzy"); s != "" {
		if q.Fuzzy, err = strconv.ParseBool(s); err != nil {
			h.fail(w, r, fmt.Errorf("%w: fuzzy must be true or false", ErrBadQuery))
			return
		}
	}
	if s := v.Get("threshold"); s != "" {
		if q.Threshold, err = strconv.ParseFloat(s, 64); err != nil || q.Threshold <= 0 {
			h.fail(w, r, fmt.Errorf("%w: threshold must be a number in (0, 1]", ErrBadQuery))
			return
		}
	}
	res, err := h.s.Find(r.Context(), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Matches []registry.MatchResult `json:"matches"`
	}{res})
}

func listQuery(v url.Values) (registry.ListQuery, error) {
	q := registry.ListQuery{PageToken: v.Get("pageToken"), Status: v.Get("status"), Tag: v.Get("tag"),
		Domain: v.Get("domain"), Name: v.Get("name")}
	if s := v.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, fmt.Errorf("%w: pageSize must be a non-negative integer", ErrBadQuery)
		}
		q.PageSize = n
	}
	return q, nil
}

func (h handler) get(w http.ResponseWriter, r *http.Request, ref string) {
	a, err := h.s.Get(r.Context(), ref)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (h handler) register(w http.ResponseWriter, r *http.Request) {
	var in registry.Agent
	if !h.decode(w, r, &in) {
		return
	}
	a, err := h.s.Register(r.Context(), &in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", registry.APIPath+"/"+a.ID)
	writeJSON(w, http.StatusCreated, a)
}

func (h handler) update(w http.ResponseWriter, r *http.Request, ref string) {
	var in registry.Agent
	if !h.decode(w, r, &in) {
		return
	}
	a, err := h.s.Update(r.Context(), ref, &in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (h handler) delete(w http.ResponseWriter, r *http.Request, ref string) {
	if err := h.s.Delete(r.Context(), ref); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decode reads one JSON object of at most MaxBodyBytes with no unknown
// fields, or answers with a problem and returns false.
func (h handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		w.Header().Set("Accept", "application/json")
		h.problem(w, r, &registry.Problem{Type: registry.ProblemUnsupportedMedia, Status: http.StatusUnsupportedMediaType,
			Title: "Unsupported Media Type", Detail: "send the agent as application/json"})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		// Exactly one value: anything but white space after it is an error.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON object")
			if mbe := (*http.MaxBytesError)(nil); errors.As(terr, &mbe) {
				err = terr
			}
		}
	}
	if err == nil {
		return true
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		h.problem(w, r, &registry.Problem{Type: registry.ProblemBodyTooLarge, Status: http.StatusRequestEntityTooLarge,
			Title: "Content Too Large", Detail: fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes)})
		return false
	}
	detail := err.Error()
	if errors.Is(err, io.EOF) {
		detail = "empty body"
	}
	h.problem(w, r, &registry.Problem{Type: registry.ProblemMalformedJSON, Status: http.StatusBadRequest,
		Title: "Malformed JSON", Detail: strings.TrimPrefix(detail, "json: ")})
	return false
}

// problemFor maps an error to its problem: the one place registry errors
// become HTTP statuses.
func problemFor(err error) *registry.Problem {
	var ve *registry.ValidationError
	switch {
	case errors.As(err, &ve):
		p := &registry.Problem{Type: registry.ProblemInvalidAgent, Status: http.StatusUnprocessableEntity,
			Title: "Invalid Agent", Detail: "the agent breaks the registry's rules", Errors: ve.Fields}
		if errors.Is(err, registry.ErrURLNotAllowed) {
			p.Type, p.Title, p.Detail = registry.ProblemURLNotAllowed, "Agent URL Not Allowed", "the registry does not accept this agent URL"
		}
		return p
	case errors.Is(err, registry.ErrNotFound):
		return &registry.Problem{Type: registry.ProblemAgentNotFound, Status: http.StatusNotFound, Title: "Agent Not Found"}
	case errors.Is(err, registry.ErrExists):
		return &registry.Problem{Type: registry.ProblemAgentExists, Status: http.StatusConflict, Title: "Agent Exists",
			Detail: "another agent has this name"}
	case errors.Is(err, registry.ErrReadOnly):
		return &registry.Problem{Type: registry.ProblemAgentReadOnly, Status: http.StatusForbidden, Title: "Agent Read-Only",
			Detail: "the server hosts this agent and keeps its record"}
	case errors.Is(err, registry.ErrBadPageToken):
		return &registry.Problem{Type: registry.ProblemInvalidPageToken, Status: http.StatusBadRequest, Title: "Invalid Page Token"}
	case errors.Is(err, ErrBadQuery):
		_, detail, _ := strings.Cut(err.Error(), ErrBadQuery.Error()+": ")
		return &registry.Problem{Type: registry.ProblemInvalidQuery, Status: http.StatusBadRequest, Title: "Invalid Query", Detail: detail}
	}
	return nil
}

func (h handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p == nil {
		h.s.opts.Logger.ErrorContext(r.Context(), "registry: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		p = &registry.Problem{Type: registry.ProblemInternal, Status: http.StatusInternalServerError, Title: "Internal Server Error"}
	}
	h.problem(w, r, p)
}

func (h handler) problem(w http.ResponseWriter, r *http.Request, p *registry.Problem) {
	p.Instance = r.URL.Path
	w.Header().Set("Content-Type", registry.ProblemContentTypeHeader)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	if err := json.NewEncoder(w).Encode(p); err != nil {
		h.s.opts.Logger.DebugContext(r.Context(), "registry: write problem", "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
