package registry

import (
	"net/http"
	"net/netip"
	"strings"

	"novaos.dev/novaos/registry"
)

// WriteMode says who may change the registry through the API.
type WriteMode int

const (
	// WritesLoopbackOnly: no admin token is configured; writes are
	// accepted from loopback peers only.
	WritesLoopbackOnly WriteMode = iota
	// WritesNeedToken: writes need the admin token, from any peer.
	WritesNeedToken
)

func (m WriteMode) String() string {
	if m == WritesNeedToken {
		return "admin-token"
	}
	return "loopback-only"
}

// WriteMode is the access rule the Handler applies to writes.
func (s *Service) WriteMode() WriteMode {
	if s.opts.AdminToken.IsZero() {
		return WritesLoopbackOnly
	}
	return WritesNeedToken
}

// isWrite reports whether method may change the registry: anything but
// GET, HEAD and OPTIONS, so a method the API adds later is guarded too.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// authorize applies the write access rules to r, or answers with a
// problem and returns false.
func (h handler) authorize(w http.ResponseWriter, r *http.Request) bool {
	if !isWrite(r.Method) {
		return true
	}
	log := h.s.opts.Logger
	if h.s.WriteMode() == WritesNeedToken {
		if presented, ok := bearerToken(r.Header.Get("Authorization")); ok && h.s.opts.AdminToken.Equal(presented) {
			return true
		}
		// Never the header: a wrong token may be a near miss of the right one.
		log.DebugContext(r.Context(), "registry: write without the admin token refused",
			"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="novaos-registry"`)
		h.problem(w, r, &registry.Problem{Type: registry.ProblemUnauthorized, Status: http.StatusUnauthorized, Title: "Unauthorized",
			Detail: "changing the registry needs the server's admin token: send it as Authorization: Bearer <token>"})
		return false
	}
	if isLoopbackPeer(r.RemoteAddr) {
		return true
	}
	log.DebugContext(r.Context(), "registry: write from a remote peer refused (no admin token configured)",
		"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	h.problem(w, r, &registry.Problem{Type: registry.ProblemWriteForbidden, Status: http.StatusForbidden, Title: "Registry Write Forbidden",
		Detail: "this server has no admin token, so it accepts registry changes from its own machine only; " +
			"give it one (novaos serve --admin-token-file FILE, or NOVAOS_ADMIN_TOKEN) and send it as Authorization: Bearer <token>"})
	return false
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header value (the scheme is case-insensitive, RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// isLoopbackPeer reports whether remoteAddr (http.Request.RemoteAddr) is
// on 127.0.0.0/8 or ::1 (also as an IPv4-mapped address).
func isLoopbackPeer(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	return ap.Addr().Unmap().IsLoopback()
}
