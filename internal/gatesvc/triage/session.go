package triage

import (
	"net/http"

	"novaos.dev/novaos/internal/webui"
)

// session is a logged-in request: who, and the CSRF token its forms carry.
type session = webui.Session[Principal]

// flash is a message shown once on the list after a POST.
type flash = webui.Flash

// site runs the page's logins, sessions and flash messages.
func newSite(h *handler, auth Authenticate, key []byte, secure bool) *webui.Site[Principal] {
	return webui.New(webui.Config[Principal]{
		Path: h.path, Cookie: "novaos_gate", Domain: "novaos gate triage", Name: "triage",
		Key: key, Secure: secure, Logger: h.log, Authenticate: auth,
		Check: func(p Principal) string {
			// A non-admin principal must name its tenant, since the empty
			// tenant asks the service for every tenant's actions.
			if p.Admin || p.Tenant != "" {
				return ""
			}
			return "Refused: this token names no tenant."
		},
		Describe: func(p Principal) []any { return []any{"actor", p.Actor, "tenant", p.Tenant, "admin", p.Admin} },
		Texts: webui.Texts{
			Empty:        "Paste an operator token.",
			LoginRefused: "Refused: that token is not an operator token (scope gate:operate) or the admin token, or it has expired.",
			Unchecked:    "The operator token could not be checked just now; try again.",
			NotFromPage:  "the operator page",
		},
	})
}

func (h *handler) withSession(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request, *session)) {
	h.site.WithSession(w, r, next)
}

func (h *handler) loginForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "login.html", pageData{Title: "Sign in", Base: h.path, Error: msg})
}

// tenant is the tenant the session's requests name: the principal's, or
// every tenant for the admin.
func tenantOf(s *session) string {
	if s.Principal.Admin {
		return ""
	}
	return s.Principal.Tenant
}
