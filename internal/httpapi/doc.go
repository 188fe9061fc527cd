// Package httpapi is the HTTP plumbing every NovaOS service shares.
//
// A service never re-solves it: the limits that keep hostile and careless
// clients from holding the server, the Host and Origin rules that keep
// browsers from being turned against it, and the pieces of a REST API
// (problems, callers, bodies, paging).
//
// A Guard wraps one listener and the handler behind it:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	g, err := httpapi.NewGuard(&httpapi.Options{
//		Addr:   ln.Addr(),
//		Exempt: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
//	})
//	if err != nil { ... }
//	srv := g.Server(mux) // timeouts, header limit, mux behind the Guard
//	go srv.Serve(g.Listener(ln))
//
// What a client meets at each limit (Limits documents the defaults):
//
//   - Headers must arrive within HeaderTimeout; a larger header block
//     than MaxHeaderBytes gets 431. A keep-alive connection idle for
//     IdleTimeout is closed.
//   - A body must arrive within BodyTimeout, or after that at BodyMinRate
//     bytes a second on average since its request began: the connection
//     of a slower sender is cut (its read deadline passes; the handler sees
//     a read error and the connection is closed after its answer). The
//     deadline is lifted once the body is read, so a response stream (SSE)
//     lives as long as it needs.
//   - Past MaxConns open connections, ConnReserve more are accepted; their
//     requests get 503 with Retry-After and the connection is closed,
//     except the Exempt ones (health checks), which are served. The whole
//     exchange on a reserve connection must end within HeaderTimeout.
//     Past the reserve, a connection is closed as soon as it is accepted.
//   - A request whose body (Content-Length, or what a chunked body has
//     read so far) does not fit in MaxInflightBytes with the bodies
//     already admitted gets 503 with Retry-After. A body's share is given
//     back once it is read to its end or closed (or its handler returns),
//     so a stream does not hold it while it runs. A body larger than the
//     whole budget gets 413, without Retry-After: no retry can fit it.
//   - In loopback-only mode (listening on loopback, no public URL
//     elsewhere), or when AllowHosts are set, a write (any method but GET,
//     HEAD, OPTIONS) whose Host is not one of the server's names gets 421:
//     a page on another site that re-points its own name at 127.0.0.1 (DNS
//     rebinding) cannot write.
//   - A write carrying an Origin that is neither the server's own (http or
//     https on one of its names) nor in CORSOrigins gets 403: a browser's
//     cross-site "simple" POST is not acted upon. CORS headers are sent to
//     the listed origins only (exact match, Vary: Origin); their preflights
//     get 204, others' 403.
//
// Refusals are RFC 9457 application/problem+json (problem.Problem, with
// the problem.Type… types), or, for requests Options.JSONRPC selects, a JSON-RPC
// 2.0 error response with id null, code RPCCode(status) and the problem as
// its data.
//
// Limits are per server, not per client: a Guard does not tell one client
// from another (behind a proxy they all look alike), so a per-client quota
// belongs in front of it.
//
// # REST services
//
// The Guard is server-wide; an API is one service's share, so the registry,
// the memory service and the gate answer alike:
//
//   - Errors are RFC 9457 problems (problem.Problem, WriteProblem). The service
//     maps its own errors in one function, API.ProblemFor; the plumbing's
//     come as *problem.Problem values; anything else is a logged 500 whose detail
//     is never sent.
//   - Callers come from an Authenticator, applied by API.Handler to the
//     requests API.Protect selects; the Caller lands in the request's
//     context (CallerFrom). AdminRule is the operator's rule: the admin
//     token (constant-time compare) or, without one, loopback peers whose
//     Host names the server (NamesServer; reads too: a DNS-rebinding page
//     sends its own name).
//     The platform's execution tokens are another Authenticator, whose
//     verified claims ride in Caller.Claims. A refusal is 401 with a
//     Bearer challenge (ErrUnauthenticated) or 403 (ErrForbidden); neither
//     logs nor answers with what the request presented.
//   - Bodies are read by API.Decode (DecodeJSON): application/json only
//     (415), one JSON value within a size limit (413), unknown fields
//     refused unless the Body allows them (400 malformed-json).
//   - Listings page with opaque tokens (PageToken, ParsePageToken: the
//     key of the last record, one spelling each) and a Paging clamp.
//   - API.Route dispatches on the method (405 with Allow otherwise) and
//     API.NotFound answers a path no route serves.
package httpapi
