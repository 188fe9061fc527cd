// Package webui holds the sessions and request checks of server-rendered pages.
//
// Its users are the platform's pages: the gate's operator page and the
// runs page.
//
// A page pastes a token into a login form; Site checks it with the
// page's Authenticate, keeps it in an HttpOnly, SameSite=Strict cookie
// scoped to the page's path (Secure over TLS, or always with
// Config.Secure) and checks it again on every request, so a revoked token
// stops working at once. The token is never rendered or logged.
//
// Every POST must come from the page itself: CheckPost refuses a request
// whose Origin, when the browser sends one, does not name the host and
// port it was sent to (the scheme is not compared: behind a proxy that
// terminates TLS the page cannot know it) or whose Sec-Fetch-Site says
// cross-site or same-site; once logged in, WithSession refuses a form
// without the session's CSRF token, an HMAC under the site's key of a
// random value drawn at login and of the token's hash.
//
//	site := webui.New(webui.Config[Principal]{Path: "/ui/runs", Cookie: "novaos_runs",
//		Domain: "novaos runs page", Authenticate: check, Describe: describe})
//	// in ServeHTTP:
//	webui.SetSafetyHeaders(w.Header(), webui.CSPNoScript)
//	if r.Method == http.MethodPost && !site.CheckPost(w, r) {
//		return
//	}
//	site.WithSession(w, r, func(w http.ResponseWriter, r *http.Request, s *webui.Session[Principal]) { … })
//
// Flash messages (one message carried across the redirect after a POST)
// are signed, so a cookie planted by a sibling subdomain cannot put words
// on the page.
package webui
