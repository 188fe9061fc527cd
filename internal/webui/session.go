package webui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// SessionTTL bounds how long a browser keeps a login; the token's own
// expiry, checked on every request, usually ends it sooner.
const SessionTTL = 12 * time.Hour

// Limits of what a page reads from a request.
const (
	// MaxFormBytes bounds a POST body.
	MaxFormBytes = 64 << 10
	// MaxTokenBytes is the longest token a login takes: a cookie holds
	// about 4 KiB with its name and attributes.
	MaxTokenBytes = 3 << 10
)

var b64 = base64.RawURLEncoding

// Texts are the messages a Site shows. Empty fields get the defaults,
// which speak of "a token" and "this page".
type Texts struct {
	// Empty answers a login without a token (400).
	Empty string
	// LoginRefused answers a token Authenticate refused at login (401).
	LoginRefused string
	// Unchecked answers when Authenticate failed (503).
	Unchecked string
	// NotFromPage names the page in a refused cross-site POST: "Refused:
	// this form was not sent from <NotFromPage> (<why>)."
	NotFromPage string
}

func (t *Texts) defaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&t.Empty, "Paste a token.")
	def(&t.LoginRefused, "Refused: that token is not valid here, or it has expired.")
	def(&t.Unchecked, "The token could not be checked just now; try again.")
	def(&t.NotFromPage, "this page")
}

// Config describes a page's sessions. Path, Cookie, Domain and
// Authenticate are required.
type Config[P any] struct {
	// Path is where the page is mounted, without a trailing slash: the
	// cookies' path, and the base of the login and home redirects.
	Path string
	// Cookie prefixes the cookies' names: <Cookie>_session, <Cookie>_flash.
	Cookie string
	// Domain separates this page's HMACs from every other page's.
	Domain string
	// Name prefixes the page's log messages.
	Name string
	// Key signs the CSRF tokens and flash messages. Default: 32 random
	// bytes, so forms rendered before a restart are refused after it (the
	// user reloads the page; the login survives).
	Key []byte
	// Secure marks the cookies Secure even on a plain-HTTP request: set it
	// behind a proxy that terminates TLS. Requests over TLS get Secure
	// cookies either way.
	Secure bool
	Logger *slog.Logger
	// Authenticate checks a pasted token. An error wrapping
	// httpapi.ErrUnauthenticated or httpapi.ErrForbidden refuses it; any
	// other error is the checker's own failure.
	Authenticate func(ctx context.Context, token string) (P, error)
	// Check refuses a principal Authenticate returned but the page cannot
	// serve, with the message to show (a checker's bug, logged as an
	// error); "" accepts it. Nil accepts every principal.
	Check func(P) string
	// Describe gives a principal's log attributes (never its token).
	Describe func(P) []any
	Texts    Texts
}

// Site runs a page's logins and sessions. Safe for concurrent use.
type Site[P any] struct {
	c                     Config[P]
	sessionName, flashKey string
	log                   *slog.Logger
}

// Session is a logged-in request: who, and the CSRF token its forms
// carry.
type Session[P any] struct {
	Principal P
	CSRF      string
}

