package runspage

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runsse"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/webui"
	"novaos.dev/novaos/problem"
)

// listRefresh is how often the list reloads itself, in seconds.
const listRefresh = 30

// Bounds of what a run page shows and reads.
const (
	maxEventsShown = 2000 // events rendered on a run page; the live stream brings the rest
	maxTenantBytes = 128
)

// pageData is what every template gets.
type pageData struct {
	Title string
	Base  string // the page's path, for links and form actions
	Error string // the login form's message
	// Refresh reloads the page after this many seconds (the list).
	Refresh int
	// NoScriptRefresh reloads a run that has not ended when script is
	// off.
	NoScriptRefresh int
	// Script loads the page's script (a run page).
	Script bool
	// Set on pages behind the login.
	User  *Principal
	CSRF  string
	Flash *webui.Flash

	List *listView
	Run  *runView
}

func (h *handler) data(s *session, title string) pageData {
	return pageData{Title: title, Base: h.path, User: &s.Principal, CSRF: s.CSRF}
}

func (h *handler) loginForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "login.html", pageData{Title: "Sign in", Base: h.path, Error: msg})
}

// list renders the runs the session may see, newest first, a page at a
// time, optionally of one status (and, for the operator, one tenant).
func (h *handler) list(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := s.Principal
	f := gateway.RunFilter{Limit: h.pageSize}
	status := q.Get("status")
	if status != "" {
		if !gateway.Status(status).Valid() {
			webui.Plain(w, http.StatusBadRequest, "Unknown status.")
			return
		}
		f.Statuses = []gateway.Status{gateway.Status(status)}
	}
	if p.Admin {
		p.Tenant = strings.TrimSpace(q.Get("tenant"))
		if len(p.Tenant) > maxTenantBytes {
			webui.Plain(w, http.StatusBadRequest, "The tenant is too long.")
			return
		}
	}
	after := q.Get("after")
	if after != "" {
		key, err := httpapi.ParsePageToken(after, func(k string) bool { _, _, ok := splitCursor(k); return ok })
		if err != nil {
			webui.Plain(w, http.StatusBadRequest, "The page token is not one this page issued.")
			return
		}
		f.AfterCreated, f.AfterID, _ = splitCursor(key)
	}
	runs, err := h.runs.List(r.Context(), p, f)
	if err != nil {
		status, msg := h.failure(r, err, "listing runs")
		webui.Plain(w, status, msg)
		return
	}
	d := h.data(s, "Runs")
	if fl, ok := h.site.TakeFlash(w, r); ok {
		d.Flash = &fl
	}
	d.List = h.listView(runs, f, s.Principal, p.Tenant, status, after != "")
	d.Refresh = listRefresh
	h.render(w, r, http.StatusOK, "list.html", d)
}

// cursor is the list's page token key: the last run's creation time and
// id, as the gateway's API pages runs.
func cursor(run gateway.Run) string {
	return httpapi.PageToken(strconv.FormatInt(run.CreatedAt.UnixMicro(), 10) + "/" + run.ID)
}

