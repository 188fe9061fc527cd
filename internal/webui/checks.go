package webui

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"novaos.dev/novaos/internal/httpapi"
)

// Content-Security-Policies of the pages. Both allow styles from the page
// only, forms posted to the page only, and never a frame or a base URL.
const (
	// CSPNoScript allows no script at all.
	CSPNoScript = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	// CSPScript allows the page's own script files (never inline script)
	// and connections back to the page's origin (an EventSource).
	CSPScript = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// SetSafetyHeaders sets the headers every page answer carries: the
// policy csp, never sniffed, never framed, never cached (the pages show
// what agents did), and an Origin on same-origin POSTs (a no-referrer
// policy would make browsers send Origin: null).
func SetSafetyHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// Plain answers with a short text message: used where no page can be
// rendered, and for refusals.
func Plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// CrossSite says why a POST did not come from the page itself, or "".
// Browsers send Origin on every POST; a request without one (an old
// browser, a script) still needs the CSRF token of a logged-in page.
func CrossSite(r *http.Request) string {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return "sent from another site"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if !SameOrigin(origin, r.Host) {
		return "its origin is not this page's"
	}
	return ""
}

// SameOrigin reports whether origin (scheme://host[:port]) names the host
// and port the request was sent to. The scheme is not compared: behind a
// proxy that terminates TLS the page cannot tell which one the browser
// used.
func SameOrigin(origin, host string) bool {
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

// Refused reports whether err is an Authenticate's refusal of a token
// (wrapping httpapi.ErrUnauthenticated or httpapi.ErrForbidden), as
// opposed to a failure to check it.
func Refused(err error) bool {
	return errors.Is(err, httpapi.ErrUnauthenticated) || errors.Is(err, httpapi.ErrForbidden)
}

// Redact keeps the token out of the log should a checker's error quote
// it.
func Redact(err error, token string) string {
	if token == "" {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), token, "[token]")
}