// New returns the site c describes. It panics when a required field is
// missing, a programming error caught at start-up.
func New[P any](c Config[P]) *Site[P] {
	if c.Path == "" || c.Cookie == "" || c.Domain == "" || c.Authenticate == nil {
		panic("webui: New needs a Path, a Cookie, a Domain and an Authenticate")
	}
	c.Path = strings.TrimRight(c.Path, "/")
	c.Texts.defaults()
	if len(c.Key) == 0 {
		c.Key = make([]byte, 32)
		if _, err := io.ReadFull(rand.Reader, c.Key); err != nil {
			panic("webui: no randomness for the CSRF key: " + err.Error())
		}
	}
	if c.Describe == nil {
		c.Describe = func(P) []any { return nil }
	}
	if c.Name == "" {
		c.Name = "webui"
	}
	s := &Site[P]{c: c, sessionName: c.Cookie + "_session", flashKey: c.Cookie + "_flash", log: c.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Path is where the page is mounted.
func (s *Site[P]) Path() string { return s.c.Path }

// CheckPost refuses a POST that did not come from the page itself and
// bounds its body; false means it answered.
func (s *Site[P]) CheckPost(w http.ResponseWriter, r *http.Request) bool {
	if reason := CrossSite(r); reason != "" {
		s.log.WarnContext(r.Context(), s.c.Name+": cross-site POST refused", "path", r.URL.Path, "why", reason)
		Plain(w, http.StatusForbidden, "Refused: this form was not sent from "+s.c.Texts.NotFromPage+" ("+reason+").")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	return true
}

// WithSession authenticates the request's cookie and calls next, or
// sends the browser to the login form. A POST must also carry the
// session's CSRF token in its form field "csrf".
func (s *Site[P]) WithSession(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request, *Session[P])) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			Plain(w, http.StatusRequestEntityTooLarge, "The form could not be read (too large or malformed).")
			return
		}
		if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(sess.CSRF)) {
			s.log.WarnContext(r.Context(), s.c.Name+": POST without a valid CSRF token refused",
				append([]any{"path", r.URL.Path}, s.c.Describe(sess.Principal)...)...)
			Plain(w, http.StatusForbidden, "Refused: the form's CSRF token is missing or stale. Reload the page and try again.")
			return
		}
	}
	next(w, r, sess)
}

// Authenticated returns the session of the request's cookie without
// answering when there is none: for an endpoint that is not a page (an
// event stream), which answers a missing session itself.
func (s *Site[P]) Authenticated(r *http.Request) (*Session[P], error) {
	nonce, token, ok := s.readSession(r)
	if !ok {
		return nil, ErrNoSession
	}
	p, err := s.c.Authenticate(r.Context(), token)
	if err != nil {
		return nil, redacted{err, token}
	}
	if s.c.Check != nil {
		if msg := s.c.Check(p); msg != "" {
			return nil, ErrNoSession
		}
	}
	return &Session[P]{Principal: p, CSRF: s.csrfToken(nonce, token)}, nil
}

// session reads and checks the session cookie, answering (false) when
// there is no usable session.
func (s *Site[P]) session(w http.ResponseWriter, r *http.Request) (*Session[P], bool) {
	nonce, token, ok := s.readSession(r)
	if !ok {
		s.ToLogin(w, r)
		return nil, false
	}
	p, err := s.c.Authenticate(r.Context(), token)
	switch {
	case err != nil && Refused(err):
		s.clearCookie(w, r, s.sessionName)
		s.ToLogin(w, r)
		return nil, false
	case err != nil:
		s.log.ErrorContext(r.Context(), s.c.Name+": checking a token failed", "err", Redact(err, token))
		Plain(w, http.StatusServiceUnavailable, s.c.Texts.Unchecked)
		return nil, false
	}
	if s.c.Check != nil {
		if msg := s.c.Check(p); msg != "" {
			s.log.ErrorContext(r.Context(), s.c.Name+": Authenticate returned a principal the page cannot serve",
				append([]any{"why", msg}, s.c.Describe(p)...)...)
			s.clearCookie(w, r, s.sessionName)
			Plain(w, http.StatusForbidden, msg)
			return nil, false
		}
	}
	return &Session[P]{Principal: p, CSRF: s.csrfToken(nonce, token)}, true
}

// ToLogin answers an unauthenticated request: a redirect to the form (303
// so a POST becomes a GET).
func (s *Site[P]) ToLogin(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, s.c.Path+"/login", http.StatusSeeOther)
}

