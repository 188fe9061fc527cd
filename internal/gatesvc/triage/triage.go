package triage

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/httpapi"
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

// Limits of what the page reads from a request.
const (
	maxFormBytes  = 64 << 10
	maxTokenBytes = 3 << 10 // a cookie holds about 4 KiB with its name and attributes
	maxNoteBytes  = 4 << 10 // gate.DecodeOperatorDecision's limit
)

// handler serves the page. It is safe for concurrent use: every field is
// set by New and only read afterwards.
type handler struct {
	op       Operator
	auth     Authenticate
	log      *slog.Logger
	now      func() time.Time
	secure   bool
	pageSize int
	path     string
	key      []byte
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
	h := &handler{op: op, auth: auth, log: opts.Logger, now: opts.Now, secure: opts.Secure,
		pageSize: opts.PageSize, path: strings.TrimRight(opts.Path, "/"), key: opts.Key}
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
	if len(h.key) == 0 {
		h.key = make([]byte, 32)
		if _, err := io.ReadFull(rand.Reader, h.key); err != nil {
			panic("triage: no randomness for the CSRF key: " + err.Error())
		}
	}
	h.static = staticHandler()
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSafetyHeaders(w.Header())
	// Routing reads the escaped path so an id holding a slash (%2F) stays
	// one segment.
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), h.path)
	if !ok || (rest != "" && rest[0] != '/') {
		h.plain(w, http.StatusNotFound, "Not found.")
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		h.plain(w, http.StatusMethodNotAllowed, "Method not allowed.")
		return
	}
	if r.Method == http.MethodPost {
		if reason := crossSite(r); reason != "" {
			h.log.WarnContext(r.Context(), "triage: cross-site POST refused", "path", r.URL.Path, "why", reason)
			h.plain(w, http.StatusForbidden, "Refused: this form was not sent from the operator page ("+reason+").")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	switch {
	case rest == "static/triage.css":
		h.static.ServeHTTP(w, r)
	case rest == "login":
		if r.Method == http.MethodPost {
			h.login(w, r)
		} else {
			h.loginForm(w, r, http.StatusOK, "")
		}
	case rest == "logout" && r.Method == http.MethodPost:
		h.logout(w, r)
	case rest == "" && r.Method != http.MethodPost:
		h.withSession(w, r, h.list)
	case strings.HasPrefix(rest, "actions/"):
		h.action(w, r, strings.TrimPrefix(rest, "actions/"))
	default:
		h.plain(w, http.StatusNotFound, "Not found.")
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
			h.plain(w, http.StatusNotFound, "Not found.")
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
		h.plain(w, http.StatusNotFound, "Not found.")
	}
}

// setSafetyHeaders: no script at all, styles from the page only, forms
// posted to the page only, never framed, never cached (the pages show
// what agents were about to do), and an Origin on same-origin POSTs (a
// no-referrer policy would make browsers send Origin: null).
func setSafetyHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// plain answers with a short text message: used where no page can be
// rendered, and for refusals.
func (h *handler) plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// crossSite says why a POST did not come from the page itself, or "".
// Browsers send Origin on every POST; a request without one (an old
// browser, a script) still needs the CSRF token of a logged-in page.
func crossSite(r *http.Request) string {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return "sent from another site"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if !sameOrigin(origin, r.Host) {
		return "its origin is not this page's"
	}
	return ""
}

// sameOrigin reports whether origin (scheme://host[:port]) names the host
// and port the request was sent to. The scheme is not compared: behind a
// proxy that terminates TLS the page cannot tell which one the browser
// used.
func sameOrigin(origin, host string) bool {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return false
	}
	oh, op := splitHostPort(rest)
	if op == "" {
		op = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	hh, hp := splitHostPort(host)
	if hh == "" || !strings.EqualFold(oh, hh) {
		return false
	}
	if hp == "" {
		// A Host without a port came to port 80 or 443.
		return op == "80" || op == "443"
	}
	return hp == op
}

func splitHostPort(hp string) (host, port string) {
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", ""
		}
		host, rest := hp[:end+1], hp[end+1:]
		return host, strings.TrimPrefix(rest, ":")
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		return hp[:i], hp[i+1:]
	}
	return hp, ""
}

// refused reports whether err is Authenticate's refusal of a token, as
// opposed to a failure to check it.
func refused(err error) bool {
	return errors.Is(err, httpapi.ErrUnauthenticated) || errors.Is(err, httpapi.ErrForbidden)
}
