package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"novaos.dev/novaos/problem"
)

// API is the plumbing of one REST service: who may call it, how its
// bodies are read, and how its errors become RFC 9457 problems. A service
// keeps one (its zero fields mean defaults) and writes only its routes and
// its own error mapping:
//
//	api := &httpapi.API{Name: "notes", Auth: httpapi.AdminRule{Token: tok},
//		Protect: func(r *http.Request) bool { return httpapi.IsWrite(r.Method) },
//		ProblemFor: notesProblem}
//	mux.Handle("/api/v1/notes", api.Handler(http.HandlerFunc(serveNotes)))
//
// and in a handler:
//
//	var in Note
//	if !api.Decode(w, r, &in, httpapi.Body{What: "the note"}) { return }
//	n, err := store.Add(r.Context(), &in)
//	if err != nil { api.Fail(w, r, err); return }
//	httpapi.WriteJSON(w, r, http.StatusCreated, n)
type API struct {
	// Name prefixes the service's log messages and names its Bearer
	// realm ("novaos-" + Name).
	Name string
	// Logger receives refused requests (debug) and unexpected errors
	// (error); nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body Decode reads (default
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Auth establishes the caller of the requests Protect selects; nil
	// lets every request through anonymous.
	Auth Authenticator
	// Protect selects the requests that need a caller (nil: all of them).
	Protect func(*http.Request) bool
	// ProblemFor maps the service's own errors to problems: the one place
	// its errors become statuses. It returns nil for an error it does not
	// know; Fail then answers the plumbing's errors (a *problem.Problem,
	// ErrUnauthenticated, ErrForbidden) and anything else with a logged
	// 500. It may also map ErrUnauthenticated and ErrForbidden to a
	// problem of its own, with its own words.
	ProblemFor func(error) *problem.Problem
}

func (a *API) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

// Handler authenticates the requests Protect selects and serves them with
// h, the Caller in their context (CallerFrom); a request the Authenticator
// refuses is answered with its problem.
func (a *API) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Auth != nil && (a.Protect == nil || a.Protect(r)) {
			c, err := a.Auth.Authenticate(r)
			if err != nil {
				if errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrForbidden) {
					// Never a header: a refused credential may be a near miss
					// of a good one.
					a.logger().DebugContext(r.Context(), a.Name+": request refused", "method", r.Method,
						"path", r.URL.Path, "remote", r.RemoteAddr, "reason", err.Error())
				}
				a.Fail(w, r, err)
				return
			}
			r = r.WithContext(WithCaller(r.Context(), c))
		}
		h.ServeHTTP(w, r)
	})
}

// Fail answers r with the problem err stands for (see ProblemFor). A 401
// carries a Bearer challenge.
func (a *API) Fail(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem.Problem
	if a.ProblemFor != nil {
		p = a.ProblemFor(err)
	}
	if p == nil {
		switch {
		case errors.As(err, &p):
		case errors.Is(err, ErrUnauthenticated):
			p = &problem.Problem{Type: problem.TypeUnauthorized, Status: http.StatusUnauthorized, Title: "Unauthorized",
				Detail: "send valid credentials as Authorization: Bearer <token>"}
		case errors.Is(err, ErrForbidden):
			p = &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden"}
		default:
			a.logger().ErrorContext(r.Context(), a.Name+": request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			p = &problem.Problem{Type: problem.TypeInternal, Status: http.StatusInternalServerError, Title: "Internal Server Error"}
		}
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="novaos-`+a.Name+`"`)
	}
	WriteProblem(w, r, p)
}

// Decode reads r's body into v as DecodeJSON does (b.MaxBytes defaults to
// a.MaxBodyBytes), or answers with its problem and returns false.
func (a *API) Decode(w http.ResponseWriter, r *http.Request, v any, b Body) bool {
	if b.MaxBytes <= 0 {
		b.MaxBytes = a.MaxBodyBytes
	}
	if err := DecodeJSON(w, r, v, b); err != nil {
		a.Fail(w, r, err)
		return false
	}
	return true
}

// Methods maps HTTP methods to the handlers of one resource; Route
// serves HEAD with the GET handler.
type Methods map[string]http.HandlerFunc

// routeOrder is the order methods are named in Allow.
var routeOrder = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// Route serves r with the handler of its method, or answers 405 with
// Allow naming the methods there are.
func (a *API) Route(w http.ResponseWriter, r *http.Request, m Methods) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if f, ok := m[method]; ok {
		f(w, r)
		return
	}
	var allow []string
	for _, name := range routeOrder {
		if _, ok := m[name]; ok {
			allow = append(allow, name)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	a.Fail(w, r, &problem.Problem{Type: problem.TypeMethodNotAllowed, Status: http.StatusMethodNotAllowed, Title: "Method Not Allowed",
		Detail: fmt.Sprintf("%s is not allowed here; use %s", r.Method, strings.Join(allow, " or "))})
}

// NotFound answers 404 for a path no route serves; detail may be empty.
func (a *API) NotFound(w http.ResponseWriter, r *http.Request, detail string) {
	a.Fail(w, r, &problem.Problem{Type: problem.TypeNotFound, Status: http.StatusNotFound, Title: "Not Found", Detail: detail})
}