// Login checks the token of a posted login form and starts a session,
// redirecting to the page's home; on a refusal it calls form with the
// status and the message to show on the form again.
func (s *Site[P]) Login(w http.ResponseWriter, r *http.Request, form func(status int, msg string)) {
	if err := r.ParseForm(); err != nil {
		form(http.StatusRequestEntityTooLarge, "The form could not be read.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	switch {
	case token == "":
		form(http.StatusBadRequest, s.c.Texts.Empty)
		return
	case len(token) > MaxTokenBytes:
		form(http.StatusBadRequest, "That token is too long to keep in a cookie.")
		return
	}
	p, err := s.c.Authenticate(r.Context(), token)
	switch {
	case err != nil && Refused(err):
		// The reason stays in the log: it may say which check a near miss
		// failed. Neither says anything about the token itself.
		s.log.InfoContext(r.Context(), s.c.Name+": token refused at login", "err", Redact(err, token))
		form(http.StatusUnauthorized, s.c.Texts.LoginRefused)
		return
	case err != nil:
		s.log.ErrorContext(r.Context(), s.c.Name+": checking a token failed", "err", Redact(err, token))
		form(http.StatusServiceUnavailable, s.c.Texts.Unchecked)
		return
	}
	if s.c.Check != nil {
		if msg := s.c.Check(p); msg != "" {
			s.log.ErrorContext(r.Context(), s.c.Name+": Authenticate returned a principal the page cannot serve",
				append([]any{"why", msg}, s.c.Describe(p)...)...)
			form(http.StatusForbidden, msg)
			return
		}
	}
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	s.setCookie(w, r, s.sessionName, b64.EncodeToString(nonce)+"."+b64.EncodeToString([]byte(token)), SessionTTL)
	s.log.InfoContext(r.Context(), s.c.Name+": signed in", s.c.Describe(p)...)
	http.Redirect(w, r, s.c.Path, http.StatusSeeOther)
}

// Logout ends the session. It needs the CSRF token so another site cannot
// sign the user out.
func (s *Site[P]) Logout(w http.ResponseWriter, r *http.Request) {
	s.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, sess *Session[P]) {
		s.clearCookie(w, r, s.sessionName)
		s.log.InfoContext(r.Context(), s.c.Name+": signed out", s.c.Describe(sess.Principal)...)
		http.Redirect(w, r, s.c.Path+"/login", http.StatusSeeOther)
	})
}

// readSession returns the login's random value and the token of the
// session cookie.
func (s *Site[P]) readSession(r *http.Request) (nonce, token string, ok bool) {
	c, err := r.Cookie(s.sessionName)
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
// user's cookie makes an old form valid.
func (s *Site[P]) csrfToken(nonce, token string) string {
	th := sha256.Sum256([]byte(token))
	m := hmac.New(sha256.New, s.c.Key)
	m.Write([]byte(s.c.Domain + " csrf\x00"))
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write(th[:])
	return b64.EncodeToString(m.Sum(nil))
}

func (s *Site[P]) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: s.c.Path, MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.c.Secure || r.TLS != nil,
	})
}

func (s *Site[P]) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: s.c.Path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.c.Secure || r.TLS != nil,
	})
}

// Flash is a message shown once after a POST's redirect.
type Flash struct {
	OK  bool
	Msg string
}

// SetFlash keeps f for the next page, signed.
func (s *Site[P]) SetFlash(w http.ResponseWriter, r *http.Request, f Flash) {
	kind := "e"
	if f.OK {
		kind = "o"
	}
	body := kind + f.Msg
	s.setCookie(w, r, s.flashKey, b64.EncodeToString([]byte(body))+"."+s.sign("flash", body), time.Minute)
}

// TakeFlash reads and clears the flash message.
func (s *Site[P]) TakeFlash(w http.ResponseWriter, r *http.Request) (Flash, bool) {
	c, err := r.Cookie(s.flashKey)
	if err != nil {
		return Flash{}, false
	}
	s.clearCookie(w, r, s.flashKey)
	enc, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return Flash{}, false
	}
	b, err := b64.DecodeString(enc)
	if err != nil || len(b) == 0 || !hmac.Equal([]byte(sig), []byte(s.sign("flash", string(b)))) {
		return Flash{}, false
	}
	return Flash{OK: b[0] == 'o', Msg: string(b[1:])}, true
}

func (s *Site[P]) sign(purpose, v string) string {
	m := hmac.New(sha256.New, s.c.Key)
	m.Write([]byte(s.c.Domain + " " + purpose + "\x00"))
	m.Write([]byte(v))
	return b64.EncodeToString(m.Sum(nil))
}
