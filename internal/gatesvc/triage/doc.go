// Package triage is the governance gate's operator page, served at /ui/gate.
//
// It is a server-rendered list of the held and unconfirmed actions of the
// operator's tenant (every tenant for the admin), a detail page with
// everything a reviewer needs to decide one (context, evidence with its
// provenance, the agent's reasoning, matched rules and aggregates, the
// judge's answer, fingerprint, hold and claim), and forms that approve,
// deny, confirm executed or confirm not executed. The list reloads itself
// every 30 seconds; the detail page does not, so a note being typed is not
// lost.
//
// The page needs no JavaScript and no build step: html/template pages and
// one stylesheet, embedded. It talks to the gate service through Operator
// and checks operator tokens through Authenticate:
//
//	h := triage.New(svc, func(ctx context.Context, tok string) (triage.Principal, error) {
//		return checkOperatorToken(ctx, tok) // gate:operate, or the admin token
//	}, &triage.Options{Logger: log})
//	mux.Handle("/ui/gate", h)
//	mux.Handle("/ui/gate/", h)
//
// # Safety
//
// Everything an agent submitted is attacker-controlled text and is only
// ever written through html/template's escaping; a Content-Security-Policy
// that allows no script backs that up.
//
// The operator pastes a token into the login form. It is checked with
// Authenticate, then kept in an HttpOnly, SameSite=Strict cookie scoped to
// the page's path (Secure over TLS, or always with Options.Secure), and
// checked again on every request, so a revoked token stops working at
// once. The token is never rendered or logged.
//
// Every POST (login, logout, decisions) must come from the page itself:
// its Origin, when the browser sends one, must name the host and port
// the request was sent to (the scheme is not compared: behind a proxy
// that terminates TLS the page cannot know it), Sec-Fetch-Site must not
// say cross-site or same-site, and, once logged in, the form must carry a CSRF token: an
// HMAC, under a key of the handler's, of a random value drawn at login and
// of the session token. The platform's httpapi.Guard stands in front of
// the page as in front of every service (Host checks against DNS
// rebinding, the server-wide Origin rule, body limits); the page's own
// rule is stricter, since a CORS-listed origin may call the API but must
// not drive the operator's page.
//
// The sign-in, the session cookie, the CSRF token and the Origin and
// Sec-Fetch-Site checks are package webui's, shared with the runs page.
//
// Errors the service returns for a decision (gate.ErrNotFound,
// gate.ErrConflict: the action is no longer held) come back to the
// operator as a message on the list, never as a 500.
//
// Package triagetest drives the page in headless Chromium for tests here
// and end to end.
package triage
