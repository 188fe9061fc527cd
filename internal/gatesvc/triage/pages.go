package triage

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/webui"
)

// listRefresh is how often the list reloads itself, in seconds.
const listRefresh = 30

// listed are the states an operator acts on.
var listed = []gate.ActionState{gate.ActionHeld, gate.ActionUnconfirmed}

// pageData is what every template gets.
type pageData struct {
	Title string
	Base  string // the page's path, for links and form actions
	Error string // the login form's message
	// Refresh reloads the page after this many seconds (the list, so new
	// holds show and the time left stays true without script).
	Refresh int
	// Set on pages behind the login.
	Operator *Principal
	CSRF     string
	Flash    *flash

	List   *listView
	Detail *detailView
}

func (h *handler) data(s *session, title string) pageData {
	return pageData{Title: title, Base: h.path, Operator: &s.Principal, CSRF: s.CSRF}
}

// list renders the held and unconfirmed actions, oldest first.
func (h *handler) list(w http.ResponseWriter, r *http.Request, s *session) {
	after := r.URL.Query().Get("after")
	if len(after) > 1024 {
		webui.Plain(w, http.StatusBadRequest, "The page token is too long.")
		return
	}
	l, err := h.op.List(r.Context(), tenantOf(s), listed, after, h.pageSize)
	if err != nil {
		h.log.ErrorContext(r.Context(), "triage: listing actions failed", "err", err, "actor", s.Principal.Actor)
		webui.Plain(w, http.StatusInternalServerError, "The actions could not be listed; see the server log.")
		return
	}
	d := h.data(s, "Held and unconfirmed actions")
	if f, ok := h.site.TakeFlash(w, r); ok {
		d.Flash = &f
	}
	d.List = h.listView(l, after != "", s.Principal.Admin)
	d.Refresh = listRefresh
	h.render(w, r, http.StatusOK, "list.html", d)
}

// detail renders one action.
func (h *handler) detail(w http.ResponseWriter, r *http.Request, s *session, sessionID, actionID string) {
	tenant := tenantOf(s)
	if s.Principal.Admin {
		tenant = r.URL.Query().Get("tenant")
	}
	rec, err := h.op.Get(r.Context(), tenant, sessionID, actionID)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		webui.Plain(w, http.StatusNotFound, "No such action: it may belong to another tenant, or the link is wrong.")
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "triage: reading an action failed", "err", err, "session_id", sessionID, "action_id", actionID)
		webui.Plain(w, http.StatusInternalServerError, "The action could not be read; see the server log.")
		return
	}
	d := h.data(s, "Action "+rec.ActionID)
	d.Detail = h.detailView(rec)
	h.render(w, r, http.StatusOK, "detail.html", d)
}

// decisions maps the form's buttons to the operator decisions; anything
// else is refused.
var decisions = map[string]gate.OperatorDecisionKind{
	string(gate.DecisionApprove):            gate.DecisionApprove,
	string(gate.DecisionDeny):               gate.DecisionDeny,
	string(gate.DecisionConfirmExecuted):    gate.DecisionConfirmExecuted,
	string(gate.DecisionConfirmNotExecuted): gate.DecisionConfirmNotExecuted,
}

// decide applies an operator decision and goes back to the list with a
// message saying what happened.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, s *session, sessionID, actionID string) {
	kind, ok := decisions[r.PostForm.Get("decision")]
	if !ok {
		webui.Plain(w, http.StatusBadRequest, "Unknown decision.")
		return
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	tenant := tenantOf(s)
	if s.Principal.Admin {
		tenant = r.PostForm.Get("tenant")
	}
	back := func(f flash) {
		h.site.SetFlash(w, r, f)
		http.Redirect(w, r, h.path, http.StatusSeeOther)
	}
	name := shorten(actionID, 120)
	if len(note) > maxNoteBytes {
		back(flash{Msg: fmt.Sprintf("Not recorded: the note on %s is longer than 4 KiB.", name)})
		return
	}
	rec, err := h.op.Decide(r.Context(), tenant, sessionID, actionID, gate.OperatorDecision{Decision: kind, Note: note}, s.Principal.Actor)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		back(flash{Msg: fmt.Sprintf("Not recorded: action %s was not found.", name)})
	case errors.Is(err, gate.ErrConflict):
		back(flash{Msg: fmt.Sprintf("Not recorded: action %s can no longer be %s; it was decided, claimed or expired in the meantime.", name, pastTense[kind])})
	case err != nil:
		h.log.ErrorContext(r.Context(), "triage: recording a decision failed", "err", err, "decision", kind,
			"tenant", tenant, "session_id", sessionID, "action_id", actionID, "actor", s.Principal.Actor)
		back(flash{Msg: fmt.Sprintf("Not recorded: the decision on %s failed (see the server log).", name)})
	default:
		h.log.InfoContext(r.Context(), "triage: operator decision", "decision", kind, "tenant", tenant,
			"session_id", sessionID, "action_id", actionID, "actor", s.Principal.Actor, "state", rec.State)
		back(flash{OK: true, Msg: fmt.Sprintf("Action %s %s.", name, pastTense[kind])})
	}
}

var pastTense = map[gate.OperatorDecisionKind]string{
	gate.DecisionApprove:            "approved",
	gate.DecisionDeny:               "denied",
	gate.DecisionConfirmExecuted:    "confirmed as executed",
	gate.DecisionConfirmNotExecuted: "confirmed as not executed",
}

// render executes a template into a buffer first, so a template error is a
// logged 500 rather than half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, d); err != nil {
		h.log.ErrorContext(r.Context(), "triage: rendering a page failed", "page", name, "err", err)
		webui.Plain(w, http.StatusInternalServerError, "The page could not be rendered; see the server log.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// actionPath is the detail page's path of an action, ids escaped as path
// segments.
func (h *handler) actionPath(tenant, sessionID, actionID string, admin bool) string {
	p := h.path + "/actions/" + url.PathEscape(sessionID) + "/" + url.PathEscape(actionID)
	if admin {
		p += "?tenant=" + url.QueryEscape(tenant)
	}
	return p
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
