package triage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// Cookie names. The session cookie holds the login's random value and the
// operator's token; the flash cookie carries one message across the
// redirect after a POST.
const (
	sessionCookie = "novaos_gate_session"
	flashCookie   = "novaos_gate_flash"
)

// sessionTTL bounds how long a browser keeps the login; the token's own
// expiry, checked on every request, usually ends it sooner.
const sessionTTL = 12 * time.Hour

var b64 = base64.RawURLEncoding

// session is a logged-in request: who, and the CSRF token its forms carry.
type session struct {
	Principal
	csrf string
}

// withSession authenticates the request's cookie and calls next, or
// sends the browser to the login form. A POST must also carry the
// session's CSRF token.
func (h *handler) withSession(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request, *session)) {
	nonce, token, ok := h.readSession(r)
	if !ok {
		h.toLogin(w, r)
		return
	}
	p, err := h.auth(r.Context(), token)
	switch {
	case err != nil && refused(err):
		h.clearCookie(w, r, sessionCookie)
		h.toLogin(w, r)
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "triage: checking an operator token failed", "err", redact(err, token))
		h.plain(w, http.StatusServiceUnavailable, "The operator token could not be checked just now; try again.")
		return
	case !valid(p):
		h.log.ErrorContext(r.Context(), "triage: Authenticate returned a principal with neither a tenant nor admin rights", "actor", p.Actor)
		h.clearCookie(w, r, sessionCookie)
		h.plain(w, http.StatusForbidden, "Refused: this token names no tenant.")
		return
	}
	s := &session{Principal: p, csrf: h.csrfToken(nonce, token)}
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			h.plain(w, http.StatusRequestEntityTooLarge, "The form could not be read (too large or malformed).")
			return
		}
		if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) {
			h.log.WarnContext(r.Context(), "triage: POST without a valid CSRF token refused", "path", r.URL.Path, "actor", p.Actor)
			h.plain(w, http.StatusForbidden, "Refused: the form's CSRF token is missing or stale. Reload the page and try again.")
			return
		}
	}
	next(w, r, s)
}

// redact keeps the token out of the log should a checker's error quote
// it.
func redact(err error, token string) string {
	return strings.ReplaceAll(err.Error(), token, "[token]")
}

// valid: a non-admin principal must name its tenant, since the empty
// tenant asks the service for every tenant's actions.
func valid(p Principal) bool { return p.Admin || p.Tenant != "" }

// toLogin answers an unauthenticated request: a redirect to the form (303
// so a POST becomes a GET).
func (h *handler) toLogin(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, h.path+"/login", http.StatusSeeOther)
}

func (h *handler) loginForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "login.html", pageData{Title: "Sign in", Base: h.path, Error: msg})
}

// login checks the pasted token and starts a session.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.loginForm(w, r, http.StatusRequestEntityTooLarge, "The form could not be read.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	switch {
	case token == "":
		h.loginForm(w, r, http.StatusBadRequest, "Paste an operator token.")
		return
	case len(token) > maxTokenBytes:
		h.loginForm(w, r, http.StatusBadRequest, "That token is too long to keep in a cookie.")
		return
	}
	p, err := h.auth(r.Context(), token)
	switch {
	case err != nil && refused(err):
		// The reason stays in the log: it may say which check a near miss
		// failed. Neither says anything about the token itself.
		h.log.InfoContext(r.Context(), "triage: operator token refused at login", "err", redact(err, token))
		h.loginForm(w, r, http.StatusUnauthorized, "Refused: that token is not an operator token (scope gate:operate) or the admin token, or it has expired.")
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "triage: checking an operator token failed", "err", redact(err, token))
		h.loginForm(w, r, http.StatusServiceUnavailable, "The token could not be checked just now; try again.")
		return
	case !valid(p):
		h.log.ErrorContext(r.Context(), "triage: Authenticate returned a principal with neither a tenant nor admin rights", "actor", p.Actor)
		h.loginForm(w, r, http.StatusForbidden, "Refused: this token names no tenant.")
		return
	}
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	h.setCookie(w, r, sessionCookie, b64.EncodeToString(nonce)+"."+b64.EncodeToString([]byte(token)), sessionTTL)
	h.log.InfoContext(r.Context(), "triage: operator signed in", "actor", p.Actor, "tenant", p.Tenant, "admin", p.Admin)
	http.Redirect(w, r, h.path, http.StatusSeeOther)
}

// logout ends the session. It needs the CSRF token so another site cannot
// sign the operator out.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	h.withSession(w, r, func(w http.ResponseWriter, r *http.Request, s *session) {
		h.clearCookie(w, r, sessionCookie)
		h.log.InfoContext(r.Context(), "triage: operator signed out", "actor", s.Actor)
		http.Redirect(w, r, h.path+"/login", http.StatusSeeOther)
	})
}

// readSession returns the login's random value and the token of the
// session cookie.
func (h *handler) readSession(r *http.Request) (nonce, token string, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", "", false
	}
	n, t, ok := strings.Cut(c.Value, ".")
	if !ok {
		return "", "", false
	}
	tb, err := b64.DecodeString(t)
	if err != nil || len(tb) == 0 || len(n) == 0 {
		return "", "", false
	}
	return n, string(tb), true
}

// csrfToken binds a form to one login: the HMAC of the login's random
// value and of the token's hash, so neither a new login nor another
// operator's cookie makes an old form valid.
func (h *handler) csrfToken(nonce, token string) string {
	th := sha256.Sum256([]byte(token))
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("novaos gate triage csrf\x00"))
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write(th[:])
	return b64.EncodeToString(m.Sum(nil))
}

func (h *handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: h.path, MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure || r.TLS != nil,
	})
}

func (h *handler) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: h.path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure || r.TLS != nil,
	})
}

// flash is a message shown once on the list after a POST.
type flash struct {
	OK  bool
	Msg string
}

// setFlash signs the message so a cookie planted by a sibling subdomain
// cannot put words on the page.
func (h *handler) setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	kind := "e"
	if f.OK {
		kind = "o"
	}
	body := kind + f.Msg
	h.setCookie(w, r, flashCookie, b64.EncodeToString([]byte(body))+"."+h.sign("flash", body), time.Minute)
}

// takeFlash reads and clears the flash message.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) (flash, bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return flash{}, false
	}
	h.clearCookie(w, r, flashCookie)
	enc, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return flash{}, false
	}
	b, err := b64.DecodeString(enc)
	if err != nil || len(b) == 0 || !hmac.Equal([]byte(sig), []byte(h.sign("flash", string(b)))) {
		return flash{}, false
	}
	return flash{OK: b[0] == 'o', Msg: string(b[1:])}, true
}

func (h *handler) sign(purpose, s string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("novaos gate triage " + purpose + "\x00"))
	m.Write([]byte(s))
	return b64.EncodeToString(m.Sum(nil))
}
