package runspage

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/webui"
)

// Runs is what the page needs from the execution gateway. Every method
// applies the gateway's own rules for p: a user sees the runs they
// started, a service account and the operator every run of the tenant
// (every tenant for the operator whose Tenant is empty). A run p may not
// see is gateway.ErrNotFound; a refusal is a *problem.Problem (409 for a
// run that has moved on).
type Runs interface {
	// List returns the runs f selects that p may see, newest first.
	List(ctx context.Context, p Principal, f gateway.RunFilter) ([]gateway.Run, error)
	// Get returns the run id.
	Get(ctx context.Context, p Principal, id string) (*gateway.Run, error)
	// Events returns up to limit of the run's events after the sequence
	// after, in order.
	Events(ctx context.Context, p Principal, id string, after int64, limit int) ([]gateway.Event, error)
	// Follow wakes the page's live stream when the run has new events.
	Follow(ctx context.Context, p Principal, id string) (*Feed, error)
	// Cancel ends the run CANCELLED.
	Cancel(ctx context.Context, p Principal, id string) (*gateway.Run, error)
	// Reply answers a WAITING_USER run.
	Reply(ctx context.Context, p Principal, id string, r Reply) (*gateway.Run, error)
}

// Feed is a live stream's subscription to one run's commits.
type Feed struct {
	// Wake receives a value after each commit of the run's events (a
	// wake-up carries no data: a missed one is merged with the next).
	Wake <-chan struct{}
	// Closing is closed when the server shuts down.
	Closing <-chan struct{}
	// Stop releases the subscription.
	Stop func()
}

// Principal is who the page acts for, as Authenticate established it.
type Principal struct {
	// Tenant is the tenant whose runs the page shows; "" only for the
	// operator, who then sees every tenant's.
	Tenant string
	// Actor names the principal on the page and in the log.
	Actor string
	// Admin is the operator (the server's admin token): every tenant,
	// every scope.
	Admin bool
	// Service is a service account: every run of its tenant.
	Service bool
	// UserID is a user token's user, who sees the runs they started.
	UserID string
	// Scopes are the token's scopes.
	Scopes []string
}

// Reply is a person's answer to a paused run: text (Input), a HITL
// action and input (ActionID, InputValue), or a write confirmation's
// decision on its call (CallID, Approved).
type Reply struct {
	Input      string
	ActionID   string
	InputValue string
	CallID     string
	Approved   *bool
}

// Authenticate checks a pasted token: the admin token or a platform
// token. An error wrapping httpapi.ErrUnauthenticated or
// httpapi.ErrForbidden refuses it; any other error is the checker's own
// failure.
type Authenticate func(ctx context.Context, token string) (Principal, error)

// DefaultPath is where the platform mounts the page.
const DefaultPath = "/ui/runs"

// Defaults of Options.
const (
	DefaultPageSize  = 50
	MaxPageSize      = 500
	DefaultKeepAlive = 15 * time.Second
	// DefaultRefresh is how often, in seconds, a page without script
	// reloads a run that has not ended.
	DefaultRefresh = 5
)

// Options configure the page; nil or the zero value means the defaults.
type Options struct {
	Logger *slog.Logger
	// Secure marks the cookies Secure even on a plain-HTTP request (the
	// server's public URL is https behind a proxy that terminates TLS).
	Secure bool
	// PageSize is the number of runs on one page of the list.
	PageSize int
	// Path is where the handler is mounted, without a trailing slash; the
	// handler sees full paths.
	Path string
	// Key signs the CSRF tokens and flash messages (default: random per
	// process).
	Key []byte
	// KeepAlive is the interval of comments on an idle live stream.
	KeepAlive time.Duration
	// Refresh is the meta refresh of a run page without script, seconds.
	Refresh int
}

// handler serves the page. Every field is set by New.
type handler struct {
	runs      Runs
	site      *webui.Site[Principal]
	log       *slog.Logger
	path      string
	pageSize  int
	keepAlive time.Duration
	refresh   int
}

// New returns the page's handler. It panics if runs or auth is nil, a
// programming error caught at start-up.
func New(runs Runs, auth Authenticate, o *Options) http.Handler {
	if runs == nil || auth == nil {
		panic("runspage: New needs Runs and an Authenticate")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	h := &handler{runs: runs, log: opts.Logger, path: strings.TrimRight(opts.Path, "/"), pageSize: opts.PageSize,
		keepAlive: opts.KeepAlive, refresh: opts.Refresh}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.path == "" {
		h.path = DefaultPath
	}
	if h.pageSize <= 0 {
		h.pageSize = DefaultPageSize
	}
	h.pageSize = min(h.pageSize, MaxPageSize)
	if h.keepAlive <= 0 {
		h.keepAlive = DefaultKeepAlive
	}
	if h.refresh <= 0 {
		h.refresh = DefaultRefresh
	}
	h.site = webui.New(webui.Config[Principal]{
		Path: h.path, Cookie: "novaos_runs", Domain: "novaos runs page", Name: "runspage",
		Key: opts.Key, Secure: opts.Secure, Logger: h.log, Authenticate: auth,
		Check: func(p Principal) string {
			switch {
			case p.Admin:
				return ""
			case p.Tenant == "":
				return "Refused: this token names no tenant."
			case !p.Service && p.UserID == "":
				return "Refused: this token names no user and is no service account."
			}
			return ""
		},
		Describe: func(p Principal) []any {
			return []any{"actor", p.Actor, "tenant", p.Tenant, "admin", p.Admin, "service", p.Service}
		},
		Texts: webui.Texts{
			Empty:        "Paste a token.",
			LoginRefused: "Refused: that token is not a platform token of this server or the admin token, or it has expired.",
			NotFromPage:  "the runs page",
		},
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	webui.SetSafetyHeaders(w.Header(), webui.CSPScript)
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
	post := r.Method == http.MethodPost
	if post && !h.site.CheckPost(w, r) {
		return
	}
	switch {
	case strings.HasPrefix(rest, "static/"):
		serveStatic(w, r, strings.TrimPrefix(rest, "static/"))
	case rest == "login":
		if post {
			h.site.Login(w, r, func(status int, msg string) { h.loginForm(w, r, status, msg) })
		} else {
			h.loginForm(w, r, http.StatusOK, "")
		}
	case rest == "logout" && post:
		h.site.Logout(w, r)
	case rest == "" && !post:
		h.site.WithSession(w, r, h.list)
	case rest != "":
		h.run(w, r, rest)
	default:
		webui.Plain(w, http.StatusNotFound, "Not found.")
	}
}

// run routes {id} (GET), {id}/events (GET, the live stream), {id}/cancel
// and {id}/reply (POST).
func (h *handler) run(w http.ResponseWriter, r *http.Request, rest string) {
	seg, action, _ := strings.Cut(rest, "/")
	id, ok := unescape(seg)
	post := r.Method == http.MethodPost
	switch {
	case !ok:
		webui.Plain(w, http.StatusNotFound, "Not found.")
	case action == "" && !post:
		h.site.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) { h.detail(w, r, s, id) })
	case action == "events" && r.Method == http.MethodGet:
		h.stream(w, r, id)
	case action == "cancel" && post:
		h.site.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) { h.cancel(w, r, s, id) })
	case action == "reply" && post:
		h.site.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) { h.reply(w, r, s, id) })
	default:
		webui.Plain(w, http.StatusNotFound, "Not found.")
	}
}

type session = webui.Session[Principal]
