// Package rest is the request, retry and refusal plumbing of the SDK's REST clients.
//
// The clients of the platform's REST APIs (package gateway's, package
// heartbeat's) send their calls through a [Client]: it builds each
// request with the client's headers, tenant, bearer token and W3C trace
// context, bounds each attempt, retries per a [resilience.Policy] as the
// call's [Retry] allows, reads a bounded answer and turns a refusal, an
// RFC 9457 problem, into a [Refusal] with the token taken out, which the
// client package wraps in its own error type. Clients of other protocols
// (the OpenAI API, MCP) build their requests with [Client.NewRequest]
// only.
//
//	api := &rest.Client{Base: base, Token: tok, Timeout: 30 * time.Second,
//		Retry: &resilience.Policy{Attempts: 3, Breaker: resilience.NewBreaker(nil)},
//		Malformed: ErrProtocol, Refused: func(r *rest.Refusal) error { return &Error{Status: r.Status} }}
//	var run Run
//	err := api.Do(ctx, rest.Call{Method: http.MethodGet, Path: "/api/v1/runs/" + id, Retry: rest.RetryTransient}, &run)
//
// The package holds no state of its own; a Client's fields are set before
// its first call and not changed after.
package rest