func splitCursor(k string) (time.Time, string, bool) {
	us, id, ok := strings.Cut(k, "/")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// detail renders one run: its fields, artifacts, events so far, the
// cancel button and the reply box.
func (h *handler) detail(w http.ResponseWriter, r *http.Request, s *session, id string) {
	run, err := h.runs.Get(r.Context(), s.Principal, id)
	if err != nil {
		status, msg := h.failure(r, err, "reading a run")
		webui.Plain(w, status, msg)
		return
	}
	var events []gateway.Event
	for after := int64(0); len(events) < maxEventsShown; {
		page, err := h.runs.Events(r.Context(), s.Principal, run.ID, after, runsse.Page)
		if err != nil {
			status, msg := h.failure(r, err, "reading a run's events")
			webui.Plain(w, status, msg)
			return
		}
		events = append(events, page...)
		if len(page) < runsse.Page {
			break
		}
		after = page[len(page)-1].Sequence
	}
	d := h.data(s, "Run "+run.ID)
	if fl, ok := h.site.TakeFlash(w, r); ok {
		d.Flash = &fl
	}
	d.Run = h.runView(run, events)
	d.Script = true
	if !run.Status.Terminal() && run.Status != gateway.StatusWaitingUser {
		// Not while the run waits: a reload would lose a typed answer.
		d.NoScriptRefresh = h.refresh
	}
	h.render(w, r, http.StatusOK, "run.html", d)
}

// cancel ends a run that has not ended, and goes back to its page with a
// message saying what happened.
func (h *handler) cancel(w http.ResponseWriter, r *http.Request, s *session, id string) {
	run, err := h.runs.Cancel(r.Context(), s.Principal, id)
	if err != nil {
		h.back(w, r, id, err, "Not cancelled", "cancelling a run")
		return
	}
	h.log.InfoContext(r.Context(), "runspage: run cancelled", "run_id", run.ID, "actor", s.Principal.Actor)
	h.site.SetFlash(w, r, webui.Flash{OK: true, Msg: "Run cancelled."})
	http.Redirect(w, r, h.runPath(id), http.StatusSeeOther)
}

// reply answers a paused run with the reply box's form.
func (h *handler) reply(w http.ResponseWriter, r *http.Request, s *session, id string) {
	f := r.PostForm
	rep := Reply{Input: f.Get("input"), ActionID: f.Get("action_id"), InputValue: f.Get("input_value"), CallID: f.Get("call_id")}
	switch v := f.Get("approved"); v {
	case "":
	case "true", "false":
		b := v == "true"
		rep.Approved = &b
	default:
		h.site.SetFlash(w, r, webui.Flash{Msg: "Not sent: approved is true or false."})
		http.Redirect(w, r, h.runPath(id), http.StatusSeeOther)
		return
	}
	run, err := h.runs.Reply(r.Context(), s.Principal, id, rep)
	if err != nil {
		h.back(w, r, id, err, "Not sent", "answering a run")
		return
	}
	h.log.InfoContext(r.Context(), "runspage: run answered", "run_id", run.ID, "actor", s.Principal.Actor)
	h.site.SetFlash(w, r, webui.Flash{OK: true, Msg: "Answer sent; the run continues."})
	http.Redirect(w, r, h.runPath(id), http.StatusSeeOther)
}

// back answers a failed POST with a message on the run's page (on the
// list when the run cannot be read).
func (h *handler) back(w http.ResponseWriter, r *http.Request, id string, err error, prefix, doing string) {
	status, msg := h.failure(r, err, doing)
	h.site.SetFlash(w, r, webui.Flash{Msg: prefix + ": " + msg})
	to := h.runPath(id)
	if status == http.StatusNotFound {
		to = h.path
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// failure turns an error of Runs into a status and a message for the
// person: the gateway's own explanation for a refusal, a plain sentence
// otherwise (the detail goes to the log).
func (h *handler) failure(r *http.Request, err error, doing string) (int, string) {
	var p *problem.Problem
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		return http.StatusNotFound, "No such run that you may see: it may belong to another user or tenant, or the link is wrong."
	case errors.As(err, &p) && p.Status >= 400 && p.Status < 500:
		msg := p.Detail
		if msg == "" {
			msg = p.Title
		}
		return p.Status, sentence(msg)
	}
	h.log.ErrorContext(r.Context(), "runspage: "+doing+" failed", "err", err)
	return http.StatusInternalServerError, "The gateway could not do that just now; see the server log."
}

// sentence starts msg with a capital and ends it with a full stop.
func sentence(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return msg
	}
	if c := msg[0]; c >= 'a' && c <= 'z' {
		msg = string(c-'a'+'A') + msg[1:]
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// render executes a template into a buffer first, so a template error is
// a logged 500 rather than half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, d); err != nil {
		h.log.ErrorContext(r.Context(), "runspage: rendering a page failed", "page", name, "err", err)
		webui.Plain(w, http.StatusInternalServerError, "The page could not be rendered; see the server log.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// runPath is a run's page, its id escaped as a path segment.
func (h *handler) runPath(id string) string { return h.path + "/" + url.PathEscape(id) }

// unescape reads one escaped path segment; false for an empty or
// malformed one.
func unescape(seg string) (string, bool) {
	u, err := url.PathUnescape(seg)
	if err != nil || u == "" || len(u) > 256 {
		return "", false
	}
	return u, true
}
