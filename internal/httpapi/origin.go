package httpapi

import (
	"net/http"
	"strings"
)

// OwnOrigin reports whether origin (a request's Origin header) is the
// server's own: http or https on one of the names the Guard serving r
// accepts writes for (its listen address, the public URL's host and the
// allowed hosts), or, for a request no Guard served, on r's Host. The
// CORS origins are left out: it is the rule for a connection no page of
// another site may open at all, a WebSocket upgrade, which CORS does not
// govern and the Guard lets through as a GET.
func OwnOrigin(r *http.Request, origin string) bool {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return false
	}
	host, port, ok := splitHost(rest, defaultPort(scheme))
	if !ok {
		return false
	}
	if s, ok := r.Context().Value(siteKey{}).(*site); ok {
		for _, p := range s.names[host] {
			if p == anyPort || p == port {
				return true
			}
		}
		return false
	}
	h, p, ok := splitHost(r.Host, defaultPort(scheme))
	return ok && h == host && p == port
}
