package triage

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/webui"
)

// Operator is what the page needs from the gate service. tenant "" means every tenant (admin).
type Operator interface {
	List(ctx context.Context, tenant string, states []gate.ActionState, after string, limit int) (gate.ActionList, error)
	Get(ctx context.Context, tenant, sessionID, actionID string) (gate.ActionRecord, error)
	Decide(ctx context.Context, tenant, sessionID, actionID string, d gate.OperatorDecision, actor string) (gate.ActionRecord, error)
}

// Principal is an authenticated operator.
type Principal struct {
	Tenant string
	Actor  string
	Admin  bool
}

// Authenticate checks an operator credential (a platform token with scope
// gate:operate, or the server's admin token). An error wrapping
// httpapi.ErrUnauthenticated or httpapi.ErrForbidden refuses the token;
// any other error is the checker's own failure, logged and answered 500.
type Authenticate func(ctx context.Context, token string) (Principal, error)

// DefaultPath is where the platform mounts the page.
const DefaultPath = "/ui/gate"

// Default and largest number of actions on one page of the list.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// Options configure the page; nil or the zero value means the defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock for the hold's time left (default time.Now).
	Now func() time.Time
	// Secure marks the cookies Secure even on a plain-HTTP request: set it
	// behind a proxy that terminates TLS. Requests over TLS get Secure
	// cookies either way.
	Secure bool
	// PageSize is the number of actions a list page asks for (default
	// DefaultPageSize, at most MaxPageSize).
	PageSize int
	// Path is where the handler is mounted (default DefaultPath), without
	// a trailing slash; the handler sees full paths, not stripped ones.
	Path string
	// Key signs the CSRF tokens and flash messages. Default: 32 random
	// bytes drawn by New, so forms rendered before a restart are refused
	// after it (the operator reloads the page; the login survives).
	Key []byte
}

// maxNoteBytes bounds a decision's note: gate.DecodeOperatorDecision's
// limit.
const maxNoteBytes = 4 << 10

// handler serves the page. It is safe for concurrent use: every field is
// set by New and only read afterwards.
type handler struct {
	op       Operator
	site     *webui.Site[Principal]
	log      *slog.Logger
	now      func() time.Time
	pageSize int
	path     string
	static   http.Handler
}

// New returns the page's handler. It panics if op or auth is nil, a
// programming error caught at start-up.
func New(op Operator, auth Authenticate, o *Options) http.Handler {
	if op == nil || auth == nil {
		panic("triage: New needs an Operator and an Authenticate")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	h := &handler{op: op, log: opts.Logger, now: opts.Now,
		pageSize: opts.PageSize, path: strings.TrimRight(opts.Path, "/")}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.pageSize <= 0 {
		h.pageSize = DefaultPageSize
	}
	h.pageSize = min(h.pageSize, MaxPageSize)
	if h.path == "" {
		h.path = DefaultPath
	}
	h.site = newSite(h, auth, opts.Key, opts.Secure)
	h.static = staticHandler()
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	webui.SetSafetyHeaders(w.Header(), webui.CSPNoScript)
	// Routing reads the escaped path so an id holding a slash (%2F) stays
	// one segment.
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), h.path)
	if !ok || (rest != "" && rest[0] != '/') {
		webui.Plain(w, http.StatusNotFound, "Not found.")
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		webui.Plain(w, http.StatusMethodNotAllowed, "Method not allowed.")
		return
	}
	if r.Method == http.MethodPost && !h.site.CheckPost(w, r) {
		return
	}
	switch {
	case rest == "static/triage.css":
		h.static.ServeHTTP(w, r)
	case rest == "login":
		if r.Method == http.MethodPost {
			h.site.Login(w, r, func(status int, msg string) { h.loginForm(w, r, status, msg) })
		} else {
			h.loginForm(w, r, http.StatusOK, "")
		}
	case rest == "logout" && r.Method == http.MethodPost:
		h.site.Logout(w, r)
	case rest == "" && r.Method != http.MethodPost:
		h.withSession(w, r, h.list)
	case strings.HasPrefix(rest, "actions/"):
		h.action(w, r, strings.TrimPrefix(rest, "actions/"))
	default:
		webui.Plain(w, http.StatusNotFound, "Not found.")
	}
}

// action routes actions/{session}/{action} (GET) and
// actions/{session}/{action}/decide (POST). Ids are path segments,
// escaped by the links that name them.
func (h *handler) action(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil || u == "" {
			webui.Plain(w, http.StatusNotFound, "Not found.")
			return
		}
		parts[i] = u
	}
	switch {
	case len(parts) == 2 && r.Method != http.MethodPost:
		h.withSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) {
			h.detail(w, r, s, parts[0], parts[1])
		})
	case len(parts) == 3 && parts[2] == "decide" && r.Method == http.MethodPost:
		h.withSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) {
			h.decide(w, r, s, parts[0], parts[1])
		})
	default:
		webui.Plain(w, http.StatusNotFound, "Not found.")
	}
}
